"""The agent's PyFlink function and a key's timers, without a cluster: whatever a key has
pending (runs, thousands of timers, a signal's deadline), it keeps one Flink
processing-time timer, its earliest. PyFlink's runtime is faked (tests/unit/fake_flink.py),
without the agent operator. tests/e2e/test_flink_timers.py runs the real thing.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest
from pyflink.datastream import TimeDomain

from actionjournal import Agent, Event, InputEvent, OutputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import END_OF_TIME, AgentFunction
from actionjournal.stores import SqliteStoreConfig
from tests.unit.fake_flink import Context, Subtask


class Many(Agent):
    """Input n: schedule n timers an hour and more ahead; "cancel": cancel the earliest;
    "soon": one timer a second ahead."""

    uid = "many"

    @action(InputEvent)
    def start(self, event, ctx):
        if event.input == "cancel":
            ctx.cancel_timer("t-0")
        elif event.input == "soon":
            ctx.schedule_event(Event("ping", {}), delay=1.0, timer_id="soon")
        else:
            for i in range(event.input):
                ctx.schedule_event(Event("ping", {}), delay=3600 + i, timer_id=f"t-{i}")

    @action("ping")
    def ping(self, event, ctx):
        ctx.send_event(OutputEvent("pinged"))


@pytest.fixture
def subtask(tmp_path):
    fn = AgentFunction(Many(), AgentsConfig(store=SqliteStoreConfig(path=str(tmp_path / "j.db"))))
    runtime = Subtask(fn, operator=False)
    yield fn, runtime
    runtime.close()


def settle(fn: AgentFunction, runtime: Subtask, key: Any, timeout: float = 30) -> list:
    """Let the key's runs finish, firing its due timers as Flink would; its outputs."""
    runtime.key = key
    context = Context(runtime, key, TimeDomain.PROCESSING_TIME)
    timers = context.timer_service()
    outputs: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = timers.current_processing_time()
        timers.processing = {at for at in timers.processing if at > now}
        outputs += list(fn.on_timer(0, context) or ())  # the fired ones are gone
        idle = key_id(fn, key) not in fn._runs and not fn._load(key_id(fn, key)).pending
        due = [at for at in timers.processing if at <= timers.current_processing_time()]
        if idle and not due:  # (a timer due meanwhile fires first, as in Flink)
            return outputs
        time.sleep(0.01)
    raise AssertionError("the key's runs did not finish")


def key_id(fn: AgentFunction, key: Any) -> str:
    return fn.engine.key_id(key)


def feed(fn: AgentFunction, runtime: Subtask, key: Any, value: Any) -> None:
    runtime.element(key, value)


def test_thousands_of_pending_timers_keep_one_flink_timer_at_the_earliest(subtask):
    fn, runtime = subtask
    started = time.time()
    feed(fn, runtime, "k", 3000)
    settle(fn, runtime, "k")
    state = fn._load(key_id(fn, "k"))
    assert len(state.timers) == 3000
    assert runtime.timers["k"].processing == {math.ceil(state.timers[0].due * 1000)}
    assert state.timers[0].due == pytest.approx(started + 3600, abs=60)
    feed(fn, runtime, "k", "cancel")  # the earliest goes: the next one takes its place
    settle(fn, runtime, "k")
    state = fn._load(key_id(fn, "k"))
    assert [t.id for t in state.timers[:1]] == ["t-1"]
    assert runtime.timers["k"].processing == {math.ceil(state.timers[0].due * 1000)}
    assert END_OF_TIME in runtime.timers["k"].event


def test_a_due_timer_fires_from_the_keys_flink_timer_and_leaves_none(subtask):
    fn, runtime = subtask
    feed(fn, runtime, "k", "soon")
    settle(fn, runtime, "k")
    (timer,) = fn._load(key_id(fn, "k")).timers  # scheduled, not due yet (a second is long)
    assert runtime.timers["k"].processing == {math.ceil(timer.due * 1000)}
    time.sleep(max(0.0, timer.due - time.time()) + 0.01)
    assert settle(fn, runtime, "k") == ["pinged"]
    assert fn._load(key_id(fn, "k")).timers == []
    assert runtime.timers["k"].processing == set()
