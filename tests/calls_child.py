"""The child process of the durable-call crash tests (tests/integration/test_crash_calls.py).

python tests/calls_child.py SCENARIO STATE_DIR SERVICE_URL [--variant V] [--crash POINT]

Runs the scenario's agent over its inputs on a fresh LocalRunner and the SQLite journal
STATE_DIR/journal.db, so a second process replays what the first one journaled; with
``--crash`` the process SIGKILLs itself at that point (actionjournal.testing.crash).
Calls go to the counting service at SERVICE_URL. Prints one JSON line: the outputs by
event id, the error the run ended with (if any) and what the scenario observed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import functools
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from actionjournal import Agent, Event, InputEvent, LocalRunner, OutputEvent, action, current_call
from actionjournal.reconcilers import CallInfo, NotStarted, Recovered, StillRunning
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore
from actionjournal.testing.harness import call_service

SEEN: list[dict[str, Any]] = []
MAIN_LOOP: asyncio.AbstractEventLoop | None = None


def rendered(value: Any) -> Any:
    """A JSON-able, order-free rendering of a value for the counting service."""
    if isinstance(value, set | frozenset | list | tuple):
        return sorted(repr(v) for v in value)
    if isinstance(value, dict):
        return sorted(f"{k!r}={v!r}" for k, v in value.items())
    return repr(value)


def post(url: str, name: str, *values: Any) -> Any:
    return call_service(url, name, [rendered(v) for v in values])


# -- item 2: identities under another PYTHONHASHSEED ------------------------------------


class Tags(Agent):
    """Inputs hold a frozenset of mixed types, a set and a dict built by iterating a set."""

    uid = "tags"

    def __init__(self, url: str, variant: str) -> None:
        self.url = url

    @action(InputEvent)
    def tag(self, event: Event, ctx: Any) -> None:
        order = event.input
        ctx.durable_execute(post, self.url, "tag", order["tags"], order["scores"])
        by_name = {name: len(name) for name in order["names"]}  # built in iteration order
        ctx.send_event(Event("tagged", {"tags": order["tags"], "by_name": by_name}))

    @action("tagged")
    def store(self, event: Event, ctx: Any) -> None:
        tags, by_name = event.attributes["tags"], event.attributes["by_name"]
        ctx.durable_execute(post, self.url, "store", tags, by_name)
        ctx.send_event(OutputEvent(rendered(tags)))


def tags_inputs() -> list[tuple[Any, Any]]:
    names = {"ada", "bob", "cy", "dee", "eve", "fay", "gus"}
    return [
        (
            "k",
            {
                "tags": frozenset({"x", "y", i, ("t", i), b"b", 2.5}),
                "names": set(names),
                "scores": {name: i for name in names},
            },
        )
        for i in range(3)
    ]


# -- item 3: bound arguments of a partial are part of the call ---------------------------


def charge(url: str, order: str, amount: int) -> Any:
    return call_service(url, order, amount)


class Pays(Agent):
    uid = "pays"

    def __init__(self, url: str, variant: str) -> None:
        self.url = url
        self.order = variant  # bound with functools.partial: changed between the processes

    @action(InputEvent)
    def pay(self, event: Event, ctx: Any) -> None:
        paid = ctx.durable_execute(functools.partial(charge, self.url, self.order), event.input)
        ctx.durable_execute(charge, self.url, "notify", paid)
        ctx.send_event(OutputEvent({"order": self.order, "paid": paid}))


# -- item 12: every combination of action, call and reconciler ---------------------------


def note(kind: str) -> None:
    """Where a reconciler runs: on no loop (a worker thread), the agent's loop, or another."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    where = "none" if loop is None else "main" if loop is MAIN_LOOP else "other"
    SEEN.append({"kind": kind, "loop": where})


def probe(url: str, call_id: str, asked: int) -> Any:
    """What the service knows of the call; "still running" the first time it is asked."""
    if asked == 1:
        return StillRunning(0.05)
    reply = httpx.get(f"{url}/calls/{call_id}", timeout=30)
    return Recovered(reply.json()["value"]) if reply.status_code == 200 else NotStarted()


def reconcile_sync(info: CallInfo) -> Any:
    note("sync")
    return probe(info.args[0], info.call_id, len(SEEN))


async def reconcile_async(info: CallInfo) -> Any:
    note("async")
    return await asyncio.to_thread(probe, info.args[0], info.call_id, len(SEEN))


