"""An agent that waits: timers and signals, for the unit, crash and Flink tests of issue 34.

Inputs are dicts: ``{"op": "schedule", "n": N, "delay": S}`` (optional ``"id"``),
``{"op": "cancel", "id": ID}``, ``{"op": "expect", "timeout": S}`` (optional ``"n"``), or
``{"op": "note", "n": N}`` (a plain input that makes one call). What a timer or a signal
delivers makes one durable call (``call(name, value)``): to a counting service given by
URL (crash tests count outside the process), else to :data:`CALLS` in this process.
"""

from __future__ import annotations

import os
from collections import Counter
from typing import Any

from actionjournal import (
    Agent,
    Event,
    InputEvent,
    OutputEvent,
    SignalReceived,
    SignalTimedOut,
    action,
)
from actionjournal.testing import call_service

CALLS: Counter[str] = Counter()


def count(name: str, value: Any = None) -> Any:
    CALLS[name] += 1
    return value


class Ping(Event):
    TYPE = "ping"
    __slots__ = ()

    @property
    def n(self) -> int:
        n: int = self.attributes["n"]
        return n


class Waiter(Agent):
    uid = "waiter"

    def __init__(self, url: str | None = None) -> None:
        self.url = url

    def call(self, ctx: Any, name: str, value: Any = None) -> Any:
        if self.url is None:
            return ctx.durable_execute(count, name, value)
        return ctx.durable_execute(call_service, self.url, name, value)

    @action(InputEvent)
    def start(self, event: InputEvent, ctx: Any) -> None:
        request = event.input
        op = request["op"]
        if op == "schedule":
            ping = Ping("ping", {"n": request["n"]})
            tid = ctx.schedule_event(ping, delay=request["delay"], timer_id=request.get("id"))
            ctx.send_event(OutputEvent({"scheduled": tid, "n": request["n"]}))
        elif op == "cancel":
            ctx.send_event(OutputEvent({"cancelled": ctx.cancel_timer(request["id"])}))
        elif op == "expect":
            signal = ctx.expect_signal("approval", timeout=request["timeout"])
            ctx.short_term_memory.set("signal", signal.id)
            ctx.send_event(OutputEvent({"signal": signal.id, "n": request.get("n", 0)}))
        else:
            self.call(ctx, f"note-{request['n']}", request["n"])
            ctx.send_event(OutputEvent({"noted": request["n"]}))

    @action(Ping)
    def ping(self, event: Ping, ctx: Any) -> None:
        self.call(ctx, f"fired-{event.n}", event.n)
        ctx.send_event(OutputEvent({"fired": event.n, "pid": os.getpid()}))

    @action(SignalReceived)
    def answered(self, event: SignalReceived, ctx: Any) -> None:
        self.call(ctx, f"answered-{event.signal_id}", event.value)
        ctx.send_event(OutputEvent({"answered": event.value, "signal": event.signal_id}))

    @action(SignalTimedOut)
    def timed_out(self, event: SignalTimedOut, ctx: Any) -> None:
        self.call(ctx, f"timed-out-{event.signal_id}")
        ctx.send_event(OutputEvent({"timed_out": event.signal_id}))
