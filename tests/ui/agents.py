"""Agents of the explorer's scenarios (importable: a crash step rebuilds them in a child)."""

from __future__ import annotations

from pathlib import Path

from actionjournal import Agent, Event, InputEvent, OutputEvent, action
from actionjournal.testing.harness import call_service, service_reconciler

CARD = "4111-1111-1111-1111"


class Checkout(Agent):
    """Looks a price up, charges (with a reconciler: journaled as started), emails."""

    uid = "checkout"

    def __init__(self, url: str) -> None:
        self.url = url
        self.probe = service_reconciler(url)

    @action(InputEvent)
    def charge(self, event, ctx):
        price = ctx.durable_execute(call_service, self.url, "lookup", event.input)
        paid = ctx.durable_execute(call_service, self.url, "charge", price, reconciler=self.probe)
        ctx.short_term_memory.set("last_order", paid)
        ctx.send_event(Event("paid", {"order": paid, "card_number": CARD}))

    @action("paid")
    def receipt(self, event, ctx):
        sent = ctx.durable_execute(call_service, self.url, "email", event.attributes["order"])
        ctx.send_event(OutputEvent(sent))


class Orders(Agent):
    """A quote that fails once and is retried, then a payment that fails while ``flag`` is
    missing: with two attempts and ``on_run_failure='dead-letter'`` the run is
    dead-lettered, and re-driven once the flag exists."""

    uid = "orders"

    def __init__(self, flag: Path) -> None:
        self.flag = flag
        self.quoted: set[str] = set()

    def quote(self, order: str) -> int:
        if order not in self.quoted:
            self.quoted.add(order)
            raise ConnectionError(f"quote service busy for {order}")
        return 42

    def pay(self, order: str) -> str:
        if not self.flag.exists():
            raise ConnectionError("payments unavailable")
        return f"paid {order}"

    @action(InputEvent)
    async def handle(self, event, ctx):
        order = event.input["order"]
        amount = await ctx.durable_execute_async(self.quote, order)
        paid = await ctx.durable_execute_async(self.pay, order)
        ctx.send_event(OutputEvent({"order": order, "amount": amount, "paid": paid}))
