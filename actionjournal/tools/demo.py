"""``make demo``: a ticket-triage agent that is killed mid-run and recovers.

The parent starts a local HTTP service that counts executions, then runs the
agent in a child process on the embedded SQLite journal. The first child
SIGKILLs itself right after a call reached the service but before its result
was journaled (the worst window). A second child restores the last snapshot;
the call's reconciler asks the service what happened instead of calling again.
The report's counts come from the service.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from actionjournal import (
    Agent,
    CallInfo,
    Event,
    InputEvent,
    LocalRunner,
    NotStarted,
    OutputEvent,
    Recovered,
    RunnerContext,
    action,
    current_call,
)
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore
from actionjournal.testing.service import CountingService

CRASH_AT = "before:CallFinished:10"


def call_service(url: str, name: str, value: Any) -> dict[str, Any]:
    """A remote call; the stable call id lets the service (and the reconciler) know it."""
    call = current_call()
    assert call is not None
    reply = httpx.post(f"{url}/calls/{name}", json={"call_id": call.call_id, "value": value})
    reply.raise_for_status()
    return {"name": name, "value": reply.json()["value"]}


def probe_service(url: str):
    """Reconciler: ask the service whether the call arrived, rather than calling it again."""

    def reconcile(info: CallInfo) -> Recovered | NotStarted:
        reply = httpx.get(f"{url}/calls/{info.call_id}")
        return Recovered(reply.json()) if reply.status_code == 200 else NotStarted()

    return reconcile


class Triage(Agent):
    """Classifies a ticket, then routes it and notifies its author in parallel."""

    uid = "triage"

    def __init__(self, url: str) -> None:
        self.url = url
        self.reconciler = probe_service(url)

    @action(InputEvent)
    def classify(self, event: Event, ctx: RunnerContext) -> None:
        ticket = event.attributes["input"]
        label = ctx.durable_execute(
            call_service,
            self.url,
            "classify",
            ticket["text"].split()[0],
            reconciler=self.reconciler,
        )
        seen = ctx.short_term_memory.get("tickets", [])
        ctx.short_term_memory.set("tickets", [*seen, ticket["id"]])
        ctx.send_event(Event("classified", {"id": ticket["id"], "label": label["value"]}))

    @action("classified")
    async def route(self, event: Event, ctx: RunnerContext) -> None:
        queue = await ctx.durable_execute_async(
            call_service, self.url, "route", event.attributes["label"], reconciler=self.reconciler
        )
        ctx.send_event(OutputEvent({"id": event.attributes["id"], "queue": queue["value"]}))

    @action("classified")
    def notify(self, event: Event, ctx: RunnerContext) -> None:
        sent = ctx.durable_execute(
            call_service, self.url, "notify", event.attributes["id"], reconciler=self.reconciler
        )
        ctx.short_term_memory.set(f"notified.{event.attributes['id']}", sent["value"])


def tickets(n: int) -> list[tuple[str, dict[str, Any]]]:
    """Several tickets per user, so later ones wait in keyed state behind earlier ones."""
    return [(f"user_{i % 3}", {"id": i, "text": f"topic{i % 4} ticket {i}"}) for i in range(n)]


async def child(state: Path, url: str, n: int, crash_at: str | None) -> dict[str, int]:
    store = CrashingStore(SqliteStore(state / "journal.db"), crash_at)
    agent = Triage(url)
    snapshot = state / "snapshot"
    with open(state / "outputs.jsonl", "a") as sink:

        def emit(key: Any, event: Event) -> None:
            sink.write(json.dumps([key, event.id, event.attributes["output"]]) + "\n")
            sink.flush()

        if snapshot.exists():
            runner = LocalRunner.restore(snapshot, agent, store, on_output=emit)
            runner.resume()
        else:
            runner = LocalRunner(agent, store, on_output=emit)
        await runner.run(tickets(n), snapshot_path=snapshot, snapshot_every=2, pace=0.002)
    return runner.counts


def run_child(state: Path, url: str, n: int, crash_at: str | None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "actionjournal.tools.demo", "--child", str(state), url, str(n)]
    if crash_at:
        cmd += ["--crash-at", crash_at]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="actionjournal demo", description=__doc__)
    p.add_argument("--inputs", type=int, default=12)
    p.add_argument("--dir", type=Path, default=Path(".demo"))
    p.add_argument("--child", nargs=3, metavar=("STATE", "URL", "N"), help=argparse.SUPPRESS)
    p.add_argument("--crash-at", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        state, url, n = Path(args.child[0]), args.child[1], int(args.child[2])
        print(json.dumps(asyncio.run(child(state, url, n, args.crash_at))))
        return 0

    shutil.rmtree(args.dir, ignore_errors=True)
    args.dir.mkdir(parents=True)
    with CountingService() as service:
        print(f"demo: triaging {args.inputs} tickets on SQLite ({args.dir / 'journal.db'})")
        first = run_child(args.dir, service.url, args.inputs, CRASH_AT)
        if first.returncode != -9:
            print(first.stderr, file=sys.stderr)
            print("demo: the first run was expected to be killed but was not", file=sys.stderr)
            return 1
        service.wait_idle()
        print(f"demo: process killed by SIGKILL at {CRASH_AT} after {service.executions()} calls")
        second = run_child(args.dir, service.url, args.inputs, None)
        if second.returncode != 0:
            print(second.stderr, file=sys.stderr)
            print("demo: the restored run failed", file=sys.stderr)
            return 1
        counts = json.loads(second.stdout.strip().splitlines()[-1])
        print(f"demo: restored from the last snapshot and finished: {counts}")
        executed = service.executions()
        duplicated = sum(1 for n in service.counts.values() if n > 1)
    lines = (args.dir / "outputs.jsonl").read_text().splitlines()
    unique = {event_id for _, event_id, _ in map(json.loads, lines)}
    print(f"demo: {len(unique)} distinct outputs (ids are stable, duplicates are deduplicated)")
    # Finished work taken from the journal instead of being done again: whole actions
    # skipped (their memory updates and events re-applied) plus calls returned from records.
    replayed = counts["actions_replayed"] + counts["replayed"]
    print(
        f"demo: after the restore {counts['actions_replayed']} finished actions and "
        f"{counts['replayed']} finished calls were replayed, {counts['unknown']} calls had an "
        f"unknown outcome ({counts['reconciled']} settled by the reconciler, the rest never "
        "reached the service and ran once)"
    )
    print(
        f"demo: inputs={args.inputs} executed={executed} replayed={replayed} "
        f"reconciled={counts['reconciled']} duplicated={duplicated}"
    )
    return 0 if duplicated == 0 and len(unique) == args.inputs else 1


if __name__ == "__main__":
    sys.exit(main())
