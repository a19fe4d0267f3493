"""The agent model as Flink Agents users write it: action forms, event classes, event ids,
and sync actions of one run that share memory (issue 14 items 1, 6, 10, 21)."""

from __future__ import annotations

import asyncio
import functools
import time
from collections import Counter

import pytest

from actionjournal import (
    ActionFailedError,
    Agent,
    Event,
    InputEvent,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.durable.identity import key_id
from actionjournal.stores import MemoryStore

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def service(name, value=None):
    CALLS[name] += 1
    return value


async def async_service(name, value=None):
    await asyncio.sleep(0.01)
    CALLS[name] += 1
    return value


def run(agent, store, inputs):
    runner = LocalRunner(agent, store)
    asyncio.run(runner.run(inputs))
    return runner


def records(store, key, uid):
    return store.read_key("default", uid, key_id(key), None)


# -- item 1: every way Flink Agents (and Python) spells an action runs its body to the end


class StaticAsync(Agent):
    uid = "forms"

    @action(InputEvent)
    @staticmethod
    async def process(event, ctx):  # Flink Agents' form
        value = await ctx.durable_execute_async(async_service, "charge", event.input)
        ctx.send_event(OutputEvent(value))


class StaticSync(Agent):
    uid = "forms"

    @action(InputEvent)
    @staticmethod
    def process(event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(service, "charge", event.input)))


class StaticAsyncOtherOrder(Agent):
    uid = "forms"

    @staticmethod
    @action(InputEvent)
    async def process(event, ctx):
        value = await ctx.durable_execute_async(async_service, "charge", event.input)
        ctx.send_event(OutputEvent(value))


class ClassAsync(Agent):
    uid = "forms"

    @action(InputEvent)
    @classmethod
    async def process(cls, event, ctx):
        value = await ctx.durable_execute_async(async_service, "charge", event.input)
        ctx.send_event(OutputEvent(value))


async def _partial_body(label, event, ctx):
    value = await ctx.durable_execute_async(async_service, "charge", event.input)
    ctx.send_event(OutputEvent(value))


class PartialAsync(Agent):
    uid = "forms"
    process = action(InputEvent)(functools.partial(_partial_body, "label"))


def returns_awaitable(fn):
    """A sync wrapper (as many decorators are) around an async action."""

    def wrapper(self, event, ctx):
        return fn(self, event, ctx)

    return wrapper


class WrappedAsync(Agent):
    uid = "forms"

    @action(InputEvent)
    @returns_awaitable
    async def process(self, event, ctx):
        value = await ctx.durable_execute_async(async_service, "charge", event.input)
        ctx.send_event(OutputEvent(value))


@pytest.mark.parametrize(
    "agent",
    [StaticAsync, StaticSync, StaticAsyncOtherOrder, ClassAsync, PartialAsync, WrappedAsync],
)
def test_every_action_form_runs_its_body_before_it_is_journaled(agent):
    store = MemoryStore()
    runner = run(agent(), store, [("k", 7)])
    assert [e.output for _, e in runner.outputs] == [7]
    assert CALLS == {"charge": 1}
    kinds = [type(r).__name__ for r in records(store, "k", "forms")]
    assert kinds.index("CallFinished") < kinds.index("ActionCompleted"), kinds
    # Fixed code replays the journal: it holds the finished action, not a hollow one.
    replay = run(agent(), store, [("k", 7)])
    assert [e.output for _, e in replay.outputs] == [7] and CALLS == {"charge": 1}


def test_a_generator_is_refused_as_an_action():
    class Yields(Agent):
        @action(InputEvent)
        def process(self, event, ctx):
            yield OutputEvent(1)

    with pytest.raises(TypeError, match="process is a generator"):
        Yields().actions()


# -- item 6: event ids include the operator uid and the key


class Relay(Agent):
    uid = "relay"

    def __init__(self):
        self.seen: list[tuple[str, str | None]] = []

    @action(InputEvent)
    def receive(self, event, ctx):
        self.seen.append(("input", event.id))
        ctx.send_event(Event("middle", {"v": event.input}))

    @action("middle")
    def forward(self, event, ctx):
        self.seen.append(("middle", event.id))
        ctx.send_event(OutputEvent(event.attributes["v"]))


class OtherRelay(Relay):
    uid = "other-relay"


def test_event_ids_differ_across_keys_and_operators_and_survive_replay():
    store = MemoryStore()
    first = Relay()
    runner = run(first, store, [("a", 1), ("b", 1)])
    ids = {key: e.id for key, e in runner.outputs}
    assert ids["a"] != ids["b"]  # same input, same seq, different keys
    seen = Counter(kind for kind, _ in first.seen)
    assert seen == {"input": 2, "middle": 2}
    assert len({eid for _, eid in first.seen}) == 4  # input and intermediate ids too
    other = run(OtherRelay(), MemoryStore(), [("a", 1)])
    assert other.outputs[0][1].id != ids["a"]  # same key and input, another operator
    replay = run(Relay(), store, [("a", 1), ("b", 1)])
    assert {key: e.id for key, e in replay.outputs} == ids
    assert replay.counts["actions_replayed"] == 4


