"""Timers and signals on the local runner (issue 34): what fires, when, how often, and what
a restore keeps. The clock is a ManualClock: nothing here sleeps. SIGKILLs of a real
process are in tests/integration/test_crash_timers.py, Flink in tests/e2e/test_flink_timers.py.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from actionjournal import (
    ActionFailedError,
    Agent,
    ContextClosedError,
    Event,
    InputEvent,
    LocalRunner,
    OutputEvent,
    SignalInput,
    SignalReceived,
    SignalTimedOut,
    action,
)
from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.records import ActionCompleted, RunInput
from actionjournal.durable.waits import Signal
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.operator.sequence import REDELIVERY_WAIT_S
from actionjournal.stores import SqliteStore
from actionjournal.testing import ManualClock
from tests.timer_agents import CALLS, Waiter

HOUR = 3600.0


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


@pytest.fixture
def store(tmp_path):
    store = SqliteStore(tmp_path / "journal.db")
    yield store
    store.close()


def outputs(runner: LocalRunner) -> list[dict]:
    return [event.output for _, event in runner.outputs]


def run(runner: LocalRunner, *inputs: tuple) -> list[dict]:
    """Submit ``inputs``, drain, and return the outputs they added."""
    before = len(runner.outputs)

    async def go() -> None:
        for key, value in inputs:
            runner.submit(key, value)
        await runner.drain()

    asyncio.run(go())
    return [event.output for _, event in runner.outputs[before:]]


def drained(runner: LocalRunner) -> list[dict]:
    return run(runner)


def records(store, key: str = "k") -> list:
    return store.read_key("default", "waiter", _kid(key), None)


def _kid(key: str) -> str:
    return AgentEngine.key_id(key)


def fired(outs: list[dict]) -> list[int]:
    return [o["fired"] for o in outs if "fired" in o]


# -- timers ------------------------------------------------------------------------------------


def test_a_timer_fires_once_when_due_and_not_before(store):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (scheduled,) = run(runner, ("k", {"op": "schedule", "n": 1, "delay": HOUR}))
    assert [t.id for t in runner.timers["k"]] == [scheduled["scheduled"]]
    clock.advance(HOUR - 1)
    assert drained(runner) == []
    clock.advance(1)
    assert fired(drained(runner)) == [1]
    clock.advance(10 * HOUR)
    assert drained(runner) == []
    assert CALLS == {"fired-1": 1}
    assert runner.timers == {}
    assert runner.metrics.value("actionjournal_timers_total", event="fired") == 1
    assert runner.metrics.value("actionjournal_timers_total", event="scheduled") == 1


def test_due_times_are_journaled_absolute_and_due_order_is_kept(store):
    clock = ManualClock(datetime(2030, 1, 1, tzinfo=UTC))
    runner = LocalRunner(Waiter(), store, clock=clock)
    run(
        runner,
        *[("k", {"op": "schedule", "n": n, "delay": d}) for n, d in [(1, 30), (2, 10), (3, 20)]],
    )
    completed = [r for r in records(store) if isinstance(r, ActionCompleted)]
    dues = [op.due for r in completed for op in r.waits]
    start = datetime(2030, 1, 1, tzinfo=UTC).timestamp()
    assert dues == [start + 30, start + 10, start + 20]
    clock.advance(60)
    assert fired(drained(runner)) == [2, 3, 1]


def test_a_named_timer_scheduled_again_replaces_the_pending_one(store):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    first = run(runner, ("k", {"op": "schedule", "n": 1, "delay": 10, "id": "followup"}))
    second = run(runner, ("k", {"op": "schedule", "n": 2, "delay": 20, "id": "followup"}))
    assert first[0]["scheduled"] == second[0]["scheduled"] == "followup"
    assert [(t.id, t.due) for t in runner.timers["k"]] == [("followup", clock() + 20)]
    clock.advance(30)
    assert fired(drained(runner)) == [2]


SCHEDULE_IN_A_CHILD = """
import asyncio, sys
from actionjournal import LocalRunner
from actionjournal.stores import MemoryStore
from tests.timer_agents import Waiter
runner = LocalRunner(Waiter(), MemoryStore())
asyncio.run(runner.run([("k", {"op": "schedule", "n": 1, "delay": 5})] * 2))
print(" ".join(event.output["scheduled"] for _, event in runner.outputs))
"""


def test_derived_ids_are_the_same_in_every_process_and_differ_per_run(store):
    """Ids come from the run, the action and the request's position, never a process hash."""
    runner = LocalRunner(Waiter(), store, clock=ManualClock())
    here = [
        o["scheduled"] for o in run(runner, *[("k", {"op": "schedule", "n": 1, "delay": 5})] * 2)
    ]
    child = subprocess.run(
        [sys.executable, "-c", SCHEDULE_IN_A_CHILD],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
        cwd=Path(__file__).resolve().parents[2],
    )
    assert child.returncode == 0, child.stderr
    assert child.stdout.split() == here and here[0] != here[1]


