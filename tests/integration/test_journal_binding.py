"""A restore against another journal fails before any key runs (the job's journal binding).

Per-key recovery markers refuse a wrong journal only when a key that has one runs; keys
without a marker (a first input after the checkpoint, a first run in flight when it was
taken) ran their durable calls against the new journal first. Written with the
restore-scenario harness against real stores (SQLite file, Kafka topic on the session
broker, Fluss table); calls and action executions are counted by its HTTP service. The
same claims for PyFlink jobs are in tests/e2e/test_flink_binding.py.
"""

from __future__ import annotations

import logging

import pytest

from actionjournal import (
    Agent,
    InputEvent,
    JournalConfig,
    MarkerMismatchError,
    OutputEvent,
    StoreRecreatedError,
    action,
)
from actionjournal.testing.harness import RestoreMode, call_service, name_of
from actionjournal.testing.service import CountingService

BACKENDS = [
    "aj_sqlite",
    pytest.param("aj_kafka", marks=pytest.mark.kafka),
    pytest.param("aj_fluss", marks=pytest.mark.fluss),
]
REFUSED = {RestoreMode.NEW: MarkerMismatchError, RestoreMode.RECREATED: StoreRecreatedError}


class Charge(Agent):
    uid = "charge"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(ctx.durable_execute(call_service, self.url, "charge", event.input))
        )


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest):
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("mode", list(REFUSED))
def test_keys_without_a_marker_do_not_run_first(backend, restore_scenario, mode):
    sc = restore_scenario(Charge, backend)
    sc.run([("alice", 1), ("bob", 2)])
    cp = sc.checkpoint()
    sc.run([("carol", 3), ("dave", 4), ("alice", 5)])  # carol and dave: first input after it
    sc.abandon()
    with pytest.raises(REFUSED[mode], match="journal.upgrade='fresh'"):
        sc.restore(cp, mode)
    assert sc.steps[-1].calls == {} and sc.steps[-1].actions == {}
    assert sc.calls() == {"charge": 5}


@pytest.mark.parametrize("mode", list(REFUSED))
def test_runs_in_flight_without_a_marker_do_not_run_again(backend, restore_scenario, mode):
    with CountingService(delay=0.3) as slow:  # every first run is in flight at the checkpoint
        sc = restore_scenario(Charge, backend, service=slow)
        sc.run([(f"k{i}", i) for i in range(4)], checkpoint_every=4)
        cp = sc.last_checkpoint()
        assert cp.pending == 4 and cp.markers() == {}, cp
        sc.abandon()
        with pytest.raises(REFUSED[mode]):
            sc.restore(cp, mode)
        assert sc.steps[-1].calls == {}
        assert sc.calls() == {"charge": 4}


def test_another_namespace_of_the_same_journal_is_refused(backend, restore_scenario, caplog):
    """Markers do not name their namespace: without the binding, every key ran again."""
    sc = restore_scenario(Charge, backend)
    sc.run([("alice", 1), ("bob", 2)])
    cp = sc.checkpoint()
    sc.run([("carol", 3), ("alice", 4)])
    sc.abandon()
    other = JournalConfig(namespace="other")
    with pytest.raises(MarkerMismatchError) as caught:
        sc.restore(cp, config=other)
    message = str(caught.value)
    assert "namespace 'default'" in message and "journal.namespace is 'other'" in message
    assert name_of(cp.journal) in message and "journal.namespace='default'" in message
    assert sc.steps[-1].calls == {} and sc.steps[-1].actions == {}
    assert sc.restore(cp, config=JournalConfig()).calls == {}  # the right one replays
    sc.abandon()
    with caplog.at_level(logging.WARNING):  # upgrade mode: namespace 'other' starts over
        step = sc.restore(cp, config=other.model_copy(update={"upgrade": "fresh"}))
    assert step.calls == {"charge": 2}
    (audit,) = sc.audit_records()
    assert "namespace 'default'" in audit.reason
    assert sc.calls() == {"charge": 6}


def test_upgrade_mode_skips_the_old_journal_once(backend, restore_scenario, caplog):
    sc = restore_scenario(Charge, backend)
    sc.run([("alice", 1), ("bob", 2)])
    cp = sc.checkpoint()
    old = name_of(cp.journal)
    sc.run([("carol", 3), ("dave", 4), ("alice", 5)])
    sc.abandon()
    with caplog.at_level(logging.WARNING):
        step = sc.restore(cp, RestoreMode.UPGRADE_NEW)
    assert step.calls == {"charge": 3}  # what the old journal held after the checkpoint
    lines = [r.getMessage() for r in caplog.records if "upgrade mode" in r.getMessage()]
    assert len(lines) == 1 and old in lines[0]
    (audit,) = sc.audit_records()
    assert old in audit.old_name
    sc.abandon()  # a failure before the first new checkpoint: the new journal replays
    assert sc.restore(cp).calls == {}
    assert sc.calls() == {"charge": 8}
