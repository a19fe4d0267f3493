"""What the golden compatibility files were made with. FROZEN: do not change anything here.

Journal records name the functions, actions, events and pydantic models of this
module (``tests.compat.agents:remote``, ``CompatAgent.charge``,
``tests.compat.agents.Receipt``), and call ids derive from them. Changing them
would make the golden files of older format versions diverge from the code that
restores them, which is not what those tests are about. A new format version
that needs another agent adds new names here; it never edits these.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import httpx
from pydantic import BaseModel

from actionjournal import (
    Agent,
    CallInfo,
    Event,
    InputEvent,
    NotStarted,
    OutputEvent,
    Recovered,
    action,
    current_call,
)
from actionjournal.durable.records import StoreIdentity
from actionjournal.stores.sqlite import SqliteStore

# A golden run has up to this many keys: inputs are {"k": i % KEYS, "i": i}.
KEYS = 3
CALLS = ("charge", "ship", "notify")


class Receipt(BaseModel):
    """A pydantic value in memory and in event attributes (journaled with its type name)."""

    order: int
    amount: int


def remote(url: str, name: str, value: Any) -> Any:
    """The durable call target: a request to the counting service, keyed by the call id."""
    call = current_call()
    assert call is not None
    reply = httpx.post(
        f"{url}/calls/{name}", json={"call_id": call.call_id, "value": value}, timeout=60
    )
    reply.raise_for_status()
    return reply.json()["value"]


def probe(url: str):
    def reconcile(info: CallInfo) -> Recovered | NotStarted:
        reply = httpx.get(f"{url}/calls/{info.call_id}", timeout=60)
        return Recovered(reply.json()["value"]) if reply.status_code == 200 else NotStarted()

    return reconcile


class CompatAgent(Agent):
    """Three steps per input: charge (plain call), ship (reconciled), notify (plain call).

    The URL is bound with a partial, so it is not among a call's journaled
    arguments: the golden files restore against a service on another port.
    """

    uid = "compat-agent"

    def __init__(self, url: str) -> None:
        self.url = url
        self.call = functools.partial(remote, url)
        self.probe = probe(url)

    @action(InputEvent)
    def charge(self, event, ctx):
        order = json.loads(event.input)
        paid = ctx.durable_execute(self.call, "charge", order["i"])
        receipt = Receipt(order=order["i"], amount=paid * 10)
        ctx.short_term_memory.set("last", receipt)
        ctx.short_term_memory.set("count", ctx.short_term_memory.get("count", 0) + 1)
        ctx.send_event(Event("charged", {"k": order["k"], "receipt": receipt}))

    @action("charged")
    async def ship(self, event, ctx):
        receipt = event.attributes["receipt"]
        shipped = await ctx.durable_execute_async(
            self.call, "ship", receipt.order, reconciler=self.probe
        )
        ctx.send_event(Event("shipped", {"k": event.attributes["k"], "i": shipped}))

    @action("shipped")
    def notify(self, event, ctx):
        i = event.attributes["i"]
        ctx.durable_execute(self.call, "notify", i)
        count = ctx.short_term_memory.get("count")
        ctx.send_event(OutputEvent({"k": event.attributes["k"], "i": i, "count": count}))


def inputs(n: int) -> list[str]:
    return [json.dumps({"k": i % KEYS, "i": i}) for i in range(n)]


def key_of(element: str) -> int:
    return json.loads(element)["k"]


class RelocatedSqliteStore(SqliteStore):
    """A copy of a golden SQLite journal, presented under the name its markers recorded.

    SQLite markers name the journal file by its absolute path at generation time;
    the golden journal is copied elsewhere to be restored, and this store answers
    to the recorded name. The store id is still read from the file, so a journal
    other than the one the markers point into is refused as recreated: only the
    path is relocated, the validation is not bypassed.
    """

    def __init__(self, path: str | Path, recorded_name: str, codec: Any = None) -> None:
        super().__init__(path, codec)
        self.identity = StoreIdentity("sqlite", recorded_name, self.identity.uid)


def relocated(path: str, recorded_name: str, codec: Any) -> RelocatedSqliteStore:
    """A picklable store factory for Flink workers: ``functools.partial(relocated, ...)``."""
    return RelocatedSqliteStore(path, recorded_name, codec)


def sqlite(path: str, codec: Any) -> SqliteStore:
    return SqliteStore(path, codec)


class AppendTo:
    """An at-least-once file sink: each output as a JSON line."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, value: Any) -> Any:
        with open(self.path, "a") as f:
            f.write(json.dumps(value) + "\n")
        return value


def read_lines(path: str | Path) -> list[dict]:
    try:
        with open(path) as f:
            return [json.loads(line) for line in f]
    except FileNotFoundError:
        return []