def test_cancel_removes_the_timer_and_says_whether_it_was_pending(store):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (scheduled,) = run(runner, ("k", {"op": "schedule", "n": 1, "delay": 10}))
    tid = scheduled["scheduled"]
    assert run(runner, ("k", {"op": "cancel", "id": tid})) == [{"cancelled": True}]
    assert run(runner, ("k", {"op": "cancel", "id": tid})) == [{"cancelled": False}]
    clock.advance(HOUR)
    assert drained(runner) == [] and CALLS == {}
    assert runner.timers == {}


class SlowCanceller(Agent):
    """Its second input waits for a gate, then cancels the timer the first scheduled."""

    uid = "waiter"
    gate: asyncio.Event

    @action(InputEvent)
    async def start(self, event, ctx):
        if event.input == "schedule":
            ctx.send_event(OutputEvent(ctx.schedule_event(Event("ping", {"n": 1}), delay=10)))
        else:
            await self.gate.wait()
            ctx.send_event(OutputEvent({"cancelled": ctx.cancel_timer(event.input)}))

    @action("ping")
    def ping(self, event, ctx):
        ctx.send_event(OutputEvent("fired"))


def test_a_timer_cancelled_by_a_run_ahead_of_its_own_run_does_not_run(store):
    """Cancel must really remove the timer: here it came due while the cancelling run was in
    flight, so its run is already queued behind it; that run then delivers nothing."""
    clock = ManualClock()
    agent = SlowCanceller()
    runner = LocalRunner(agent, store, clock=clock)

    async def go() -> list:
        agent.gate = asyncio.Event()
        runner.submit("k", "schedule")
        await runner.drain()
        tid = runner.outputs[0][1].output
        runner.submit("k", tid)  # waits at the gate
        await asyncio.sleep(0)
        clock.advance(60)
        runner._fire_due()  # the timer's run is queued behind the cancelling one
        assert [p.origin.kind for p in runner.states[_kid("k")][1].pending if p.origin] == ["timer"]
        agent.gate.set()
        await runner.drain()
        return outputs(runner)[1:]

    assert asyncio.run(go()) == [{"cancelled": True}]
    (started,) = [r for r in records(store) if isinstance(r, RunInput)]
    assert (started.kind, started.delivered) == ("timer", False)
    assert runner.timers == {}


def test_scheduling_is_dropped_when_the_action_fails(store):
    class Failing(Agent):
        uid = "failing"

        @action(InputEvent)
        def start(self, event, ctx):
            ctx.schedule_event(Event("ping", {}), delay=1)
            ctx.expect_signal("approval", timeout=5)
            raise RuntimeError("boom")

        @action("ping")
        def ping(self, event, ctx):
            CALLS["ping"] += 1

    clock = ManualClock()
    runner = LocalRunner(Failing(), store, clock=clock, on_run_failure="dead-letter")
    run(runner, ("k", "go"))
    assert len(runner.dead_letters) == 1
    assert runner.timers == {} and runner.signals == {}
    clock.advance(HOUR)
    assert drained(runner) == [] and CALLS == {}


