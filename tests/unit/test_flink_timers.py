"""The agent's PyFlink function and a key's timers, without a cluster: whatever a key has
pending (runs, thousands of timers, a signal's deadline), it keeps one Flink
processing-time timer, its earliest. PyFlink's runtime is faked: keyed state and timers of
the current key, job parameters. tests/e2e/test_flink_timers.py runs the real thing.
"""

from __future__ import annotations

import math
import time
from typing import Any

import pytest

from actionjournal import Agent, Event, InputEvent, OutputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import END_OF_TIME, RESTORED, AgentFunction
from actionjournal.stores import SqliteStoreConfig


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


class Runtime:
    """What the function asks of PyFlink: keyed state and timers of the current key."""

    def __init__(self) -> None:
        self.key: Any = None
        self.values: dict[Any, bytes] = {}
        self.processing: dict[Any, set[int]] = {}
        self.event: dict[Any, set[int]] = {}

    # RuntimeContext
    def get_state(self, descriptor: Any) -> Runtime:
        return self

    def get_job_parameter(self, name: str, default: Any) -> Any:
        return {RESTORED: "false"}.get(name, default)

    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_metrics_group(self) -> Any:
        return Group()

    # ValueState
    def value(self) -> bytes | None:
        return self.values.get(self.key)

    def update(self, data: bytes) -> None:
        self.values[self.key] = data

    # Context and TimerService
    def get_current_key(self) -> Any:
        return self.key

    def timer_service(self) -> Runtime:
        return self

    def time_domain(self) -> Any:
        from pyflink.datastream import TimeDomain

        return TimeDomain.PROCESSING_TIME

    def current_processing_time(self) -> int:
        return int(time.time() * 1000)

    def register_processing_time_timer(self, at: int) -> None:
        self.processing.setdefault(self.key, set()).add(at)

    def delete_processing_time_timer(self, at: int) -> None:
        self.processing.get(self.key, set()).discard(at)

    def register_event_time_timer(self, at: int) -> None:
        self.event.setdefault(self.key, set()).add(at)


class Group:
    def add_group(self, *names: str) -> Group:
        return self

    def counter(self, name: str) -> Any:
        return self

    def inc(self, n: int) -> None:
        pass


@pytest.fixture
def subtask(tmp_path):
    runtime = Runtime()
    fn = AgentFunction(Many(), AgentsConfig(store=SqliteStoreConfig(path=str(tmp_path / "j.db"))))
    fn.open(runtime)
    yield fn, runtime
    fn.close()


def settle(fn: AgentFunction, runtime: Runtime, key: Any, timeout: float = 30) -> list:
    """Let the key's runs finish, firing its due timers as Flink would; its outputs."""
    runtime.key = key
    outputs: list = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        now = runtime.current_processing_time()
        runtime.processing[key] = {at for at in runtime.processing.get(key, ()) if at > now}
        outputs += list(fn.on_timer(0, runtime) or ())  # the fired ones are gone
        idle = key_id(fn, key) not in fn._runs and not fn._load(key_id(fn, key)).pending
        due = [at for at in runtime.processing[key] if at <= runtime.current_processing_time()]
        if idle and not due:  # (a timer due meanwhile fires first, as in Flink)
            return outputs
        time.sleep(0.01)
    raise AssertionError("the key's runs did not finish")


def key_id(fn: AgentFunction, key: Any) -> str:
    return fn.engine.key_id(key)


def feed(fn: AgentFunction, runtime: Runtime, key: Any, value: Any) -> None:
    runtime.key = key
    list(fn.process_element(value, runtime))


def test_thousands_of_pending_timers_keep_one_flink_timer_at_the_earliest(subtask):
    fn, runtime = subtask
    started = time.time()
    feed(fn, runtime, "k", 3000)
    settle(fn, runtime, "k")
    state = fn._load(key_id(fn, "k"))
    assert len(state.timers) == 3000
    assert runtime.processing["k"] == {math.ceil(state.timers[0].due * 1000)}
    assert state.timers[0].due == pytest.approx(started + 3600, abs=60)
    feed(fn, runtime, "k", "cancel")  # the earliest goes: the next one takes its place
    settle(fn, runtime, "k")
    state = fn._load(key_id(fn, "k"))
    assert [t.id for t in state.timers[:1]] == ["t-1"]
    assert runtime.processing["k"] == {math.ceil(state.timers[0].due * 1000)}
    assert END_OF_TIME in runtime.event["k"]


def test_a_due_timer_fires_from_the_keys_flink_timer_and_leaves_none(subtask):
    fn, runtime = subtask
    feed(fn, runtime, "k", "soon")
    settle(fn, runtime, "k")
    (timer,) = fn._load(key_id(fn, "k")).timers  # scheduled, not due yet (a second is long)
    assert runtime.processing["k"] == {math.ceil(timer.due * 1000)}
    time.sleep(max(0.0, timer.due - time.time()) + 0.01)
    assert settle(fn, runtime, "k") == ["pinged"]
    assert fn._load(key_id(fn, "k")).timers == []
    assert runtime.processing["k"] == set()
