"""SIGKILL the local runner in every window of a durable call's life, restore, compare.

Counts come from the called HTTP service; outputs and memory are compared with
an uninterrupted run of the same inputs.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import msgspec
import pytest

from actionjournal.durable.records import CallFinished
from actionjournal.operator.engine import AgentEngine
from actionjournal.operator.local import Snapshot
from actionjournal.stores import SqliteStore
from actionjournal.testing.service import CountingService
from actionjournal.tools.demo import tickets

CHILD = Path(__file__).parent.parent / "crash_agent.py"
N_INPUTS = 12
CALLS_PER_INPUT = 3

pytestmark = pytest.mark.slow


def run_child(state: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(state), url, str(N_INPUTS), *extra],
        capture_output=True,
        text=True,
        timeout=120,
    )


def outputs(state: Path) -> dict[str, object]:
    lines = (state / "outputs.jsonl").read_text().splitlines()
    return {event_id: out for _, event_id, out in map(json.loads, lines)}


def journaled_call_ids(store) -> set[str]:
    """Call ids whose outcome the journal holds, read back through the store as recovery does.

    Closes ``store``.
    """
    keys = {AgentEngine.key_id(key) for key, _ in tickets(N_INPUTS)}
    try:
        records = [r for key in keys for r in store.read_key("default", "triage", key, None)]
    finally:
        store.close()
    return {r.call_id for r in records if isinstance(r, CallFinished)}


def final_memory(state: Path) -> dict[str, bytes | None]:
    snap = msgspec.msgpack.decode((state / "final").read_bytes(), type=Snapshot)
    return {k.key_id: k.state.memory for k in snap.keys}


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory: pytest.TempPathFactory) -> Path:
    state = tmp_path_factory.mktemp("baseline")
    with CountingService() as service:
        assert run_child(state, service.url).returncode == 0
        assert sorted(service.counts.values()) == [1] * (N_INPUTS * CALLS_PER_INPUT)
    return state


WINDOWS = {
    "before a call": "call:5",
    "after a call, before its record": "before:CallFinished:5",
    "after the call's record": "after:CallFinished:5",
    "after ActionCompleted": "after:ActionCompleted:4",
    "between runs": "after:RunCompleted:3",
}


def check_kill_and_restore(
    state: Path,
    baseline: Path,
    window: str,
    reconcile: bool,
    open_store: Callable[[], Any],
    journal: Sequence[str] = (),
) -> None:
    """Kill the child in ``window``, restore it, and compare with the uninterrupted run.

    ``journal`` selects the child's store (e.g. ``--kafka B --topic T``); ``open_store``
    opens the same journal here, to see which calls had their outcome recorded.
    """
    flags = ["--reconcile"] if reconcile else []
    with CountingService() as service:
        crashed = run_child(state, service.url, "--crash", WINDOWS[window], *flags, *journal)
        assert crashed.returncode == -9, crashed.stderr[-2000:]
        # Calls that reached the service but whose outcome the journal does not hold:
        # killed in flight (other keys' calls run concurrently) or killed before the record.
        service.wait_idle()
        unrecorded = set(service.counts) - journaled_call_ids(open_store())
        restored = run_child(state, service.url, *flags, *journal)
        assert restored.returncode == 0, restored.stderr[-2000:]
        counts = dict(service.counts)
    assert len(counts) == N_INPUTS * CALLS_PER_INPUT
    if window == "after a call, before its record":
        assert unrecorded, "the crash did not hit the window"
    if reconcile:
        # The reconciler asks the service instead of re-running: nothing ran twice.
        assert Counter(counts.values()) == {1: len(counts)}
    else:
        # Recorded calls ran exactly once; unrecorded ones follow policy "rerun": twice.
        assert {c for c, n in counts.items() if n == 2} == unrecorded
        assert max(counts.values()) <= 2
    assert outputs(state) == outputs(baseline)
    assert final_memory(state) == final_memory(baseline)
    report = json.loads(restored.stdout.strip().splitlines()[-1])
    if reconcile:
        assert report["reconciled"] == len(unrecorded)


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", list(WINDOWS))
def test_killed_in_window_then_restored(window, reconcile, tmp_path, uninterrupted):
    check_kill_and_restore(
        tmp_path, uninterrupted, window, reconcile, lambda: SqliteStore(tmp_path / "journal.db")
    )