def test_a_replayed_action_reapplies_its_timer_without_scheduling_it_again(store, tmp_path):
    """The action completed and was journaled; the run did not complete in the state that
    is restored: the replay keeps the journaled (absolute) due time."""
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    runner.snapshot(tmp_path / "before")
    (scheduled,) = run(runner, ("k", {"op": "schedule", "n": 1, "delay": 10}))
    due = runner.timers["k"][0].due
    clock.advance(5)
    restored = LocalRunner.restore(tmp_path / "before", Waiter(), store, clock=clock)
    replayed = run(restored, ("k", {"op": "schedule", "n": 1, "delay": 10}))
    assert replayed == [scheduled]
    assert [(t.id, t.due) for t in restored.timers["k"]] == [(scheduled["scheduled"], due)]
    assert restored.metrics.value("actionjournal_timers_total", event="scheduled") == 0
    clock.advance(5)
    assert fired(drained(restored)) == [1]
    assert CALLS == {"fired-1": 1}


def test_snapshots_hold_timers_and_signals_and_due_ones_fire_after_the_restore(store, tmp_path):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    run(
        runner,
        ("k", {"op": "schedule", "n": 1, "delay": 30}),
        ("k", {"op": "schedule", "n": 2, "delay": 10}),
        ("j", {"op": "expect", "timeout": 20}),
    )
    runner.snapshot(tmp_path / "snap")
    clock.advance(HOUR)  # the job is down while all of them come due
    restored = LocalRunner.restore(tmp_path / "snap", Waiter(), store, clock=clock)
    assert {k: [t.id for t in ts] for k, ts in restored.timers.items()} == {
        k: [t.id for t in ts] for k, ts in runner.timers.items()
    }
    assert list(restored.signals) == ["j"]
    outs = drained(restored)
    assert fired(outs) == [2, 1]  # in due order
    assert [o for o in outs if "timed_out" in o]
    assert CALLS["fired-1"] == CALLS["fired-2"] == 1


# -- signals -----------------------------------------------------------------------------------


def test_an_answer_before_the_deadline_is_received_and_a_later_one_runs_nothing(store):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (expected,) = run(runner, ("k", {"op": "expect", "timeout": HOUR}))
    sid = expected["signal"]
    assert [(s.id, s.name) for s in runner.signals["k"]] == [(sid, "approval")]
    assert run(runner, ("k", SignalInput(sid, "yes"))) == [{"answered": "yes", "signal": sid}]
    assert run(runner, ("k", SignalInput(sid, "no"))) == []  # a duplicate: journaled, counted
    clock.advance(2 * HOUR)
    assert drained(runner) == []  # the deadline was cancelled with the answer
    assert CALLS == {f"answered-{sid}": 1}
    started = [(r.kind, r.delivered) for r in records(store) if isinstance(r, RunInput)]
    assert started == [("answer", True), ("answer", False)]
    metrics = runner.metrics
    assert metrics.value("actionjournal_signals_total", event="received") == 1
    assert metrics.value("actionjournal_signals_total", event="late") == 1
    assert runner.signals == {}


def test_the_deadline_passing_first_wins_over_a_later_answer(store):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (expected,) = run(runner, ("k", {"op": "expect", "timeout": 60}))
    sid = expected["signal"]
    clock.advance(61)
    assert drained(runner) == [{"timed_out": sid}]
    assert run(runner, ("k", SignalInput(sid, "too late"))) == []
    assert CALLS == {f"timed-out-{sid}": 1}
    assert runner.metrics.value("actionjournal_signals_total", event="timed_out") == 1
    assert runner.metrics.value("actionjournal_signals_total", event="late") == 1


def test_an_answer_that_arrives_after_the_deadline_but_before_the_runner_looked_is_late(store):
    """The deadline's run is queued first (it was due before the answer arrived)."""
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (expected,) = run(runner, ("k", {"op": "expect", "timeout": 60}))
    clock.advance(61)
    assert run(runner, ("k", SignalInput(expected["signal"], "x"))) == [
        {"timed_out": expected["signal"]}
    ]


class Approval(Agent):
    uid = "approval"

    @action(InputEvent)
    def ask(self, event, ctx):
        signal = ctx.expect_signal(
            "approval",
            timeout=timedelta(hours=24),
            timeout_event=Event("escalate", {"order": event.input}),
        )
        assert isinstance(signal, Signal) and signal.deadline.tzinfo is not None
        ctx.send_event(OutputEvent(signal.id))

    @action("escalate")
    def escalate(self, event, ctx):
        ctx.send_event(OutputEvent({"escalated": event.attributes["order"]}))

    @action(SignalReceived, SignalTimedOut)
    def never(self, event, ctx):
        raise AssertionError("the timeout event replaces SignalTimedOut")