def reconcile_zero() -> Any:
    """Flink Agents' form: no argument; the call is ``current_call()``."""
    note("zero")
    info = current_call()
    assert info is not None
    outcome = probe(info.args[0], info.call_id, len(SEEN))
    return outcome.value if isinstance(outcome, Recovered) else outcome


RECONCILERS = {"sync": reconcile_sync, "async": reconcile_async, "zero": reconcile_zero}


def pay(url: str, order: str) -> Any:
    return call_service(url, "pay", order)


async def pay_async(url: str, order: str) -> Any:
    return await asyncio.to_thread(call_service, url, "pay", order)


class SyncPayer(Agent):
    uid = "payer"

    def __init__(self, url: str, variant: str) -> None:
        self.url = url
        _, self.call, reconciler = variant.split("-")
        self.reconciler = RECONCILERS[reconciler]

    @action(InputEvent)
    def pay(self, event: Event, ctx: Any) -> None:
        args = (self.url, event.input)
        if self.call == "sync":
            paid = ctx.durable_execute(pay, *args, reconciler=self.reconciler)
        else:  # the call's coroutine on a loop of this worker thread's own
            call = ctx.durable_execute_async(pay_async, *args, reconciler=self.reconciler)
            paid = asyncio.run(call)
        ctx.send_event(OutputEvent(paid))


class AsyncPayer(SyncPayer):
    @action(InputEvent)
    async def pay(self, event: Event, ctx: Any) -> None:
        args = (self.url, event.input)
        if self.call == "sync":  # a blocking call, in a worker thread
            paid = await asyncio.to_thread(
                ctx.durable_execute, pay, *args, reconciler=self.reconciler
            )
        else:
            paid = await ctx.durable_execute_async(pay_async, *args, reconciler=self.reconciler)
        ctx.send_event(OutputEvent(paid))


def payer(url: str, variant: str) -> Agent:
    return (SyncPayer if variant.startswith("sync") else AsyncPayer)(url, variant)


# -- item 14: a call the action cancels ------------------------------------------------


STARTED: asyncio.Event | None = None


async def slow(url: str) -> Any:
    assert STARTED is not None
    STARTED.set()
    await asyncio.sleep(120)
    return await asyncio.to_thread(call_service, url, "slow")


class Cancels(Agent):
    uid = "cancels"

    def __init__(self, url: str, variant: str) -> None:
        self.url = url

    @action(InputEvent)
    async def work(self, event: Event, ctx: Any) -> None:
        global STARTED
        STARTED = asyncio.Event()
        first = await ctx.durable_execute_async(pay_async, self.url, "first", on_unknown="fail")
        call = ctx.durable_execute_async(slow, self.url, on_unknown="fail")
        pending = asyncio.ensure_future(call)
        # On the first run until the call runs; a replay never runs it, so it waits 2 s.
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(STARTED.wait(), 2)
        pending.cancel()
        try:
            await pending
            outcome = "finished"
        except asyncio.CancelledError:
            outcome = "cancelled"
        last = await ctx.durable_execute_async(pay_async, self.url, "last", on_unknown="fail")
        ctx.send_event(OutputEvent({"first": first, "slow": outcome, "last": last}))


SCENARIOS = {
    "tags": (Tags, tags_inputs),
    "partial": (Pays, lambda: [("k", 10)]),
    "reconcile": (payer, lambda: [("k", "o-1")]),
    "cancel": (Cancels, lambda: [("k", 1)]),
}


async def main(argv: list[str]) -> None:
    global MAIN_LOOP
    MAIN_LOOP = asyncio.get_running_loop()
    p = argparse.ArgumentParser()
    p.add_argument("scenario", choices=SCENARIOS)
    p.add_argument("state_dir", type=Path)
    p.add_argument("url")
    p.add_argument("--variant", default="")
    p.add_argument("--crash")
    args = p.parse_args(argv)
    make_agent, inputs = SCENARIOS[args.scenario]
    store = SqliteStore(args.state_dir / "journal.db")
    runner = LocalRunner(make_agent(args.url, args.variant), CrashingStore(store, args.crash))
    error = None
    try:
        await runner.run(inputs())
    except Exception as exc:
        cause = exc.__cause__ or exc
        error = {"type": type(cause).__name__, "message": str(cause)}
    store.close()
    outputs = {event.id: event.output for _, event in runner.outputs}
    print(json.dumps({"outputs": outputs, "error": error, "seen": SEEN}, default=repr))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
