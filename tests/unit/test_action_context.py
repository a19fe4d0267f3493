"""An action's context: a failed journal write fails the action whatever its code caught,
and a context used after its action finished refuses (issue 14 items 5 and 7)."""

from __future__ import annotations

import asyncio
from collections import Counter

import pytest

from actionjournal import (
    ActionFailedError,
    Agent,
    ContextClosedError,
    InputEvent,
    JournalWriteError,
    LocalRunner,
    OutputEvent,
    action,
)
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CallFinished
from actionjournal.stores import MemoryStore
from actionjournal.testing.harness import call_service, service_reconciler
from actionjournal.testing.service import CountingService

CALLS: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


def service(name, value=None):
    CALLS[name] += 1
    return value


async def async_service(name, value=None):
    CALLS[name] += 1
    return value


def kinds(store, uid, key="k"):
    return [type(r).__name__ for r in store.read_key("default", uid, key_id(key), None)]


# -- item 5


class LosesCallFinished(MemoryStore):
    """A store whose first CallFinished append is not acknowledged (a broker hiccup)."""

    def __init__(self):
        super().__init__()
        self.broken = True

    def append(self, record):
        if self.broken and isinstance(record, CallFinished):
            self.broken = False
            raise JournalWriteError("broker did not acknowledge the append")
        return super().append(record)


class Pay(Agent):
    uid = "pay"

    def __init__(self, url):
        self.url = url
        self.probe = service_reconciler(url)

    @action(InputEvent)
    def charge(self, event, ctx):
        try:
            receipt = ctx.durable_execute(
                call_service, self.url, "charge", event.input, reconciler=self.probe
            )
        except Exception:
            receipt = "fallback"  # the code believes the payment did not happen
        ctx.send_event(OutputEvent(receipt))


def test_an_action_whose_journal_write_failed_fails_even_when_its_code_caught_it():
    store = LosesCallFinished()
    with CountingService() as svc:
        runner = LocalRunner(Pay(svc.url), store)
        with pytest.raises(ActionFailedError, match="journal write of the action failed") as err:
            asyncio.run(runner.run([("k", "o-1")]))
        assert isinstance(err.value.__cause__, JournalWriteError)
        assert runner.outputs == []  # no "fallback" left the agent
        assert "ActionCompleted" not in kinds(store, "pay")
        assert "RunCompleted" not in kinds(store, "pay")
        # The retry settles the payment through its reconciler instead of a fallback.
        retry = LocalRunner(Pay(svc.url), store)
        asyncio.run(retry.run([("k", "o-1")]))
        svc.wait_idle()
        assert [e.output for _, e in retry.outputs] == ["o-1"]
        assert svc.calls_by_name() == {"charge": 1}  # it ran once, at the service


# -- item 7


class Leaky(Agent):
    uid = "leaky"

    def __init__(self):
        self.contexts = []
        self.tasks = []

    @action(InputEvent)
    def keep(self, event, ctx):
        self.contexts.append(ctx)
        ctx.short_term_memory.set("x", 1)
        ctx.send_event(OutputEvent("done"))

    @action(InputEvent)
    async def spawn(self, event, ctx):
        # Not awaited: the call would run after the action was journaled as completed.
        self.tasks.append(asyncio.ensure_future(ctx.durable_execute_async(async_service, "late")))


def test_a_context_used_after_its_action_finished_raises():
    store = MemoryStore()
    agent = Leaky()

    async def go():
        runner = LocalRunner(agent, store)
        await runner.run([("k", 1)])
        with pytest.raises(ContextClosedError, match="after the action finished"):
            await agent.tasks[0]
        return runner

    runner = asyncio.run(go())
    assert [e.output for _, e in runner.outputs] == ["done"]
    [ctx] = agent.contexts
    uses = [
        lambda: ctx.durable_execute(service, "late"),
        lambda: ctx.send_event(OutputEvent("late")),
        lambda: ctx.short_term_memory.set("x", 2),
        lambda: ctx.short_term_memory.get("x"),
        lambda: ctx.sensory_memory.delete("x"),
        lambda: asyncio.run(ctx.durable_execute_async(async_service, "late")),
    ]
    for use in uses:
        with pytest.raises(ContextClosedError, match=r"action keep \(key 'k', seq 0\)"):
            use()
    assert CALLS == {}  # nothing ran
    assert "CallFinished" not in kinds(store, "leaky")
    assert kinds(store, "leaky")[-1] == "RunCompleted"
    assert runner.engine.env.values.decode(next(iter(runner.states.values()))[1].memory) == {"x": 1}
