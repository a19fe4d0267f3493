"""Upgrade mode skips an old journal explicitly; cleanup boundaries refuse stale state."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import pytest

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, action
from actionjournal.durable.errors import CleanupBoundaryError, MarkerMismatchError
from actionjournal.durable.records import CONTROL_KEY, CleanupBoundary, UpgradeSkipped
from actionjournal.stores import SqliteStore

CALLS: list[object] = []


def work(value):
    CALLS.append(value)
    return value


class Worker(Agent):
    uid = "worker"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(work, event.input)))


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def run(store, inputs, config=None, snapshot=None, save=None):
    async def go():
        if snapshot is not None:
            runner = LocalRunner.restore(snapshot, Worker(), store, config)
            runner.resume()
        else:
            runner = LocalRunner(Worker(), store, config)
        await runner.run(inputs)
        if save is not None:
            runner.snapshot(save)
        return runner

    return asyncio.run(go())


def audit_records(store):
    return [
        r
        for r in store.read_key("default", "worker", CONTROL_KEY, None)
        if isinstance(r, UpgradeSkipped)
    ]


def test_same_store_new_epoch_skips_the_old_journal_and_later_failures_reuse_the_new(
    tmp_path, caplog
):
    store = SqliteStore(tmp_path / "j.db")
    old = tmp_path / "old-savepoint"
    run(store, [("a", 1), ("b", 2)], save=old)
    run(store, [("a", 1), ("b", 2), ("a", 3)])  # old code went on after its savepoint
    assert CALLS == [1, 2, 3]

    upgrade = JournalConfig(epoch=1, upgrade="fresh")
    with caplog.at_level(logging.WARNING):
        run(store, [("a", 1), ("b", 2), ("a", 3)], upgrade, snapshot=old)
    assert CALLS == [1, 2, 3, 3]  # the old journal of input 3 is not replayed: it re-runs
    assert sum("upgrade mode" in r.message for r in caplog.records) == 1
    assert len(audit_records(store)) == 1

    # A failure before the first new checkpoint: the old savepoint is restored again.
    run(store, [("a", 1), ("b", 2), ("a", 3)], upgrade, snapshot=old)
    assert CALLS == [1, 2, 3, 3], "the new epoch's finished call ran again"


def test_new_store_in_upgrade_mode_starts_a_new_journal(tmp_path):
    old = tmp_path / "old-savepoint"
    run(SqliteStore(tmp_path / "old.db"), [("a", 1)], save=old)
    new_store = SqliteStore(tmp_path / "new.db")
    with pytest.raises(MarkerMismatchError, match=r"journal.upgrade='fresh'"):
        run(new_store, [("a", 1), ("a", 2)], snapshot=old)
    run(new_store, [("a", 1), ("a", 2)], JournalConfig(upgrade="fresh"), snapshot=old)
    run(new_store, [("a", 1), ("a", 2)], JournalConfig(upgrade="fresh"), snapshot=old)
    assert CALLS == [1, 2]
    audits = audit_records(new_store)  # one per restore that skipped the old journal
    assert len(audits) == 2
    assert all(a.old_name.endswith("old.db") and "configured store" in a.reason for a in audits)


def test_leaving_upgrade_mode_on_afterwards_is_harmless(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    old, new = tmp_path / "old", tmp_path / "new"
    run(store, [("a", 1)], save=old)
    upgrade = JournalConfig(epoch=1, upgrade="fresh")
    run(store, [("a", 1), ("a", 2)], upgrade, snapshot=old, save=new)
    run(store, [("a", 1), ("a", 2), ("a", 3)], upgrade, snapshot=new)
    run(store, [("a", 1), ("a", 2), ("a", 3)], upgrade, snapshot=new)
    assert CALLS == [1, 2, 3]
    assert len(audit_records(store)) == 1  # only the real upgrade was audited


def test_state_from_a_newer_epoch_is_refused(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    run(store, [("a", 1)], JournalConfig(epoch=2), save=tmp_path / "snap")
    with pytest.raises(MarkerMismatchError, match="newer than journal.epoch=1"):
        run(
            store,
            [("a", 1), ("a", 2)],
            JournalConfig(epoch=1, upgrade="fresh"),
            snapshot=tmp_path / "snap",
        )


def test_restoring_state_older_than_a_cleanup_boundary_fails_loudly(tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    old = tmp_path / "old"
    run(store, [("a", 1)], save=old)
    run(store, [("a", 1), ("a", 2)])
    db = sqlite3.connect(tmp_path / "j.db")
    (last,) = db.execute("SELECT MAX(pos) FROM journal").fetchone()
    boundary = CleanupBoundary(
        namespace="default",
        operator_uid="worker",
        epoch=0,
        key_id=CONTROL_KEY,
        seq=0,
        partition=0,
        position=last + 1,
        at=time.time(),
    )
    store.append(boundary)
    with db:
        db.execute("DELETE FROM journal WHERE pos <= ?", (last,))
    with pytest.raises(CleanupBoundaryError, match=r"position \d+, but cleanup deleted"):
        run(store, [("a", 1), ("a", 2)], snapshot=old)
    assert CALLS == [1, 2], "an action was silently re-run"
