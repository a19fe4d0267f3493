"""Restore modes against real stores, written with the restore-scenario harness.

Every store (SQLite file, Kafka topic on the session broker, Fluss table) goes
through the same job life: inputs A run, a checkpoint is taken, inputs B finish
after it (so the journal holds them and the checkpoint does not), the job
fails, and the checkpoint is restored in one mode:

=================  ============================================================
same journal       B replays from the journal: nothing runs again
new journal        MarkerMismatchError naming the journals, before any key runs
recreated journal  StoreRecreatedError naming the journal, before any key runs
no store           B's actions and calls run again (durability off)
upgrade, new/same  B runs again once; later failures, also before the first new
                   checkpoint and also real SIGKILLs, replay the new journal
=================  ============================================================

Calls and action executions are counted by the scenario's HTTP service. Claims
about the restore mode use an in-process failure between steps
(``abandon``); claims about crashes kill a child process at a crash point.
"""

from __future__ import annotations

import logging

import pytest

from actionjournal import (
    Agent,
    Event,
    InputEvent,
    MarkerMismatchError,
    OutputEvent,
    StoreRecreatedError,
    action,
)
from actionjournal.testing.harness import RestoreMode, call_service, name_of, service_reconciler
from actionjournal.testing.service import CountingService

A = [("alice", 1), ("bob", 2), ("alice", 3)]
B = [("carol", 6), ("bob", 4), ("alice", 5)]  # finished after the checkpoint; carol: no marker
C = [("alice", 7), ("dave", 8), ("bob", 9)]
D = [("carol", 10)]
B_RUNS = {"charge": len(B), "ship": len(B)}

BACKENDS = [
    "aj_sqlite",
    pytest.param("aj_kafka", marks=pytest.mark.kafka),
    pytest.param("aj_fluss", marks=pytest.mark.fluss),
]


class Orders(Agent):
    """Charges an order, then ships it; both calls are reconciled, so a kill never repeats one."""

    uid = "orders"

    def __init__(self, url: str) -> None:
        self.url = url
        self.probe = service_reconciler(url)

    @action(InputEvent)
    def charge(self, event, ctx):
        order = event.input
        paid = ctx.durable_execute(call_service, self.url, "charge", order, reconciler=self.probe)
        seen = [*ctx.short_term_memory.get("orders", []), order]
        ctx.short_term_memory.set("orders", seen)
        ctx.send_event(Event("charged", {"order": order, "paid": paid, "seen": len(seen)}))

    @action("charged")
    async def ship(self, event, ctx):
        order = event.attributes["order"]
        shipped = await ctx.durable_execute_async(
            call_service, self.url, "ship", order, reconciler=self.probe
        )
        ctx.send_event(OutputEvent({"order": shipped, "seen": event.attributes["seen"]}))


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest):
    return request.getfixturevalue(request.param)


@pytest.fixture
def prepared(backend, restore_scenario):
    """A checkpoint after A; B finished after it; then the job failed (in-process)."""
    sc = restore_scenario(Orders, backend)
    sc.run(A)
    cp = sc.checkpoint()
    after = sc.run(B)
    assert after.calls == B_RUNS
    sc.abandon()
    return sc, cp, after


def by_id(outputs):
    return {o.id: (o.key, o.value) for o in outputs}


def test_same_journal_replays_what_finished_after_the_checkpoint(prepared):
    sc, cp, after = prepared
    step = sc.restore(cp, RestoreMode.SAME)
    assert step.calls == {} and step.actions == {}
    assert step.engine["actions_replayed"] == 2 * len(B)
    assert by_id(step.outputs) == by_id(after.outputs)  # same ids, same values, memory rebuilt


def test_same_journal_after_a_real_crash_runs_every_call_once(backend, restore_scenario):
    sc = restore_scenario(Orders, backend)
    sc.run(A)
    cp = sc.checkpoint()
    crashed = sc.crash(B, at="after:ActionCompleted:3")  # SIGKILL with B half done
    assert crashed.crashed and 0 < sum(crashed.actions.values()) < 2 * len(B) + 1
    step = sc.restore(cp)
    assert sc.calls() == {"charge": len(A) + len(B), "ship": len(A) + len(B)}
    assert sc.duplicates() == {}
    assert sorted(o.value["order"] for o in step.outputs) == [4, 5, 6]


