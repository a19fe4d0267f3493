"""Upgrade mode skips an old journal explicitly; cleanup boundaries refuse stale state.

Written with the restore-scenario harness on SQLite (in-process steps): calls
and action executions are counted by the scenario's HTTP service.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import time

import pytest

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, action
from actionjournal.durable.errors import CleanupBoundaryError, MarkerMismatchError
from actionjournal.durable.records import CONTROL_KEY, CleanupBoundary
from actionjournal.stores import SqliteStore
from actionjournal.testing.harness import RestoreMode, call_service, name_of


class Worker(Agent):
    uid = "worker"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(ctx.durable_execute(call_service, self.url, "work", event.input))
        )


@pytest.fixture
def scenario(restore_scenario, aj_sqlite):
    return restore_scenario(Worker, aj_sqlite)


def upgrade_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "upgrade mode" in r.getMessage()]


def test_same_store_new_epoch_skips_the_old_journal_and_later_failures_reuse_the_new(
    scenario, caplog
):
    scenario.run([("a", 1), ("b", 2)])
    old = scenario.checkpoint()
    scenario.run([("a", 3)])  # old code went on after its savepoint
    scenario.abandon()

    with caplog.at_level(logging.WARNING):
        step = scenario.restore(old, RestoreMode.UPGRADE_SAME)
    assert scenario.config.epoch == 1 and scenario.config.upgrade == "fresh"
    assert step.calls == {"work": 1}  # the old journal of input 3 is not replayed: it re-runs
    (line,) = upgrade_lines(caplog)
    (audit,) = scenario.audit_records()
    # They say what was skipped, not advice to set what is already set (journal.upgrade).
    assert "journal epoch 0 but journal.epoch is 1" in line and "journal.upgrade" not in line
    assert audit.reason == "the restored state is from journal epoch 0 but journal.epoch is 1"

    # A failure before the first new checkpoint: the old savepoint is restored again.
    scenario.abandon()
    assert scenario.restore(old).calls == {}, "the new epoch's finished call ran again"
    assert scenario.calls() == {"work": 4}


def test_new_store_in_upgrade_mode_starts_a_new_journal(scenario):
    scenario.run([("a", 1)])
    old = scenario.checkpoint()
    old_journal = scenario.journal
    scenario.abandon()
    with pytest.raises(MarkerMismatchError, match=r"journal.upgrade='fresh'"):
        scenario.restore(old, RestoreMode.NEW, inputs=[("a", 2)])
    step = scenario.restore(old, RestoreMode.UPGRADE_NEW)
    assert step.calls == {"work": 1}
    scenario.abandon()
    assert scenario.restore(old).calls == {}
    assert scenario.calls() == {"work": 2}
    audits = scenario.audit_records()  # one per restore that skipped the old journal
    assert len(audits) == 2
    assert all(a.old_name == name_of(old_journal) for a in audits)
    assert all("configured store" in a.reason for a in audits)
    assert not any("journal.upgrade" in a.reason for a in audits)


def test_leaving_upgrade_mode_on_afterwards_is_harmless(scenario):
    scenario.run([("a", 1)])
    old = scenario.checkpoint()
    scenario.abandon()
    scenario.restore(old, RestoreMode.UPGRADE_SAME, inputs=[("a", 2)])
    new = scenario.checkpoint()
    scenario.run([("a", 3)])
    scenario.abandon()
    assert scenario.config.upgrade == "fresh"
    assert scenario.restore(new).calls == {}
    scenario.abandon()
    assert scenario.restore(new).calls == {}
    assert scenario.calls() == {"work": 3}
    assert len(scenario.audit_records()) == 1  # only the real upgrade was audited


def test_state_from_a_newer_epoch_is_refused(restore_scenario, aj_sqlite):
    scenario = restore_scenario(Worker, aj_sqlite, config=JournalConfig(epoch=2))
    scenario.run([("a", 1)])
    snap = scenario.checkpoint()
    scenario.abandon()
    with pytest.raises(MarkerMismatchError, match="newer than journal.epoch=1"):
        scenario.restore(snap, config=JournalConfig(epoch=1, upgrade="fresh"), inputs=[("a", 2)])


def test_restoring_state_older_than_a_cleanup_boundary_fails_loudly(scenario, aj_sqlite):
    scenario.run([("a", 1)])
    old = scenario.checkpoint()
    scenario.run([("a", 2)])
    scenario.abandon()
    path = scenario.journal.path
    db = sqlite3.connect(path)
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
    store = SqliteStore(path, scenario.config.record_codec())
    store.append(boundary)
    store.close()
    with db:
        db.execute("DELETE FROM journal WHERE pos <= ?", (last,))
    # The cleanup's time with its UTC offset: a time read in another zone means the same.
    when = r"at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}[+-]\d\d:\d\d\. Restore"
    with pytest.raises(CleanupBoundaryError, match=rf"position \d+, but cleanup deleted .* {when}"):
        scenario.restore(old)
    assert scenario.calls() == {"work": 2}, "an action was silently re-run"


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    def handle(self, event, ctx):
        pass


def run_echo(store, config, source, restore=None, save=None) -> LocalRunner:
    """A LocalRunner of :class:`Echo` (restored from ``restore``) fed ``source``, the whole
    input stream from its start; snapshotted to ``save`` at the end."""

    async def go() -> LocalRunner:
        runner = (
            LocalRunner.restore(restore, Echo(), store, config)
            if restore
            else LocalRunner(Echo(), store, config)
        )
        await runner.run_source(source)
        if save:
            runner.snapshot(save)
        return runner

    return asyncio.run(go())


def test_a_fully_replayed_run_moves_the_marker_into_the_new_journal(tmp_path):
    """After an upgrade, a key whose runs all replay must not keep the skipped marker."""
    old_store, new_store = SqliteStore(tmp_path / "old.db"), SqliteStore(tmp_path / "new.db")
    upgrade = JournalConfig(upgrade="fresh")
    run_echo(old_store, None, [("k", 1)], save=tmp_path / "old")
    run_echo(new_store, upgrade, [("k", 1), ("k", 2)], restore=tmp_path / "old")
    # A failure before the first new checkpoint: the old state again, run 2 fully replays.
    runner = run_echo(new_store, upgrade, [("k", 1), ("k", 2)], restore=tmp_path / "old")
    [(_, state)] = runner.states.values()
    assert runner.engine.marker_of(state).store == new_store.identity


def test_a_marker_from_before_an_upgrade_is_refused_naming_its_journal_two_snapshots_later(
    tmp_path,
):
    # Keys keep a short reference to their journal, which the snapshot names once: it must
    # keep naming the old journal after the upgrade, for keys that have not run since.
    old_store, new_store = SqliteStore(tmp_path / "old.db"), SqliteStore(tmp_path / "new.db")
    upgrade, source = JournalConfig(upgrade="fresh"), [("a", 1), ("b", 1), ("b", 2)]
    run_echo(old_store, None, source[:2], save=tmp_path / "old")
    run_echo(new_store, upgrade, source, restore=tmp_path / "old", save=tmp_path / "new")
    run_echo(new_store, upgrade, [*source, ("a", 2)], restore=tmp_path / "new")  # skipped again
    with pytest.raises(MarkerMismatchError, match=f"references sqlite journal '{old_store.path}'"):
        run_echo(new_store, None, [*source, ("a", 3)], restore=tmp_path / "new")