def test_a_timeout_event_replaces_signal_timed_out(store):
    clock = ManualClock()
    runner = LocalRunner(Approval(), store, clock=clock)
    run(runner, ("k", 7))
    clock.advance(timedelta(hours=25))
    assert drained(runner) == [{"escalated": 7}]


def test_signal_input_reads_json_and_says_what_is_wrong():
    answer = SignalInput.from_json('{"signal_id": "abc", "value": {"ok": true}, "key": "k"}')
    assert answer == SignalInput("abc", {"ok": True}, "k")
    assert SignalInput.from_json(answer.to_json()) == answer
    with pytest.raises(ValueError, match="not JSON"):
        SignalInput.from_json(b"\xff")
    with pytest.raises(ValueError, match="signal_id"):
        SignalInput.from_json('{"value": 1}')
    with pytest.raises(ValueError, match="besides"):
        SignalInput.from_json('{"signal_id": "a", "valeu": 1}')


# -- the journal's order after a restore ------------------------------------------------------


def test_a_timer_journaled_before_an_input_keeps_its_number_after_a_restore(store, tmp_path):
    """Before the crash the timer fired first (seq 1), then an input (seq 2). After the
    restore the input is delivered again, and the restored clock (behind, here) does not
    even say the timer is due: the journal does, so it goes first again, and both runs
    meet their own records: no call runs twice."""
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    run(runner, ("k", {"op": "schedule", "n": 1, "delay": 10}))
    runner.snapshot(tmp_path / "snap")
    behind = ManualClock(clock())
    clock.advance(11)
    assert fired(drained(runner)) == [1]
    run(runner, ("k", {"op": "note", "n": 2}))
    assert CALLS == {"fired-1": 1, "note-2": 1}
    restored = LocalRunner.restore(tmp_path / "snap", Waiter(), store, clock=behind)
    replayed = run(restored, ("k", {"op": "note", "n": 2}))
    assert fired(replayed) == [1] and replayed[-1] == {"noted": 2}
    assert CALLS == {"fired-1": 1, "note-2": 1}
    assert restored.metrics.value("actionjournal_runs_total", outcome="replayed") == 2


def test_an_input_journaled_before_a_due_timer_keeps_its_number_after_a_restore(store, tmp_path):
    """Before the crash: an answer (seq 1) won over the deadline (seq 2). After the restore
    the deadline is due at once, yet waits for the answer's re-delivery: the answer still
    wins."""
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    (expected,) = run(runner, ("k", {"op": "expect", "timeout": 60}))
    sid = expected["signal"]
    runner.snapshot(tmp_path / "snap")
    assert run(runner, ("k", SignalInput(sid, "yes")))[0]["answered"] == "yes"
    clock.advance(120)
    restored = LocalRunner.restore(tmp_path / "snap", Waiter(), store, clock=clock)
    assert drained(restored) == []  # the deadline waits for the journaled input
    assert run(restored, ("k", SignalInput(sid, "yes"))) == [{"answered": "yes", "signal": sid}]
    assert drained(restored) == []
    assert CALLS == {f"answered-{sid}": 1}
    assert restored.signals == {}


def test_due_timers_stop_waiting_for_inputs_that_are_not_delivered_again(store, tmp_path, caplog):
    clock = ManualClock()
    runner = LocalRunner(Waiter(), store, clock=clock)
    run(runner, ("k", {"op": "schedule", "n": 1, "delay": 10}))
    runner.snapshot(tmp_path / "snap")
    run(runner, ("k", {"op": "note", "n": 2}))
    clock.advance(11)
    restored = LocalRunner.restore(tmp_path / "snap", Waiter(), store, clock=clock)
    assert drained(restored) == []
    clock.advance(REDELIVERY_WAIT_S)
    assert fired(drained(restored)) == [1]
    assert "not delivered again" in caplog.text


# -- misuse ------------------------------------------------------------------------------------


class Misuse(Agent):
    uid = "misuse"

    @action(InputEvent)
    def start(self, event, ctx):
        kind, kwargs = event.input
        if kind == "expect":
            ctx.expect_signal(**kwargs)
        elif kind == "late":
            self.kept = ctx
        else:
            ctx.schedule_event(Event("ping", {}), **kwargs)


