"""The process driver of the crash tests (a child process that gets killed): the demo's agent.

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

from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore, kill_now
from actionjournal.tools import demo

CRASH_BEFORE_CALL: int | None = None  # kill just before the n-th service request
_requests = 0
_call_service = demo.call_service


def call_service(url: str, name: str, value):
    """The demo's service call, with a kill switch just before the n-th request."""
    global _requests
    _requests += 1
    if _requests == CRASH_BEFORE_CALL:
        kill_now()
    return _call_service(url, name, value)


# Always installed, so the crashed and the restored process journal the same function id.
demo.call_service = call_service


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
        from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

        store = KafkaStore(KafkaStoreConfig(bootstrap_servers=args.kafka, topic=args.topic))
    elif args.fluss:
        from actionjournal.stores.fluss import FlussStore, FlussStoreConfig

        store = FlussStore(
            FlussStoreConfig(bootstrap_servers=args.fluss, table=args.table, buckets=4)
        )
    else:
        store = SqliteStore(args.state_dir / "journal.db")
    if args.crash and args.crash.startswith("call:"):
        CRASH_BEFORE_CALL = int(args.crash.split(":")[1])
        crash_store = store
    else:
        crash_store = CrashingStore(store, args.crash)
    counts = await demo.run_local(
        args.state_dir, demo.Triage(args.url, args.reconcile), crash_store, args.n
    )
    store.close()
    print(json.dumps(counts))


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
