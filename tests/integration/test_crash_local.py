"""SIGKILL the local runner in every window of a durable call's life, restore, compare.

Counts come from the called HTTP service; outputs and memory are compared with
an uninterrupted run of the same inputs.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
from collections import Counter
from pathlib import Path

import msgspec
import pytest

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import CallFinished
from actionjournal.operator.local import Snapshot
from actionjournal.testing.service import CountingService

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


def finished_call_ids(state: Path) -> set[str]:
    db = sqlite3.connect(state / "journal.db")
    codec = RecordCodec()
    records = [codec.decode(body) for (body,) in db.execute("SELECT body FROM journal")]
    db.close()
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


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", list(WINDOWS))
def test_killed_in_window_then_restored(window, reconcile, tmp_path, uninterrupted):
    flags = ["--reconcile"] if reconcile else []
    with CountingService() as service:
        crashed = run_child(tmp_path, service.url, "--crash", WINDOWS[window], *flags)
        assert crashed.returncode == -9, crashed.stderr[-2000:]
        # Calls that reached the service but whose outcome the journal does not hold:
        # killed in flight (other keys' calls run concurrently) or killed before the record.
        service.wait_idle()
        unrecorded = set(service.counts) - finished_call_ids(tmp_path)
        restored = run_child(tmp_path, service.url, *flags)
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
    assert outputs(tmp_path) == outputs(uninterrupted)
    assert final_memory(tmp_path) == final_memory(uninterrupted)
    report = json.loads(restored.stdout.strip().splitlines()[-1])
    if reconcile:
        assert report["reconciled"] == len(unrecorded)
