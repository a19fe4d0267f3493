"""Agents and store factories used by the PyFlink end-to-end tests (pickled into Flink workers)."""

from __future__ import annotations

import functools
import json

import httpx

from actionjournal import (
    Agent,
    CallInfo,
    InputEvent,
    NotStarted,
    OutputEvent,
    Recovered,
    action,
    current_call,
)
from actionjournal.stores import KafkaStoreConfig, SqliteStoreConfig, open_store
from actionjournal.tools.demo import probe_service


def call_service(url: str, step: str, value: str) -> str:
    call = current_call()
    reply = httpx.post(
        f"{url}/calls/{step}", json={"call_id": call.call_id, "value": value}, timeout=60
    )
    reply.raise_for_status()
    return reply.json()["value"]


class TwoSteps(Agent):
    """Two sequential durable calls per input, so a run can be half done when the job fails."""

    uid = "two-steps"

    def __init__(self, url: str) -> None:
        self.url = url
        self.probe = probe_service(url)  # settles calls in flight at a failure: never run twice

    @action(InputEvent)
    async def handle(self, event, ctx):
        item = json.loads(event.input)
        first = await ctx.durable_execute_async(
            call_service, self.url, "first", str(item["i"]), reconciler=self.probe
        )
        second = await ctx.durable_execute_async(
            call_service, self.url, "second", first, reconciler=self.probe
        )
        count = ctx.short_term_memory.get("count", 0) + 1
        ctx.short_term_memory.set("count", count)
        ctx.send_event(OutputEvent({"i": item["i"], "k": item["k"], "result": second}))


class Orders(Agent):
    """Two sequential durable calls per input; the second goes to the input's ``step``
    (default ``second``), so one input can be sent to a step the service refuses."""

    uid = "orders"

    def __init__(self, url: str, big: int = 0) -> None:
        self.url = url
        self.big = big  # bytes of the result of step "big" (a result too large to journal)
        self.probe = probe_value(url)

    @action(InputEvent)
    async def handle(self, event, ctx):
        item = json.loads(event.input)
        step = item.get("step", "second")
        first = await ctx.durable_execute_async(
            call_service, self.url, "first", str(item["i"]), reconciler=self.probe
        )
        if step == "big":  # a result larger than the journal takes
            second = await ctx.durable_execute_async(
                big_result, self.url, step, first, self.big, reconciler=self.probe
            )
        else:
            second = await ctx.durable_execute_async(
                call_service, self.url, step, first, reconciler=self.probe
            )
        ctx.send_event(OutputEvent({"i": item["i"], "k": item["k"], "result": second[:20]}))


def probe_value(url: str):
    """Reconciler of :func:`call_service`: the value the service answered, if it ran."""

    def reconcile(info: CallInfo) -> Recovered | NotStarted:
        reply = httpx.get(f"{url}/calls/{info.call_id}", timeout=60)
        return Recovered(reply.json()["value"]) if reply.status_code == 200 else NotStarted()

    return reconcile


def big_result(url: str, step: str, value: str, size: int) -> str:
    """A call whose result is ``size`` bytes: counted by the service, returned large."""
    return call_service(url, step, value) + "x" * size


def sqlite(path) -> functools.partial:
    """A picklable store factory: every Flink worker opens the same journal file."""
    return functools.partial(open_store, SqliteStoreConfig(path=str(path)))


def kafka(bootstrap: str, topic: str) -> functools.partial:
    """A picklable store factory for a journal topic on a real broker."""
    config = KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic, partitions=4)
    return functools.partial(open_store, config)


def inputs(n: int, keys: int) -> list[str]:
    return [json.dumps({"k": i % keys, "i": i}) for i in range(n)]


def key_of(element: str) -> int:
    return json.loads(element)["k"]
