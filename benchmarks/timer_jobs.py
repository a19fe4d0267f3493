"""The PyFlink jobs ``timers.fire.lateness.p99`` times (pickled into the Flink workers).

Inputs are ``{"k": key, "far": n}`` (schedule n timers an hour ahead) or ``{"k": key,
"probe": i}`` (one timer ``delay`` seconds ahead); a probe's output is how late its timer
started its work, ``{"late_ms": ...}``: the agent's action, or the plain function's
``on_timer``.
"""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime
from typing import Any

from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction

from actionjournal import Agent, Event, InputEvent, OutputEvent, action

TICK = "tick"  # keeps the source, and so the job, alive until the probes fired
PICKLED = Types.PICKLED_BYTE_ARRAY()
FAR_S = 3600


def not_a_tick(element: str) -> bool:
    return element != TICK


def parsed(element: str) -> dict[str, Any]:
    request: dict[str, Any] = json.loads(element)
    return request


def key_of(request: dict[str, Any]) -> str:
    key: str = request["k"]
    return key


class Probes(Agent):
    uid = "bench-probes"

    def __init__(self, delay: float) -> None:
        self.delay = delay

    @action(InputEvent)
    def schedule(self, event, ctx):
        request = event.input
        if "far" in request:
            for i in range(request["far"]):
                ctx.schedule_event(Event("far", {}), delay=FAR_S + i, timer_id=f"far-{i}")
            return
        due = time.time() + self.delay
        probe = Event("probe", {"due": due})
        ctx.schedule_event(probe, at=datetime.fromtimestamp(due, UTC))

    @action("probe")
    async def probe(self, event, ctx):  # starts with its run (a sync one starts in a thread)
        late_ms = (time.time() - event.attributes["due"]) * 1e3
        ctx.send_event(OutputEvent({"late_ms": late_ms}))

    @action("far")
    def far(self, event, ctx):
        raise AssertionError("a far timer fired within the benchmark")


class PlainTimers(KeyedProcessFunction):
    """The baseline: the same timers as plain processing-time timers of PyFlink."""

    def __init__(self, delay: float) -> None:
        self.delay_ms = int(delay * 1000)

    def process_element(self, request, ctx):
        timers = ctx.timer_service()
        now = timers.current_processing_time()
        if "far" in request:
            for i in range(request["far"]):
                timers.register_processing_time_timer(now + (FAR_S + i) * 1000)
        else:
            timers.register_processing_time_timer(now + self.delay_ms)
        return iter(())

    def on_timer(self, timestamp, ctx):
        yield {"late_ms": time.time() * 1e3 - timestamp}
