"""The SIGKILL crash tests of test_crash_local, with the journal in a real Fluss table.

Same child process, windows and assertions as the SQLite and Kafka versions; the baseline is
the uninterrupted SQLite run, since outputs and memory must not depend on the store.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter

import pytest
from test_crash_local import (  # the SQLite crash test's driver and its baseline fixture
    CALLS_PER_INPUT,
    N_INPUTS,
    WINDOWS,
    final_memory,
    outputs,
    run_child,
    uninterrupted,  # noqa: F401 - fixture
)

from actionjournal.durable.records import CallFinished
from actionjournal.operator.engine import AgentEngine
from actionjournal.testing.service import CountingService

pytest.importorskip("fluss")

from actionjournal.stores.fluss import FlussActionStateStore, FlussStoreConfig

pytestmark = [pytest.mark.slow, pytest.mark.fluss]

# The windows where the store matters: a record missing, a record kept, a run boundary.
FLUSS_WINDOWS = ["after a call, before its record", "after the call's record", "between runs"]


def journaled_calls(bootstrap: str, table: str) -> set[str]:
    """Call ids whose outcome the table holds, read back through the store as recovery does."""
    config = FlussStoreConfig(bootstrap_servers=bootstrap, table=table, buckets=4)
    store = FlussActionStateStore(config)
    try:
        keys = {AgentEngine.key_id(f"user_{i % 3}") for i in range(N_INPUTS)}  # crash_agent's
        records = [r for key in keys for r in store.read_key("default", "triage", key, None)]
    finally:
        store.close()
    return {r.call_id for r in records if isinstance(r, CallFinished)}


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", FLUSS_WINDOWS)
def test_killed_in_window_then_restored(
    window,
    reconcile,
    tmp_path,
    uninterrupted,  # noqa: F811 - the fixture imported above
    fluss_bootstrap,
):
    journal = ["--fluss", fluss_bootstrap, "--table", f"crash_{uuid.uuid4().hex[:12]}"]
    flags = ["--reconcile"] if reconcile else []
    with CountingService() as service:
        crashed = run_child(tmp_path, service.url, "--crash", WINDOWS[window], *flags, *journal)
        assert crashed.returncode == -9, crashed.stderr[-2000:]
        service.wait_idle()
        unrecorded = set(service.counts) - journaled_calls(fluss_bootstrap, journal[-1])
        restored = run_child(tmp_path, service.url, *flags, *journal)
        assert restored.returncode == 0, restored.stderr[-2000:]
        counts = dict(service.counts)
    assert not (tmp_path / "journal.db").exists()  # the journal really was the table
    assert len(counts) == N_INPUTS * CALLS_PER_INPUT
    if window == "after a call, before its record":
        assert unrecorded, "the crash did not hit the window"
    if reconcile:
        assert Counter(counts.values()) == {1: len(counts)}
        assert json.loads(restored.stdout.splitlines()[-1])["reconciled"] == len(unrecorded)
    else:
        assert {c for c, n in counts.items() if n == 2} == unrecorded
        assert max(counts.values()) <= 2
    assert outputs(tmp_path) == outputs(uninterrupted)
    assert final_memory(tmp_path) == final_memory(uninterrupted)


def test_child_journal_is_in_fluss(tmp_path, fluss_bootstrap) -> None:
    """Guard for the tests above: an uninterrupted Fluss run journals every call once."""
    table = f"crash_{uuid.uuid4().hex[:12]}"
    with CountingService() as service:
        done = run_child(tmp_path, service.url, "--fluss", fluss_bootstrap, "--table", table)
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(journaled_calls(fluss_bootstrap, table)) == N_INPUTS * CALLS_PER_INPUT
