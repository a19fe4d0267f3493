"""The agent of docs/deploying.md: an order, read from Kafka, is reserved then charged.

Both steps are durable calls to an HTTP service that takes an idempotency key (the call
id): after a TaskManager loss, finished calls replay from the journal, and a call in
flight is settled by asking the service whether it arrived (``GET /calls/<call id>``)
rather than charging again. Short-term memory counts each customer's orders, so a
restore at another parallelism shows whether memory followed its key.

The service protocol is :mod:`actionjournal.testing.service`'s, which counts executions.
"""

from __future__ import annotations

import json
from typing import Any

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


def call(url: str, step: str, value: Any) -> Any:
    reply = httpx.post(
        f"{url}/calls/{step}", json={"call_id": current_call().call_id, "value": value}, timeout=60
    )
    reply.raise_for_status()
    return reply.json()["value"]


class Orders(Agent):
    uid = "orders"  # the Flink operator uid and part of the journal's identity: keep it

    def __init__(self, url: str) -> None:
        self.url = url

    def probe(self, info: CallInfo) -> Recovered | NotStarted:
        """Did the call in flight at a failure arrive? Its answer, or "not started"."""
        reply = httpx.get(f"{self.url}/calls/{info.call_id}", timeout=60)
        return Recovered(reply.json()["value"]) if reply.status_code == 200 else NotStarted()

    @action(InputEvent)
    async def handle(self, event, ctx):
        order = json.loads(event.input.text)  # a KafkaMessage; its key is the customer
        reserved = await ctx.durable_execute_async(
            call, self.url, "reserve", order["item"], reconciler=self.probe
        )
        charged = await ctx.durable_execute_async(
            call, self.url, "charge", f"{reserved}:{order['id']}", reconciler=self.probe
        )
        orders = ctx.short_term_memory.get("orders", 0) + 1
        ctx.short_term_memory.set("orders", orders)
        ctx.send_event(OutputEvent({"id": order["id"], "n": orders, "charged": charged}))
