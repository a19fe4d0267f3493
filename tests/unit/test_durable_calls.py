"""Durable calls run once, replay what they recorded, and fail loudly on divergence."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections import Counter

import pytest

from actionjournal import (
    Agent,
    DivergenceError,
    Event,
    InputEvent,
    JournalConfig,
    LocalRunner,
    OutputEvent,
    RecordedCallError,
    action,
    current_call,
)
from actionjournal.durable.errors import ActionFailedError

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset_calls():
    CALLS.clear()


def service(name, value=None):
    CALLS[name] += 1
    return value


async def async_service(name, value=None, delay=0.0):
    await asyncio.sleep(delay)
    CALLS[name] += 1
    return value


def run(agent, store, inputs, config=None):
    runner = LocalRunner(agent, store, config)
    asyncio.run(runner.run(inputs))
    return runner


class Simple(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        result = ctx.durable_execute(service, "charge", {"ok": event.input})
        ctx.send_event(OutputEvent(result))


def test_second_run_over_the_same_journal_replays_every_call(store):
    first = run(Simple(), store, [("a", 1), ("b", 2)])
    second = run(Simple(), store, [("a", 1), ("b", 2)])
    assert CALLS["charge"] == 2
    assert second.counts["executed"] == 0
    assert second.counts["actions_replayed"] == 2
    # Keys run concurrently: compare per output id, not in arrival order.
    assert {e.id: e.output for _, e in second.outputs} == {e.id: e.output for _, e in first.outputs}


class ReturnsNone(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.short_term_memory.set("result", ctx.durable_execute(service, "none"))
        ctx.durable_execute(service, "boom-after-none")
        raise RuntimeError("crash after the calls")


def test_recorded_none_result_replays_as_none(store):
    for _ in range(2):
        with pytest.raises(ActionFailedError):
            run(ReturnsNone(), store, [("k", 1)])
    assert CALLS == {"none": 1, "boom-after-none": 1}


def failing(kind):
    CALLS[kind] += 1
    raise {"value": ValueError, "key": KeyError}[kind]("recorded failure")


class HoldsALock(Exception):
    """Its state cannot be journaled, so it cannot be rebuilt equal on replay."""

    def __init__(self, a, b):
        super().__init__(f"{a}/{b}")
        self.lock = threading.Lock()


def unrebuildable():
    CALLS["odd"] += 1
    raise HoldsALock(1, 2)


class Failing(Agent):
    seen: list = []

    @action(InputEvent)
    def handle(self, event, ctx):
        for fn, args in ((failing, ("value",)), (unrebuildable, ())):
            try:
                ctx.durable_execute(fn, *args)
            except Exception as exc:
                Failing.seen.append((type(exc).__name__, str(exc)))
        ctx.durable_execute(service, "flaky", record_failures=True)
        raise RuntimeError("crash")


def test_recorded_errors_replay_with_type_or_as_recorded_call_error(store):
    Failing.seen = []
    for _ in range(2):
        with pytest.raises(ActionFailedError):
            run(Failing(), store, [("k", 1)])
    assert CALLS["value"] == 1 and CALLS["odd"] == 1
    assert Failing.seen[0] == ("ValueError", "recorded failure")
    assert Failing.seen[2] == ("ValueError", "recorded failure")
    assert Failing.seen[1][0] == "HoldsALock"
    assert Failing.seen[3][0] == RecordedCallError.__name__
    assert "HoldsALock" in Failing.seen[3][1] and "1/2" in Failing.seen[3][1]


class Transient(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        with contextlib.suppress(KeyError):
            ctx.durable_execute(failing, "key", record_failures=False)
        raise RuntimeError("crash")


def test_unrecorded_failure_is_retried_on_recovery(store):
    for _ in range(2):
        with pytest.raises(ActionFailedError):
            run(Transient(), store, [("k", 1)])
    assert CALLS["key"] == 2


class Gather(Agent):
    @action(InputEvent)
    async def handle(self, event, ctx):
        # The first call finishes last; positions must follow invocation, not completion.
        first = ctx.durable_execute_async(async_service, "slow", "S", delay=0.05)
        second = ctx.durable_execute_async(async_service, "fast", "F")
        results = await asyncio.gather(second, first)
        ctx.send_event(OutputEvent(results))


def test_gather_replays_by_invocation_order(store):
    run(Gather(), store, [("k", 1)])
    replay = run(Gather(), store, [("k", 1)])
    assert CALLS == {"slow": 1, "fast": 1}
    assert replay.outputs[0][1].output == ["F", "S"]


class Cancels(Agent):
    @action(InputEvent)
    async def handle(self, event, ctx):
        done = await ctx.durable_execute_async(async_service, "done", "kept")
        slow = asyncio.ensure_future(
            ctx.durable_execute_async(async_service, "cancelled", delay=10)
        )
        await asyncio.sleep(0.01)
        slow.cancel()
        ctx.short_term_memory.set("done", done)
        raise RuntimeError("crash after cancelling")


def test_cancelling_one_call_keeps_finished_results(store):
    for _ in range(2):
        with pytest.raises(ActionFailedError):
            run(Cancels(), store, [("k", 1)])
    assert CALLS["done"] == 1
    assert CALLS["cancelled"] == 0


class Versioned(Agent):
    def __init__(self, arg):
        self.arg = arg

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(service, "a", 1)
        ctx.durable_execute(service, "b", self.arg)
        raise RuntimeError("crash")


def test_divergence_fails_loudly_with_recorded_and_current(store):
    with pytest.raises(ActionFailedError):
        run(Versioned(1), store, [("k", 1)])
    with pytest.raises(ActionFailedError) as info:
        run(Versioned(2), store, [("k", 1)])
    cause = info.value.__cause__
    assert isinstance(cause, DivergenceError)
    assert "recorded:" in str(cause) and "current:" in str(cause) and "#1" in str(cause)
    assert CALLS == {"a": 1, "b": 1}


def test_divergence_rerun_drops_the_recorded_tail(store):
    config = JournalConfig(on_divergence="rerun")
    with pytest.raises(ActionFailedError):
        run(Versioned(1), store, [("k", 1)], config)
    with pytest.raises(ActionFailedError):
        run(Versioned(2), store, [("k", 1)], config)
    with pytest.raises(ActionFailedError):
        run(Versioned(2), store, [("k", 1)], config)
    assert CALLS == {"a": 1, "b": 2}  # re-run once after the change, then replayed


class FanOut(Agent):
    @action(InputEvent)
    def start(self, event, ctx):
        for _ in range(3):
            ctx.send_event(Event("same", {"v": 1}))

    @action("same")
    def each(self, event, ctx):
        n = ctx.durable_execute(service, "each", len(CALLS))
        ctx.send_event(OutputEvent(n))


def test_identical_fan_out_events_are_separate_action_executions(store):
    first = run(FanOut(), store, [("k", 1)])
    assert CALLS["each"] == 3 and len(first.outputs) == 3
    second = run(FanOut(), store, [("k", 1)])
    assert CALLS["each"] == 3
    assert len({e.id for _, e in second.outputs}) == 3
    assert sorted(e.output for _, e in second.outputs) == sorted(e.output for _, e in first.outputs)


class Keyed(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(service, repr(ctx.key), event.input)))


def test_keys_1_and_str_1_and_underscores_do_not_collide(store):
    keys = [1, "1", "a_b", "a", "b_", 1.0, True, ("a", "b_c")]
    run(Keyed(), store, [(k, i) for i, k in enumerate(keys)])
    replay = run(Keyed(), store, [(k, i) for i, k in enumerate(keys)])
    assert replay.counts["executed"] == 0
    assert sorted(CALLS.values()) == [1] * len(keys)
    assert [e.output for _, e in replay.outputs] == list(range(len(keys)))


class Memories(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        stm = ctx.short_term_memory
        stm.new_object("profile")
        stm.set("profile.name", event.input)
        stm.new_object("profile")  # exists: kept
        stm.set("history", [*stm.get("history", []), event.input])
        stm.delete("tmp")
        stm.set("tmp.x", 1)
        ctx.sensory_memory.set("scratch", 1)
        ctx.send_event(OutputEvent(ctx.durable_execute(service, "mem", stm.to_dict())))


def test_memory_replay_rebuilds_new_objects_exactly(tmp_path):
    from actionjournal.stores import SqliteStore

    store = SqliteStore(tmp_path / "j.db")
    first = LocalRunner(Memories(), store)
    asyncio.run(first.run([("k", "ann"), ("k", "bob")]))
    snapshot_memory = {k: s.memory for k, (_, s) in first.states.items()}
    second = LocalRunner(Memories(), store)
    asyncio.run(second.run([("k", "ann"), ("k", "bob")]))
    assert {k: s.memory for k, (_, s) in second.states.items()} == snapshot_memory
    memory = second.engine.env.values.decode(next(iter(second.states.values()))[1].memory)
    assert memory == {"profile": {"name": "bob"}, "history": ["ann", "bob"], "tmp": {"x": 1}}
    assert CALLS["mem"] == 2


def test_stable_call_id_is_visible_to_the_function(store):
    seen = []

    def record_call_id():
        seen.append(current_call().call_id)

    class UsesId(Agent):
        @action(InputEvent)
        def handle(self, event, ctx):
            ctx.durable_execute(record_call_id, on_unknown="fail")
            raise RuntimeError("crash")

    with pytest.raises(ActionFailedError):
        run(UsesId(), store, [("k", 1)])
    assert len(seen) == 1 and len(seen[0]) == 32


def test_other_namespaces_are_ignored_not_evicted(store):
    run(Simple(), store, [("a", 1)], JournalConfig(namespace="one"))
    run(Simple(), store, [("a", 1)], JournalConfig(namespace="two"))
    assert CALLS["charge"] == 2
    run(Simple(), store, [("a", 1)], JournalConfig(namespace="one"))
    run(Simple(), store, [("a", 1)], JournalConfig(namespace="two"))
    assert CALLS["charge"] == 2