# -- item 10: event classes by TYPE or EVENT_TYPE, the same class live and after recovery


class Shipped(Event):
    EVENT_TYPE = "shipped"  # Flink Agents' spelling
    __slots__ = ()

    def __init__(self, order):
        super().__init__(self.EVENT_TYPE, {"order": order})

    @property
    def order(self):
        return self.attributes["order"]


FAIL_NOTIFY: list[bool] = []


class Shop(Agent):
    uid = "shop"

    def __init__(self):
        self.received: list[type] = []

    @action(InputEvent)
    def ship(self, event, ctx):
        ctx.send_event(Shipped(ctx.durable_execute(service, "ship", event.input)))

    @action("shipped")
    def notify(self, event, ctx):
        self.received.append(type(event))
        if FAIL_NOTIFY:
            raise RuntimeError("mail server down")
        ctx.send_event(OutputEvent(event.order))


def test_an_event_type_declared_as_EVENT_TYPE_replays_as_its_class():
    store = MemoryStore()
    FAIL_NOTIFY.append(True)
    live = Shop()
    with pytest.raises(ActionFailedError, match="mail server down"):
        run(live, store, [("k", "o-1")])
    FAIL_NOTIFY.clear()
    recovered = Shop()  # ship is replayed from the journal; its event is rebuilt
    runner = run(recovered, store, [("k", "o-1")])
    assert live.received == recovered.received == [Shipped]
    assert [e.output for _, e in runner.outputs] == ["o-1"] and CALLS == {"ship": 1}


def test_an_event_class_with_EVENT_TYPE_can_be_listened_on():
    class Listener(Agent):
        @action(Shipped)
        def on_shipped(self, event, ctx):
            pass

    assert list(Listener().actions()) == ["shipped"]
    assert Shipped.TYPE == "shipped"


class Carton(Event):
    TYPE = "carton"

    def __init__(self, size):
        super().__init__(self.TYPE, {})
        self.size = size  # not in attributes: a replay could not rebuild it


class Packer(Agent):
    @action(InputEvent)
    def pack(self, event, ctx):
        ctx.send_event(Carton(3))

    @action("carton")
    def ship(self, event, ctx):
        ctx.send_event(OutputEvent(event.size))


def test_an_event_with_data_outside_its_attributes_is_refused_when_sent():
    with pytest.raises(ActionFailedError, match=r"keeps \['size'\] outside its attributes"):
        run(Packer(), MemoryStore(), [("k", 1)])


# -- item 21: sync actions of one run do not lose memory updates


class Tally(Agent):
    """Four sync actions on one event, each a read-modify-write of one counter."""

    def _count(self, ctx):
        n = ctx.short_term_memory.get("n", 0)
        time.sleep(0.05)  # a slow action: others of the run would read the same n
        ctx.short_term_memory.set("n", n + 1)
        ctx.send_event(OutputEvent(n + 1))

    @action(InputEvent)
    def one(self, event, ctx):
        self._count(ctx)

    @action(InputEvent)
    def two(self, event, ctx):
        self._count(ctx)

    @action(InputEvent)
    def three(self, event, ctx):
        self._count(ctx)

    @action(InputEvent)
    async def four(self, event, ctx):
        await asyncio.sleep(0.01)  # the sync ones have read n by now, were they running
        ctx.short_term_memory.set("n", ctx.short_term_memory.get("n", 0) + 1)
        ctx.send_event(OutputEvent("async"))


def test_sync_actions_of_a_run_do_not_lose_memory_updates():
    runner = run(Tally(), MemoryStore(), [("k", 1)])
    [(_, state)] = runner.states.values()
    assert runner.engine.env.values.decode(state.memory) == {"n": 4}
    assert len({e.output for _, e in runner.outputs}) == 4  # each saw the others' updates


# -- what a face on the engine needs (issue 18): its own input/output type names, ids at once


class Asker(Agent):
    """Sends a request and remembers its id; the answer names the request it answers."""

    uid = "asker"
    input_event_type = "_input_event"
    output_event_type = "_output_event"

    @action("_input_event")
    def ask(self, event, ctx):
        request = Event("request", {"q": event.attributes["input"]})
        sent_id = ctx.send_event(request)
        assert sent_id == request.id
        ctx.short_term_memory.set("asked", sent_id)

    @action("request")
    def answer(self, event, ctx):
        ctx.send_event(Event("answer", {"to": event.id}))

    @action("answer")
    def done(self, event, ctx):
        asked = ctx.short_term_memory.get("asked")
        ctx.send_event(Event("_output_event", {"output": event.attributes["to"] == asked}))


def test_an_agent_names_its_input_and_output_types_and_knows_a_sent_events_id():
    store = MemoryStore()
    runner = run(Asker(), store, [("k", "why?")])
    ((_, out),) = runner.outputs
    assert out.type == "_output_event" and out.attributes["output"] is True
    replay = run(Asker(), store, [("k", "why?")])  # ids are the journaled ones after a replay
    assert [e.attributes for _, e in replay.outputs] == [{"output": True}]
    assert replay.counts["actions_replayed"] == 3
