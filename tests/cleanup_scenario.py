"""A journal with finished, in-flight and idle keys, and snapshots of it, for cleanup tests.

Used by tests/unit/test_cleanup_local.py (SQLite, memory) and tests/integration/test_cleanup.py
(a real Kafka broker). Every durable call appends to EXECUTED, so a test can tell a
replay (no new entry) from a re-execution.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from actionjournal import Agent, CleanupBoundaryError, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.stores import SqliteStore

EXECUTED: list[tuple[str, Any]] = []
_lock = threading.Lock()


def work(step: str, value: Any) -> Any:
    with _lock:
        EXECUTED.append((step, value))
    if value == "boom" and step == "second":
        raise ValueError("boom")
    return f"{step}:{value}"


class Gates:
    """Runs of inputs named here wait between their two calls until released."""

    def __init__(self) -> None:
        self.events: dict[Any, asyncio.Event] = {}
        self.reached: dict[Any, asyncio.Event] = {}

    def hold(self, value: Any) -> None:
        self.events[value] = asyncio.Event()
        self.reached[value] = asyncio.Event()


GATES = Gates()


class Worker(Agent):
    uid = "worker"

    @action(InputEvent)
    async def handle(self, event, ctx):
        value = event.input
        first = await ctx.durable_execute_async(work, "first", value)
        if value in GATES.events:
            GATES.reached[value].set()
            await GATES.events[value].wait()
        try:
            second = await ctx.durable_execute_async(work, "second", value)
        except ValueError as exc:
            second = f"failed: {exc}"
        ctx.short_term_memory.set("last", second)
        ctx.send_event(OutputEvent({"first": first, "second": second}))


# The inputs, in order. "busy" keeps working; "idle" runs once and never again; "held"
# has a run in flight (first call done, second not) when snapshot S is taken.
BEFORE_OLD = [("busy", f"b{i}") for i in range(3)]
BEFORE_S = [("busy", f"b{i}") for i in range(3, 6)] + [("idle", "i0"), ("busy", "b6")]
HELD = [("held", "h0")]
AFTER_S = [("busy", "b7"), ("busy", "boom"), ("fresh", "f0")]
INPUTS = BEFORE_OLD + BEFORE_S + HELD + AFTER_S


@dataclass
class Scenario:
    old: Path  # a snapshot older than S: restoring it after cleanup must fail
    s: Path  # the oldest restorable snapshot the plan is made for
    executed: int  # durable calls executed in total when the scenario was built
    outputs: int


def build(store: Any, tmp: Path) -> Scenario:
    """Run INPUTS through a LocalRunner on ``store``, snapshotting OLD and S on the way."""
    EXECUTED.clear()
    GATES.events.clear()
    GATES.reached.clear()
    old, s = tmp / "old.snapshot", tmp / "s.snapshot"

    async def go() -> int:
        GATES.hold("h0")
        runner = LocalRunner(Worker(), store)
        await runner.run(BEFORE_OLD)
        runner.snapshot(old)
        await runner.run(BEFORE_S)
        for key, value in HELD:
            runner.submit(key, value)
        await asyncio.wait_for(GATES.reached["h0"].wait(), 30)
        runner.snapshot(s)  # "held" is in flight: its first call is journaled, not its second
        GATES.events["h0"].set()
        await runner.run(AFTER_S)
        return len(runner.outputs)

    outputs = asyncio.run(go())
    GATES.events.clear()
    return Scenario(old, s, len(EXECUTED), outputs)


def restore(store: Any, snapshot: Path) -> LocalRunner:
    """Restore ``snapshot`` and feed INPUTS from where it left off; returns the runner."""

    async def go() -> LocalRunner:
        runner = LocalRunner.restore(snapshot, Worker(), store)
        await runner.run_source(INPUTS)
        return runner

    return asyncio.run(go())


def build_sqlite(tmp: Path) -> tuple[Path, Scenario]:
    """The scenario in the SQLite journal ``tmp/j.db`` (closed again); its path."""
    store = SqliteStore(tmp / "j.db")
    scenario = build(store, tmp)
    store.close()
    return tmp / "j.db", scenario


def check_restores(
    open_store: Callable[[], Any], scenario: Scenario, refused: str = ""
) -> LocalRunner:
    """After a cleanup for S: restoring S runs no durable call again and emits the runs after
    it; restoring the older snapshot fails with CleanupBoundaryError (matching ``refused``)
    before any call. Returns the runner restored from S."""
    executed = len(EXECUTED)
    runner = restore(open_store(), scenario.s)
    assert len(EXECUTED) == executed, "a durable call ran again after cleanup"
    assert len(runner.outputs) == len(HELD) + len(AFTER_S)
    with pytest.raises(CleanupBoundaryError, match=refused):
        restore(open_store(), scenario.old)
    assert len(EXECUTED) == executed
    return runner
