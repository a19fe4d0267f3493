"""The agent and process driver of the crash tests (run as a child process that gets killed).

python tests/crash_agent.py STATE_DIR SERVICE_URL N_INPUTS [--crash POINT] [--reconcile]
    [--kafka BOOTSTRAP --topic TOPIC]   (journal in Kafka instead of STATE_DIR/journal.db)
    [--fluss BOOTSTRAP --table TABLE]   (journal in a Fluss table, 4 buckets)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

import httpx

from actionjournal import (
    Agent,
    Event,
    InputEvent,
    LocalRunner,
    NotStarted,
    OutputEvent,
    Recovered,
    action,
    current_call,
)
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore, kill_now

CRASH_BEFORE_CALL: int | None = None  # kill just before the n-th service request
_requests = 0


def call_service(url: str, name: str, value):
    global _requests
    _requests += 1
    if _requests == CRASH_BEFORE_CALL:
        kill_now()
    call = current_call()
    reply = httpx.post(f"{url}/calls/{name}", json={"call_id": call.call_id, "value": value})
    reply.raise_for_status()
    return {"name": name, "value": reply.json()["value"]}


def probe_service(url: str):
    def reconcile(info):
        reply = httpx.get(f"{url}/calls/{info.call_id}")
        return Recovered(reply.json()) if reply.status_code == 200 else NotStarted()

    return reconcile


class Triage(Agent):
    uid = "triage"

    def __init__(self, url: str, reconcile: bool) -> None:
        self.url = url
        self.reconciler = probe_service(url) if reconcile else None

    def call(self, ctx, name, value):
        return ctx.durable_execute(call_service, self.url, name, value, reconciler=self.reconciler)

    @action(InputEvent)
    def classify(self, event, ctx):
        ticket = event.input
        label = self.call(ctx, "classify", ticket["text"].split()[0])
        ctx.short_term_memory.set(
            "tickets", [*ctx.short_term_memory.get("tickets", []), ticket["id"]]
        )
        ctx.send_event(Event("classified", {"id": ticket["id"], "label": label["value"]}))

    @action("classified")
    async def route(self, event, ctx):
        queue = await ctx.durable_execute_async(
            call_service, self.url, "route", event.attributes["label"], reconciler=self.reconciler
        )
        ctx.send_event(OutputEvent({"id": event.attributes["id"], "queue": queue["value"]}))

    @action("classified")
    def notify(self, event, ctx):
        sent = self.call(ctx, "notify", event.attributes["id"])
        ctx.short_term_memory.set(f"notified.{event.attributes['id']}", sent["value"])


def inputs(n: int) -> list[tuple[str, dict]]:
    # Several inputs per key, so later ones wait buffered in keyed state.
    return [(f"user_{i % 3}", {"id": i, "text": f"word{i % 4} ticket {i}"}) for i in range(n)]


async def main(argv: list[str]) -> None:
    global CRASH_BEFORE_CALL
    p = argparse.ArgumentParser()
    p.add_argument("state_dir", type=Path)
    p.add_argument("url")
    p.add_argument("n", type=int)
    p.add_argument("--crash")
    p.add_argument("--reconcile", action="store_true")
    p.add_argument("--kafka", metavar="BOOTSTRAP")
    p.add_argument("--topic", default="actionjournal")
    p.add_argument("--fluss", metavar="BOOTSTRAP")
    p.add_argument("--table", default="action_state")
    args = p.parse_args(argv)
    if args.kafka:
        from actionjournal.stores.kafka import KafkaActionStateStore, KafkaStoreConfig

        store = KafkaActionStateStore(
            KafkaStoreConfig(bootstrap_servers=args.kafka, topic=args.topic)
        )
    elif args.fluss:
        from actionjournal.stores.fluss import FlussActionStateStore, FlussStoreConfig

        store = FlussActionStateStore(
            FlussStoreConfig(bootstrap_servers=args.fluss, table=args.table, buckets=4)
        )
    else:
        store = SqliteStore(args.state_dir / "journal.db")
    if args.crash and args.crash.startswith("call:"):
        CRASH_BEFORE_CALL = int(args.crash.split(":")[1])
        crash_store = store
    else:
        crash_store = CrashingStore(store, args.crash)
    agent = Triage(args.url, args.reconcile)
    snapshot = args.state_dir / "snapshot"
    with open(args.state_dir / "outputs.jsonl", "a") as sink:

        def emit(key, event):
            sink.write(json.dumps([key, event.id, event.output]) + "\n")
            sink.flush()

        if snapshot.exists():
            runner = LocalRunner.restore(snapshot, agent, crash_store, on_output=emit)
            runner.resume()
        else:
            runner = LocalRunner(agent, crash_store, on_output=emit)
        await runner.run(inputs(args.n), snapshot_path=snapshot, snapshot_every=2, pace=0.002)
    runner.snapshot(args.state_dir / "final")
    store.close()
    print(json.dumps(runner.counts))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
