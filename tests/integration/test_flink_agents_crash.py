"""Upstream-style scripts (actionjournal.flink_agents imports) SIGKILLed and run again on
their journal (issue 18): counts come from the called services."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.service import CountingService
from tests.porting_agents import TOOL_PLAN

CHILD = Path(__file__).parent.parent / "porting_child.py"

pytestmark = pytest.mark.slow


def child(journal: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(journal), *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


def outputs(done: subprocess.CompletedProcess[str]) -> list:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


RECEIPTS = [{f"customer-{i}": {"order": f"o-{i}", "charged": 10 * i}} for i in (1, 2, 3)]


def test_a_zero_argument_reconciler_settles_the_call_cut_off_by_a_sigkill(tmp_path):
    journal = tmp_path / "journal.db"
    with CountingService() as service:
        killed = child(journal, "payments", service.url, "--kill-after-charge", "o-2")
        assert killed.returncode == -9, killed.stderr[-3000:]
        service.wait_idle()
        assert service.counts == {"charge-o-1": 1, "charge-o-2": 1}  # o-2 charged, not journaled
        assert outputs(child(journal, "payments", service.url)) == RECEIPTS
        assert service.counts == {"charge-o-1": 1, "charge-o-2": 1, "charge-o-3": 1}


def test_without_the_reconciler_the_cut_off_charge_runs_again(tmp_path):
    """The control: what the reconciler prevents (upstream without one re-runs too)."""
    journal = tmp_path / "journal.db"
    with CountingService() as service:
        flags = ["--no-reconciler"]
        killed = child(journal, "payments", service.url, "--kill-after-charge", "o-2", *flags)
        assert killed.returncode == -9, killed.stderr[-3000:]
        service.wait_idle()
        assert outputs(child(journal, "payments", service.url, *flags)) == RECEIPTS
        assert service.counts == {"charge-o-1": 1, "charge-o-2": 2, "charge-o-3": 1}


@pytest.mark.parametrize("protocol", ["ollama", "openai"])
def test_a_react_agent_killed_between_two_tool_calls_repeats_neither_call_nor_question(
    tmp_path, protocol
):
    journal = tmp_path / "journal.db"
    with ModelServer(tool_calls={"support": TOOL_PLAN}) as server, CountingService() as tools:
        urls = [server.url, tools.url, protocol]
        killed = child(journal, "support", *urls, "--kill-at", "refund")
        assert killed.returncode == -9, killed.stderr[-3000:]
        tools.wait_idle()
        assert tools.calls_by_name() == {"lookup_order": 1}  # the first call, journaled
        assert server.count() == 1
        (out,) = outputs(child(journal, "support", *urls))
        assert out["customer-1"].startswith("[support] reply")
        assert tools.calls_by_name() == {"lookup_order": 1, "refund": 1}
        assert server.count() == 2 and not server.repeated()


BUDGET_PLAN = [  # a model that would go on asking for tools for ten rounds
    [{"name": "lookup_order", "arguments": {"order_id": "o-1"}}],
    [{"name": "refund", "arguments": {"order_id": "o-1", "amount": 30}}],
    *[[{"name": "lookup_order", "arguments": {"order_id": "o-1"}}]] * 8,
]


@pytest.mark.parametrize("ending", ["stop", "final_round"])
def test_a_loop_budget_survives_a_sigkill_and_the_restart_spends_only_what_was_left(
    tmp_path, ending
):
    """Budget: 3 rounds. The first process is SIGKILLed in round 2's tool call (2 questions
    asked); the restart replays them and asks only round 3 (and the wrap-up): never more
    questions across both processes than the budget, no question asked twice."""
    journal = tmp_path / "journal.db"
    budget = ["--budget-rounds", "3", *(["--final-round"] if ending == "final_round" else [])]
    with ModelServer(tool_calls={"support": BUDGET_PLAN}) as server, CountingService() as tools:
        urls = [server.url, tools.url, "ollama"]
        killed = child(journal, "support", *urls, "--kill-at", "refund", *budget)
        assert killed.returncode == -9, killed.stderr[-3000:]
        assert server.count() == 2 and tools.calls_by_name() == {"lookup_order": 1}
        (out,) = outputs(child(journal, "support", *urls, *budget))
        asked = 3 + (ending == "final_round")
        assert server.count() == asked and not server.repeated()
        assert tools.calls_by_name() == {"lookup_order": 2, "refund": 1}
        if ending == "final_round":
            assert "exhausted (rounds)" in server.requests[-1].prompt
        assert outputs(child(journal, "support", *urls, *budget)) == [out]  # all replayed
        assert server.count() == asked and tools.executions() == 3