@pytest.mark.parametrize(
    ("kind", "kwargs", "message"),
    [
        ("schedule", {}, "exactly one"),
        ("schedule", {"delay": 1, "at": datetime.now(UTC)}, "exactly one"),
        ("schedule", {"delay": -1}, "0 or more"),
        ("schedule", {"at": datetime(2030, 1, 1)}, "aware datetime"),
        ("schedule", {"delay": 1, "timer_id": ""}, "non-empty str"),
        ("expect", {"name": "a", "timeout": 0}, "more than 0"),
        ("expect", {"name": "", "timeout": 1}, "non-empty str"),
    ],
)
def test_bad_requests_fail_the_action_saying_what_to_use(store, kind, kwargs, message):
    runner = LocalRunner(Misuse(), store, clock=ManualClock())
    with pytest.raises(ActionFailedError) as failed:
        run(runner, ("k", [kind, kwargs]))
    assert isinstance(failed.value.__cause__, ConfigurationError)
    assert message in str(failed.value)


def test_a_context_used_after_its_action_refuses_timers(store):
    agent = Misuse()
    run(LocalRunner(agent, store, clock=ManualClock()), ("k", ["late", {}]))
    with pytest.raises(ContextClosedError):
        agent.kept.schedule_event(Event("ping", {}), delay=1)


def test_thousands_of_pending_timers_of_a_key_are_one_list_in_its_state(store):
    clock = ManualClock()

    class Many(Agent):
        uid = "many"

        @action(InputEvent)
        def start(self, event, ctx):
            for i in range(event.input):
                ctx.schedule_event(Event("ping", {"i": i}), delay=1 + i)

        @action("ping")
        def ping(self, event, ctx):
            CALLS["ping"] += 1

    runner = LocalRunner(Many(), store, clock=clock)
    run(runner, ("k", 2000))
    state: KeyState = runner.states[_kid("k")][1]
    assert len(state.timers) == 2000 and state.timers[0].due < state.timers[-1].due
    clock.advance(100.5)
    drained(runner)
    assert CALLS["ping"] == 100 and len(runner.timers["k"]) == 1900


class Flaky(Agent):
    """Its timer's and its deadline's actions fail until ``healed``."""

    uid = "flaky"
    healed = False

    @action(InputEvent)
    def start(self, event, ctx):
        ctx.schedule_event(Event("ping", {"n": 1}), delay=10)
        ctx.expect_signal("approval", timeout=20)

    @action("ping", SignalTimedOut)
    def late(self, event, ctx):
        if not self.healed:
            raise RuntimeError(f"{event.type} not yet")
        ctx.send_event(OutputEvent(event.type))


def test_a_dead_lettered_timer_or_deadline_run_re_drives_with_what_it_delivered(store):
    clock = ManualClock()
    agent = Flaky()
    runner = LocalRunner(agent, store, clock=clock, on_run_failure="dead-letter")
    run(runner, ("k", "go"))
    clock.advance(30)
    assert drained(runner) == []
    assert [letter.seq for letter in runner.dead_letters] == [1, 2]
    assert runner.timers == {} and runner.signals == {}  # used up: they fired
    agent.healed = True
    assert run(runner, *[("k", letter) for letter in runner.dead_letters]) == [
        "ping",
        "signal_timed_out",
    ]


class Calendar:
    """A test's own clock: an object whose now() is an aware datetime."""

    def __init__(self) -> None:
        self.today = datetime(2031, 5, 1, 9, 0, tzinfo=UTC)

    def now(self) -> datetime:
        return self.today


def test_a_clock_may_be_any_callable_or_an_object_with_now(store):
    calendar = Calendar()
    runner = LocalRunner(Waiter(), store, clock=calendar)
    run(runner, ("k", {"op": "schedule", "n": 1, "delay": 60}))
    assert runner.timers["k"][0].due == calendar.today.timestamp() + 60
    calendar.today += timedelta(minutes=2)
    assert fired(drained(runner)) == [1]
    wrong = LocalRunner(Waiter(), store, clock=lambda: "noon")
    with pytest.raises(ActionFailedError, match="the clock returned 'noon'"):
        run(wrong, ("j", {"op": "schedule", "n": 1, "delay": 60}))
