"""``make demo``: a ticket-triage agent that is killed mid-run and recovers.

A local HTTP service counts executions. The agent runs in a real PyFlink job
(a local MiniCluster) on the embedded SQLite journal, with checkpoints every
half second. Its Python worker is SIGKILLed right after a call reached the
service but before the call's result was journaled (the worst window); Flink
restarts the task from the last checkpoint, the journal is replayed, and the
call's reconciler asks the service what happened instead of calling again.
``--local`` runs the same agent on the local runner instead, killing and
restoring a child process. Executions and duplicates are counted by the service.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
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
from actionjournal.dev.java import missing_java
from actionjournal.stores import SqliteStore
from actionjournal.testing.crash import CrashingStore
from actionjournal.testing.service import CountingService
from actionjournal.tools.toolkit import (
    ArgumentParser,
    ToolError,
    UsageError,
    positive_int,
    run_tool,
)

CRASH_AT = "before:CallFinished:10"
MARKER = ".actionjournal-demo"
# Everything the demo writes into its directory (both modes): all it ever deletes there.
DEMO_FILES = (
    "journal.db",
    "journal.db-wal",
    "journal.db-shm",
    "journal.db-journal",
    "checkpoints",
    "outputs.jsonl",
    "stats.jsonl",
    "worker-killed",
    "snapshot",
    "snapshot.tmp",
    "final",
    "final.tmp",
)


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

    def __init__(self, url: str, reconcile: bool = True) -> None:
        self.url = url
        self.reconciler = probe_service(url) if reconcile else None

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


async def run_local(state: Path, agent: Agent, store: Any, n: int) -> dict[str, int]:
    """Run ``tickets(n)`` on the local runner, resuming from ``state/snapshot`` if present.

    Snapshots every two inputs; outputs go to ``state/outputs.jsonl`` as they are emitted,
    and the final keyed state to ``state/final``.
    """
    snapshot = state / "snapshot"
    with open(state / "outputs.jsonl", "a") as sink:

        def emit(key: Any, event: Event) -> None:
            sink.write(json.dumps([key, event.id, event.attributes["output"]]) + "\n")
            sink.flush()

        if snapshot.exists():
            runner = LocalRunner.restore(snapshot, agent, store, on_output=emit)
        else:
            runner = LocalRunner(agent, store, on_output=emit)
        await runner.run_source(tickets(n), snapshot_path=snapshot, snapshot_every=2, pace=0.002)
    runner.snapshot(state / "final")
    return runner.counts


async def child(state: Path, url: str, n: int, crash_at: str | None) -> dict[str, int]:
    store = CrashingStore(SqliteStore(state / "journal.db"), crash_at)
    return await run_local(state, Triage(url), store, n)


def run_child(state: Path, url: str, n: int, crash_at: str | None) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "actionjournal.tools.demo", "--child", str(state), url, str(n)]
    if crash_at:
        cmd += ["--crash-at", crash_at]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300)


def local_demo(directory: Path, n: int, service: CountingService) -> tuple[dict, int] | None:
    """Kill a local-runner child process for real, restore its snapshot in a new one."""
    print(
        f"demo: running the agent in a child process, to be SIGKILLed at {CRASH_AT}...", flush=True
    )
    first = run_child(directory, service.url, n, CRASH_AT)
    if first.returncode != -9:
        print(first.stderr, file=sys.stderr)
        print("demo: the first run was expected to be killed but was not", file=sys.stderr)
        return None
    service.wait_idle()
    print(f"demo: process killed by SIGKILL at {CRASH_AT} after {service.executions()} calls")
    print("demo: restoring the last snapshot in a new process...", flush=True)
    second = run_child(directory, service.url, n, None)
    if second.returncode != 0:
        print(second.stderr, file=sys.stderr)
        print("demo: the restored run failed", file=sys.stderr)
        return None
    lines = (directory / "outputs.jsonl").read_text().splitlines()
    unique = {event_id for _, event_id, _ in map(json.loads, lines)}
    return json.loads(second.stdout.strip().splitlines()[-1]), len(unique)


def flink_demo(directory: Path, n: int, service: CountingService) -> tuple[dict, int] | None:
    """Run the agent in a PyFlink job whose Python worker is killed once mid-run."""
    from pyflink.common import Types

    from actionjournal.flink.config import AgentsConfig
    from actionjournal.flink.function import AgentsExecutionEnvironment
    from actionjournal.stores.config import SqliteStoreConfig
    from actionjournal.stores.factory import open_store
    from actionjournal.testing.crash import CrashOnce
    from actionjournal.testing.flink import JsonLines, local_env, paced_source

    print("demo: starting a local Flink cluster (a MiniCluster in a JVM)...", flush=True)
    env = local_env(directory / "checkpoints", checkpoint_interval_ms=500, restarts=2)
    stats = directory / "stats.jsonl"
    agents = AgentsExecutionEnvironment.get_execution_environment(
        env, AgentsConfig(stats_file=str(stats))
    )
    journal = functools.partial(open_store, SqliteStoreConfig(path=str(directory / "journal.db")))
    store = CrashOnce(str(directory / "worker-killed"), CRASH_AT, journal)
    elements = [json.dumps({"user": user, **ticket}) for user, ticket in tickets(n)]
    # Slow enough that every user still has tickets coming after the failure: see the
    # known limit in docs/flink.md (a key without later input is not resumed).
    source = paced_source(env, elements, per_second=3)
    parsed = source.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
    job = agents.from_datastream(parsed, key_selector=_user).apply(
        Triage(service.url), store_factory=store
    )
    sink = JsonLines(directory / "outputs.jsonl")
    job.to_datastream().map(sink)
    print(
        f"demo: running the job: {n} tickets at 3 per second; its Python worker is SIGKILLed "
        f"at {CRASH_AT} and Flink restores the last checkpoint...",
        flush=True,
    )
    env.execute("actionjournal-demo")
    outputs = sink.read()
    if not (directory / "worker-killed").exists():
        print("demo: the Python worker was expected to be killed but was not", file=sys.stderr)
        return None
    print(f"demo: the Python worker was SIGKILLed at {CRASH_AT}; Flink restored the checkpoint")
    counts: dict[str, int] = {}
    for line in stats.read_text().splitlines():
        for name, value in json.loads(line).items():
            counts[name] = counts.get(name, 0) + value
    return counts, len({o["id"] for o in outputs})


def _user(ticket: dict[str, Any]) -> str:
    return ticket["user"]


def parser() -> ArgumentParser:
    p = ArgumentParser(prog="actionjournal demo", description=__doc__.split("\n\n")[0])
    p.add_argument("--inputs", type=positive_int, default=12, help="tickets to triage")
    p.add_argument(
        "--dir",
        type=Path,
        default=Path(".demo"),
        help="the demo's working directory: new, empty, or one an earlier demo made (only "
        "what the demo made there is ever deleted)",
    )
    p.add_argument("--local", action="store_true", help="use the local runner, not PyFlink")
    p.add_argument("--child", nargs=3, metavar=("STATE", "URL", "N"), help=argparse.SUPPRESS)
    p.add_argument("--crash-at", help=argparse.SUPPRESS)
    return p


def prepare(directory: Path) -> None:
    """Make ``directory`` the demo's: new or empty, or made by an earlier demo (then the
    files that demo made are removed). Anything else is refused: it may be someone's."""
    if directory.exists() and not directory.is_dir():
        raise ToolError(f"--dir {directory} is a file, not a directory")
    marker = directory / MARKER
    if directory.is_dir() and any(directory.iterdir()) and not marker.exists():
        raise ToolError(
            f"--dir {directory} is not empty and was not made by the demo (it has no {MARKER} "
            "file): give a new or empty directory, or delete this one yourself if a demo of an "
            "older release made it (the demo never deletes files it did not make)"
        )
    directory.mkdir(parents=True, exist_ok=True)
    for name in DEMO_FILES:
        path = directory / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    marker.write_text("made by `actionjournal demo`; it deletes only the files it made here\n")


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.child:
        state, url, n = Path(args.child[0]), args.child[1], int(args.child[2])
        print(json.dumps(asyncio.run(child(state, url, n, args.crash_at))))
        return 0
    if args.inputs < 1:
        raise UsageError("--inputs: give at least 1 ticket")
    problem = None if args.local else missing_java()
    if problem is not None:  # before anything starts or is written
        raise ToolError(problem)
    prepare(args.dir)
    where = "the local runner" if args.local else "a PyFlink job"
    print(
        f"demo: triaging {args.inputs} tickets in {where} on SQLite ({args.dir / 'journal.db'})",
        flush=True,
    )
    with CountingService() as service:
        run = local_demo if args.local else flink_demo
        finished = run(args.dir, args.inputs, service)
        if finished is None:
            return 1
        counts, distinct = finished
        service.wait_idle()
        executed = service.executions()
        duplicated = sum(1 for n in service.counts.values() if n > 1)
    print(f"demo: {distinct} distinct outputs for {args.inputs} tickets")
    # Finished work taken from the journal instead of being done again: whole actions
    # skipped (their memory updates and events re-applied) plus calls returned from records.
    replayed = counts["actions_replayed"] + counts["replayed"]
    print(
        f"demo: after the failure {counts['actions_replayed']} finished actions and "
        f"{counts['replayed']} finished calls were replayed, {counts['unknown']} calls had an "
        f"unknown outcome ({counts['reconciled']} settled by the reconciler, the rest never "
        "reached the service and ran once)"
    )
    print(
        f"demo: inputs={args.inputs} executed={executed} replayed={replayed} "
        f"reconciled={counts['reconciled']} duplicated={duplicated}"
    )
    return 0 if duplicated == 0 and distinct == args.inputs else 1


if __name__ == "__main__":
    sys.exit(run_tool(main, sys.argv[1:]))
