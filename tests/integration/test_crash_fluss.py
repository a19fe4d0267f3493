"""The SIGKILL crash tests of test_crash_local, with the journal in a real Fluss table.

Same child process, windows and assertions as the SQLite and Kafka versions; the baseline is
the uninterrupted SQLite run, since outputs and memory must not depend on the store.
"""

from __future__ import annotations

import uuid

import pytest
from test_crash_local import (  # the SQLite crash test's driver and its baseline fixture
    CALLS_PER_INPUT,
    N_INPUTS,
    check_kill_and_restore,
    journaled_call_ids,
    run_child,
    uninterrupted,  # noqa: F401 - fixture
)

from actionjournal.testing.service import CountingService

pytest.importorskip("fluss")

from actionjournal.stores.fluss import FlussStore, FlussStoreConfig

pytestmark = [pytest.mark.slow, pytest.mark.fluss]

# The windows where the store matters: a record missing, a record kept, a run boundary.
FLUSS_WINDOWS = ["after a call, before its record", "after the call's record", "between runs"]


def open_table(bootstrap: str, table: str) -> FlussStore:
    config = FlussStoreConfig(bootstrap_servers=bootstrap, table=table, buckets=4)
    return FlussStore(config)


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", FLUSS_WINDOWS)
def test_killed_in_window_then_restored(
    window,
    reconcile,
    tmp_path,
    uninterrupted,  # noqa: F811 - the fixture imported above
    aj_fluss_bootstrap,
):
    table = f"crash_{uuid.uuid4().hex[:12]}"
    journal = ["--fluss", aj_fluss_bootstrap, "--table", table]
    check_kill_and_restore(
        tmp_path,
        uninterrupted,
        window,
        reconcile,
        lambda: open_table(aj_fluss_bootstrap, table),
        journal,
    )
    assert not (tmp_path / "journal.db").exists()  # the journal really was the table


def test_child_journal_is_in_fluss(tmp_path, aj_fluss_bootstrap) -> None:
    """Guard for the tests above: an uninterrupted Fluss run journals every call once."""
    table = f"crash_{uuid.uuid4().hex[:12]}"
    with CountingService() as service:
        done = run_child(tmp_path, service.url, "--fluss", aj_fluss_bootstrap, "--table", table)
        assert done.returncode == 0, done.stderr[-2000:]
    journaled = journaled_call_ids(open_table(aj_fluss_bootstrap, table))
    assert len(journaled) == N_INPUTS * CALLS_PER_INPUT
