"""Agents whose durable calls go to a real HTTP service that can fail on purpose, and the
child process of the retry tests (a process that gets SIGKILLed):

python tests/retry_agent.py STATE_DIR SERVICE_URL INPUTS_JSON [--attempts N] [--interval S]
    [--backoff B] [--policy fail|dead-letter|retry-then-dead-letter] [--crash POINT]
    [--steps N] [--max-run-records N] [--record-failures false] [--on-unknown POLICY]

It restores STATE_DIR/snap when it exists (else starts fresh), feeds the inputs from its
source position (snapshotting after each), and prints one JSON line: outputs, dead letters,
the error that stopped it (if any) and its retry metrics.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from actionjournal import (
    Agent,
    InputEvent,
    JournalConfig,
    LocalRunner,
    OutputEvent,
    RetryPolicy,
    action,
    current_call,
)
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore


def call_service(url: str, name: str, value: Any) -> Any:
    """POST to the counting service with the call id and attempt; 503 is a connection-level
    failure (retried by default), 400 a refusal (not retried)."""
    call = current_call()
    assert call is not None
    reply = httpx.post(
        f"{url}/calls/{name}",
        json={"call_id": call.call_id, "value": value, "attempt": call.attempt},
        timeout=30,
    )
    if reply.status_code == 503:
        raise ConnectionError("api temporarily unavailable")
    if reply.status_code == 400:
        raise ValueError(f"{name} refused {value!r}")
    reply.raise_for_status()
    return reply.json()["value"]


class Checkout(Agent):
    """Two sequential calls per input: ``reserve`` then ``charge`` (``options``: the durable
    call options of both)."""

    uid = "checkout"

    def __init__(self, url: str, options: dict[str, Any] | None = None) -> None:
        self.url = url
        self.options = options or {}

    @action(InputEvent)
    async def handle(self, event, ctx):
        call, options = ctx.durable_execute_async, self.options
        reserved = await call(call_service, self.url, "reserve", event.input, **options)
        charged = await call(call_service, self.url, "charge", reserved, **options)
        ctx.send_event(OutputEvent(charged))


class Steps(Checkout):
    """``steps`` sequential calls per input: ``step-0``, ``step-1``, ..."""

    uid = "checkout"

    def __init__(self, url: str, steps: int) -> None:
        super().__init__(url)
        self.steps = steps

    @action(InputEvent)
    async def handle(self, event, ctx):
        for i in range(self.steps):
            await ctx.durable_execute_async(call_service, self.url, f"step-{i}", event.input)
        ctx.send_event(OutputEvent(event.input))


class SyncCheckout(Checkout):
    """The same calls from a ``def`` action (the blocking driver, in a worker thread)."""

    uid = "checkout"

    @action(InputEvent)
    def handle(self, event, ctx):
        reserved = ctx.durable_execute(call_service, self.url, "reserve", event.input)
        charged = ctx.durable_execute(call_service, self.url, "charge", reserved)
        ctx.send_event(OutputEvent(charged))


def metrics(runner: LocalRunner) -> dict[str, float]:
    m = runner.metrics
    return {
        "succeeded": m.value("actionjournal_call_attempts_total", result="succeeded"),
        "retried": m.value("actionjournal_call_attempts_total", result="retried"),
        "failed": m.value("actionjournal_call_attempts_total", result="failed"),
        "retries": m.value("actionjournal_call_retries_total"),
        "backoff_s": m.value("actionjournal_call_backoff_seconds_total"),
        "dead_lettered": m.value("actionjournal_runs_total", outcome="dead_lettered"),
    }


async def main(argv: list[str]) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("state_dir", type=Path)
    p.add_argument("url")
    p.add_argument("inputs")
    p.add_argument("--attempts", type=int, default=3)
    p.add_argument("--interval", type=float, default=0.05)
    p.add_argument("--backoff", type=float, default=2.0)
    p.add_argument("--policy", default="fail")
    p.add_argument("--crash")
    p.add_argument("--steps", type=int)
    p.add_argument("--max-run-records", type=int, default=51_200)
    p.add_argument("--record-failures", choices=["true", "false"], default="true")
    p.add_argument("--on-unknown")
    args = p.parse_args(argv)
    store = SqliteStore(args.state_dir / "journal.db")
    retry = RetryPolicy(args.attempts, args.interval, args.backoff, 60.0)
    limits = {"max_run_records": args.max_run_records, "run_records_warn": args.max_run_records}
    config = JournalConfig(retry=retry, **limits)
    call_options: dict[str, Any] = {"record_failures": args.record_failures == "true"}
    if args.on_unknown:
        call_options["on_unknown"] = args.on_unknown
    agent = Steps(args.url, args.steps) if args.steps else Checkout(args.url, call_options)
    journal = CrashingStore(store, args.crash)
    snap = args.state_dir / "snap"
    options: dict[str, Any] = {"on_run_failure": args.policy}
    if snap.exists():
        runner = LocalRunner.restore(snap, agent, journal, config, **options)
    else:
        runner = LocalRunner(agent, journal, config, **options)
    error = None
    try:
        await runner.run_source(json.loads(args.inputs), snapshot_path=snap, snapshot_every=1)
    except Exception as exc:
        root = exc.__cause__ or exc
        error = f"{type(root).__name__}: {exc}"
    finally:
        store.close()
    print(
        json.dumps(
            {
                "outputs": [[key, event.output] for key, event in runner.outputs],
                "dead_letters": [[d.key, d.seq, d.error_type] for d in runner.dead_letters],
                "error": error,
                "metrics": metrics(runner),
            }
        )
    )


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1:]))
