"""Durable calls across real crashes: a child process journals calls and SIGKILLs itself, a
second process restores from the same journal. Executions are counted by the called service.

The child is tests/calls_child.py; each test names the issue item it covers (issue 14).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from actionjournal.testing.service import CountingService

CHILD = Path(__file__).parent.parent / "calls_child.py"

pytestmark = pytest.mark.slow


def child(
    scenario: str, state: Path, url: str, *extra: str, seed: str = "0"
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), scenario, str(state), url, *extra],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONHASHSEED": seed},
    )


def crash(scenario: str, state: Path, url: str, point: str, *extra: str, seed: str = "0") -> None:
    done = child(scenario, state, url, "--crash", point, *extra, seed=seed)
    assert done.returncode == -9, done.stdout[-2000:] + done.stderr[-3000:]


def report(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_set_iteration_order_differs_between_the_seeds_used():
    """The seeds below order the child's sets differently, so the next test can fail."""
    code = "print(list(frozenset({'x', 'y', 'ada', 'bob', 'cy', 'dee', 'eve'})))"
    orders = {
        subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2", "3")
    }
    assert len(orders) == 3


def test_identities_of_sets_and_dicts_survive_a_restart_under_another_hash_seed(tmp_path):
    """Item 2: inputs, event attributes and arguments with sets, frozensets of mixed types
    and dicts built by iterating a set. Killed under PYTHONHASHSEED=1 after the 3rd call's
    record, restored under PYTHONHASHSEED=2: no call runs twice, outputs keep their ids."""
    with CountingService() as service:
        crash("tags", tmp_path / "a", service.url, "after:CallFinished:3", seed="1")
        service.wait_idle()
        assert service.executions() == 3
        restored = report(child("tags", tmp_path / "a", service.url, seed="2"))
        counts = dict(service.counts)
        baseline = report(child("tags", tmp_path / "b", service.url, seed="3"))
    assert restored["error"] is None, restored["error"]
    assert len(counts) == 6 and set(counts.values()) == {1}  # 3 runs x (tag, store), once each
    assert restored["outputs"] == baseline["outputs"] and len(baseline["outputs"]) == 3


def test_a_changed_partial_argument_is_a_divergence_not_a_replay(tmp_path):
    """Item 3: ``partial(charge, url, "o-1")`` journaled, killed, then the process restarts
    with ``partial(charge, url, "o-2")``: the recorded o-1 result must not answer it."""
    with CountingService() as service:
        crash("partial", tmp_path, service.url, "after:CallFinished:1", "--variant", "o-1")
        changed = report(child("partial", tmp_path, service.url, "--variant", "o-2"))
        assert service.calls_by_name() == {"o-1": 1}
        same = report(child("partial", tmp_path, service.url, "--variant", "o-1"))
        by_name = service.calls_by_name()
    assert changed["outputs"] == {}
    assert changed["error"]["type"] == "DivergenceError", changed["error"]
    assert "#0" in changed["error"]["message"]
    assert same["error"] is None
    assert list(same["outputs"].values()) == [{"order": "o-1", "paid": 10}]
    assert by_name == {"o-1": 1, "notify": 1}


COMBINATIONS = [
    f"{action}-{call}-{reconciler}"
    for action in ("sync", "async")
    for call in ("sync", "async")
    for reconciler in ("sync", "async")
] + ["sync-sync-zero", "async-async-zero"]


@pytest.mark.parametrize("variant", COMBINATIONS)
def test_reconcilers_settle_an_unknown_call_in_every_combination(variant, tmp_path):
    """Items 12 and 13: ``<action>-<call>-<reconciler>``, each sync or async (an async action
    makes a blocking call in a worker thread; a sync action runs an awaited call on a loop of
    its own), and Flink Agents' zero-argument form. Killed after the service ran the call but
    before its outcome was journaled; on restore the reconciler answers StillRunning, then
    Recovered. A blocking reconciler never runs on an event loop; an async one runs on the
    loop its call runs on (the agent's)."""
    action, call, reconciler = variant.split("-")
    with CountingService() as service:
        crash("reconcile", tmp_path, service.url, "before:CallFinished:1", "--variant", variant)
        service.wait_idle()
        assert service.executions() == 1
        restored = report(child("reconcile", tmp_path, service.url, "--variant", variant))
        executions = service.executions()
    assert restored["error"] is None, restored["error"]
    assert list(restored["outputs"].values()) == ["o-1"]
    assert executions == 1
    loop = "none"
    if reconciler == "async":
        loop = "other" if (action, call) == ("sync", "async") else "main"
    assert restored["seen"] == [{"kind": reconciler, "loop": loop}] * 2


def test_a_call_the_action_cancelled_replays_as_cancelled_after_a_crash(tmp_path):
    """Item 14: an async action cancels one of its calls (``on_unknown="fail"``) and goes on;
    killed before its next call. The restored action sees the call cancelled again, no
    UnknownOutcomeError, and finishes; the cancelled call never reached the service."""
    with CountingService() as service:
        crash("cancel", tmp_path, service.url, "before:CallStarted:3")
        restored = report(child("cancel", tmp_path, service.url))
        counts = dict(service.counts)
    assert restored["error"] is None, restored["error"]
    assert list(restored["outputs"].values()) == [
        {"first": "first", "slow": "cancelled", "last": "last"}
    ]
    assert len(counts) == 2 and set(counts.values()) == {1}  # first and last, once each