def test_checkpoint_with_runs_in_flight_then_a_real_crash(backend, restore_scenario):
    inputs = [(f"k{i % 3}", i) for i in range(12)]
    with CountingService(delay=0.03) as slow:  # runs stay in flight while inputs arrive
        sc = restore_scenario(Orders, backend, service=slow)
        assert sc.crash(inputs, at="after:CallFinished:14", checkpoint_every=3).crashed
        cp = sc.last_checkpoint()
        assert cp.inputs_consumed == 12 and cp.pending > 0, cp
        step = sc.restore(cp)
        assert sc.calls() == {"charge": 12, "ship": 12}
        assert sc.duplicates() == {}
        assert step.engine["reconciled"] + step.engine["replayed"] > 0


def test_new_journal_is_refused_before_any_key_runs(prepared):
    sc, cp, _ = prepared
    with pytest.raises(MarkerMismatchError) as caught:
        sc.restore(cp, RestoreMode.NEW)
    message = str(caught.value)
    assert name_of(cp.journal) in message and name_of(sc.journal) in message
    assert "journal.upgrade='fresh'" in message
    # carol's input comes first and she has no marker: she must not run either
    assert sc.steps[-1].calls == {} and sc.steps[-1].actions == {}
    assert not sc.running


def test_recreated_journal_is_refused_before_any_key_runs(prepared):
    sc, cp, _ = prepared
    with pytest.raises(StoreRecreatedError) as caught:
        sc.restore(cp, RestoreMode.RECREATED)
    message = str(caught.value)
    assert name_of(cp.journal) in message and "deleted and recreated" in message
    assert sc.steps[-1].calls == {} and sc.steps[-1].actions == {}


def test_no_store_works_and_runs_the_actions_again(prepared):
    sc, cp, after = prepared
    step = sc.restore(cp, RestoreMode.NO_STORE)
    assert step.calls == B_RUNS and step.actions == B_RUNS
    assert by_id(step.outputs) == by_id(after.outputs)
    sc.abandon()  # durability is off: another failure runs them yet again
    assert sc.restore(cp).calls == B_RUNS


@pytest.mark.parametrize("mode", [RestoreMode.UPGRADE_NEW, RestoreMode.UPGRADE_SAME])
def test_upgrade_mode_then_later_failures_reuse_the_new_journal(prepared, mode, caplog):
    sc, cp, _ = prepared
    old = cp.journal
    with caplog.at_level(logging.WARNING, logger="actionjournal.operator.engine"):
        step = sc.restore(cp, mode)
    # The old journal is skipped: what it held after the checkpoint (B) runs again, once.
    assert step.calls == B_RUNS and step.actions == B_RUNS
    assert [r.getMessage() for r in caplog.records].count(caplog.records[0].getMessage()) == 1
    assert "upgrade mode" in caplog.records[0].getMessage() and len(caplog.records) == 1
    (audit,) = sc.audit_records()
    assert name_of(old) in audit.old_name
    assert audit.old_epoch == 0 and audit.epoch == sc.config.epoch
    if mode is RestoreMode.UPGRADE_NEW:
        assert sc.journal != old and sc.config.epoch == 0
    else:
        assert sc.journal == old and sc.config.epoch == 1

    # A failure before the first new checkpoint: the old checkpoint is restored again (upgrade
    # mode left on) and the new journal replays. Each restore that skips the old journal
    # audits it once.
    sc.abandon()
    assert sc.restore(cp).calls == {}
    assert len(sc.audit_records()) == 2
    # The same with a real SIGKILL halfway through new inputs.
    assert sc.crash(C, at="after:RunCompleted:1").crashed
    step = sc.restore(cp)
    assert step.actions["charge"] < len(B) + len(C)  # the new journal's finished runs replayed

    # After the first new checkpoint nothing runs again either.
    cp2 = sc.checkpoint()
    sc.run(D)
    sc.abandon()
    assert sc.restore(cp2).calls == {}

    total = len(A) + 2 * len(B) + len(C) + len(D)  # B twice: old journal, then the upgrade
    assert sc.calls() == {"charge": total, "ship": total}
    repeated = sc.duplicates()
    if mode is RestoreMode.UPGRADE_NEW:
        # Same epoch: the re-run calls kept their call ids (idempotency keys).
        assert sorted(repeated.values()) == [2] * (2 * len(B))
    else:
        assert repeated == {}  # a new epoch gives the re-run calls new ids
