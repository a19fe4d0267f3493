"""The process the timer crash tests kill (tests/integration/test_crash_timers.py).

python -m tests.timers_child STATE_DIR SERVICE_URL SCENARIO first|restore [--crash POINT]

``first`` runs the scenario from the start on STATE_DIR/journal.db with a ManualClock at
T0, snapshots (STATE_DIR/snap) once the timer or signal is pending, then moves the clock
past the due time and drains; ``--crash`` kills it on the way: ``before-due`` right after
the snapshot, ``call:NAME`` just before the service call NAME, or a crash point of
CrashingStore (``after:CallFinished:1``). ``restore`` restores the snapshot with the clock
an hour later (everything came due while the process was down), feeds the same source
again from the snapshot's position, drains, and prints its outputs as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from actionjournal import LocalRunner, SignalInput
from actionjournal.stores import SqliteStore
from actionjournal.testing import ManualClock
from actionjournal.testing.crash import CrashingStore, kill_now
from tests import timer_agents

T0 = 1_900_000_000.0
KILL_BEFORE: str | None = None
_call_service = timer_agents.call_service


def call_service(url: str, name: str, value: object = None) -> object:
    if name == KILL_BEFORE:
        kill_now()
    return _call_service(url, name, value)


timer_agents.call_service = call_service  # type: ignore[assignment]


def source(scenario: str, signal_id: str | None) -> list[tuple[str, object]]:
    if scenario == "timer":
        return [("k", {"op": "schedule", "n": 1, "delay": 60})]
    inputs: list[tuple[str, object]] = [("k", {"op": "expect", "timeout": 60})]
    if signal_id is not None:
        inputs.append(("k", SignalInput(signal_id, "approved")))
    return inputs


async def first(state: Path, url: str, scenario: str, crash: str | None) -> None:
    global KILL_BEFORE
    point = crash if crash and crash.count(":") == 2 else None
    if crash and crash.startswith("call:"):
        KILL_BEFORE = crash.removeprefix("call:")
    store = SqliteStore(state / "journal.db")
    clock = ManualClock(T0)
    runner = LocalRunner(timer_agents.Waiter(url), CrashingStore(store, point), clock=clock)
    await runner.run_source(source(scenario, None))
    runner.snapshot(state / "snap")
    if crash == "before-due":
        kill_now()
    if scenario == "signal":  # the answer comes
        signal_id = runner.signals["k"][0].id
        await runner.run_source(source(scenario, signal_id))
    clock.advance(61)
    await runner.drain()


async def restore(state: Path, url: str, scenario: str) -> list[object]:
    store = SqliteStore(state / "journal.db")
    clock = ManualClock(T0 + 3600)
    agent = timer_agents.Waiter(url)
    runner = LocalRunner.restore(state / "snap", agent, store, clock=clock)
    pending = runner.signals.get("k")
    await runner.run_source(source(scenario, pending[0].id if pending else None))
    await runner.drain()
    store.close()
    return [event.output for _, event in runner.outputs]


def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("state", type=Path)
    p.add_argument("url")
    p.add_argument("scenario", choices=["timer", "signal"])
    p.add_argument("phase", choices=["first", "restore"])
    p.add_argument("--crash")
    args = p.parse_args(argv)
    if args.phase == "first":
        asyncio.run(first(args.state, args.url, args.scenario, args.crash))
    else:
        print(json.dumps(asyncio.run(restore(args.state, args.url, args.scenario))))


if __name__ == "__main__":
    main(sys.argv[1:])
