"""Peer benchmarks: DBOS Transact's and Restate's step checkpointing vs our durable call.

One workflow is N steps, each step one call of the same function with the same ~200-byte
payload:

* DBOS: a ``@DBOS.workflow()`` calling a ``@DBOS.step()`` N times, its system database on a
  local PostgreSQL server (started here, durable defaults: fsync and synchronous_commit on).
* ours: one run of an agent whose action calls ``ctx.durable_execute`` N times, through the
  local runner (a new key per workflow, as DBOS gets a new workflow id), on SQLite (WAL,
  synchronous=FULL) and on Kafka (acks=all, local broker).
* without durability: the same loop of plain calls.

Per-step overhead = (median workflow wall time - median plain wall time) / N, all four
measured in interleaved rounds in one process. Each side pays its whole per-workflow cost
(DBOS: workflow status rows; ours: ActionCompleted and RunCompleted records, the key's
journal lookup), spread over the N steps. Entries ``peer.dbos.step.sqlite`` and
``peer.dbos.step.kafka``: ours / DBOS per-step overhead in microseconds, goal below 1.0.

``peer.restate.step.sqlite``: the same per-step overhead of ours on SQLite against Restate
(benchmarks/restate_server.py starts the server): a service handler making N ``ctx.run`` steps,
invoked through the ingress, minus the same handler making N plain calls (Restate's cost of
an invocation is left out of its side; ours keeps its per-run records). Goal: below 0.25.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from benchmarks.common import BenchContext, entry, unavailable
from benchmarks.postgres import ServiceUnavailable

STEPS = 20
WORKFLOWS = 25  # per side per round
ROUNDS = 3
PAYLOAD = {"text": "x" * 150, "score": 0.5}
TARGET = 1.0


def work(payload: dict, i: int) -> dict:
    return {**payload, "i": i}


def plain_workflow(payload: dict) -> int:
    total = 0
    for i in range(STEPS):
        total += work(payload, i)["i"]
    return total


class Steps(Agent):
    uid = "peer-bench"

    @action(InputEvent)
    def handle(self, event, ctx):
        total = 0
        for i in range(STEPS):
            total += ctx.durable_execute(work, event.input, i)["i"]
        ctx.send_event(OutputEvent(total))


class OurWorkflows:
    """Runs workflows through one local runner on one store, as a job would."""

    def __init__(self, store: Any) -> None:
        self.store = store
        self.runner = LocalRunner(Steps(), store)
        self.loop = asyncio.new_event_loop()

    def __call__(self, payload: dict) -> int:
        self.loop.run_until_complete(self._one(payload))
        return self.runner.outputs[-1][1].output

    async def _one(self, payload: dict) -> None:
        self.runner.submit(uuid.uuid4().hex, payload)
        await self.runner.drain()

    def close(self) -> None:
        self.loop.close()
        self.store.close()


def _dbos(pg_url: str) -> tuple[Callable[[dict], int], Callable[[], None]]:
    try:
        from dbos import DBOS
    except ImportError as exc:
        raise ServiceUnavailable(
            f"DBOS Transact is not installed ({exc}); install it with "
            "`.venv/bin/pip install -e '.[bench]'` (make bench does)"
        ) from None
    logging.getLogger("dbos").setLevel(logging.WARNING)
    database = f"aj_peer_bench_{uuid.uuid4().hex[:8]}"
    url = pg_url.rsplit("/", 1)[0] + "/" + database
    DBOS(config={"name": "aj-peer-bench", "system_database_url": url, "log_level": "WARNING"})

    @DBOS.step()
    def dbos_work(payload: dict, i: int) -> dict:
        return work(payload, i)

    @DBOS.workflow()
    def dbos_workflow(payload: dict) -> int:
        total = 0
        for i in range(STEPS):
            total += dbos_work(payload, i)["i"]
        return total

    DBOS.launch()
    return dbos_workflow, lambda: DBOS.destroy(destroy_registry=True)


def _wall(fn: Callable[[dict], int], n: int) -> list[float]:
    expected = sum(range(STEPS))
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        got = fn(PAYLOAD)
        samples.append(time.perf_counter() - start)
        assert got == expected, f"workflow returned {got}, expected {expected}"
    return samples


def bench_peer(ctx: BenchContext) -> list[dict]:
    from actionjournal.stores import SqliteStore
    from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

    pg_url = ctx.postgres  # raises ServiceUnavailable with the reason
    dbos_workflow, dbos_stop = _dbos(pg_url)
    tmp = tempfile.TemporaryDirectory()
    sides: dict[str, Callable[[dict], int]] = {"plain": plain_workflow, "dbos": dbos_workflow}
    ours: list[OurWorkflows] = []
    missing: list[dict] = []
    try:
        ours.append(OurWorkflows(SqliteStore(Path(tmp.name) / "peer.db")))
        sides["sqlite"] = ours[-1]
        try:
            topic = f"aj-peer-bench-{uuid.uuid4().hex[:12]}"
            kafka = KafkaStore(KafkaStoreConfig(bootstrap_servers=ctx.kafka, topic=topic))
            ours.append(OurWorkflows(kafka))
            sides["kafka"] = ours[-1]
        except Exception as exc:  # the SQLite entry is still worth having
            reason = f"no Kafka broker could be started or reached: {exc}"
            print(f"peer.dbos.step.kafka: not measured: {reason}")
            missing.append(unavailable("peer.dbos.step.kafka", reason))
        samples: dict[str, list[float]] = {name: [] for name in sides}
        for fn in sides.values():  # warm up: connections, tables, code paths
            _wall(fn, 3)
        for _ in range(ROUNDS):
            for name, fn in sides.items():
                samples[name].extend(_wall(fn, WORKFLOWS))
    finally:
        for side in ours:
            side.close()
        dbos_stop()
        tmp.cleanup()

    plain = statistics.median(samples["plain"])

    def per_step_us(name: str) -> float:
        return (statistics.median(samples[name]) - plain) / STEPS * 1e6

    dbos = per_step_us("dbos")
    print(
        f"peer: {STEPS} steps per workflow, {ROUNDS} x {WORKFLOWS} workflows per side; per-step "
        f"overhead DBOS+PostgreSQL {dbos:.0f} us, "
        + ", ".join(f"ours {s} {per_step_us(s):.0f} us" for s in ("sqlite", "kafka") if s in sides)
        + f" (plain workflow {plain * 1e6:.1f} us)"
    )
    note = f"DBOS Transact {_version('dbos')}, {_postgres_version(pg_url)}; {STEPS} steps"
    results = [
        entry(f"peer.dbos.step.{s}", "us/step", per_step_us(s), dbos, TARGET)
        for s in ("sqlite", "kafka")
        if s in sides
    ]
    for r in results:
        r["note"] = note
    return results + missing


def _version(package: str) -> str:
    from importlib.metadata import version

    return version(package)


def _postgres_version(url: str) -> str:
    import psycopg

    try:
        with psycopg.connect(url) as conn:
            (text,) = conn.execute("SHOW server_version").fetchone()
        return f"PostgreSQL {text.split()[0]}"
    except Exception as exc:  # the figures stand without it
        return f"PostgreSQL (version unknown: {exc})"


def bench_restate(ctx: BenchContext) -> dict:
    from actionjournal.stores import SqliteStore
    from benchmarks.restate_server import VERSION, running_restate

    def invoke(ingress, handler: str) -> Callable[[dict], int]:
        return lambda payload: ingress.post(f"/AjPeerBench/{handler}", json=payload).json()

    tmp = tempfile.TemporaryDirectory()
    ours = OurWorkflows(SqliteStore(Path(tmp.name) / "peer.db"))
    try:
        with running_restate("benchmarks.restate_service:app") as ingress:
            sides = {
                "plain": plain_workflow,
                "ours": ours,
                "restate": invoke(ingress, "steps"),
                "restate plain": invoke(ingress, "plain"),
            }
            samples: dict[str, list[float]] = {name: [] for name in sides}
            for fn in sides.values():  # warm up: connections, deployment, code paths
                _wall(fn, 3)
            for _ in range(ROUNDS):
                for name, fn in sides.items():
                    samples[name].extend(_wall(fn, WORKFLOWS))
    finally:
        ours.close()
        tmp.cleanup()
    median = {name: statistics.median(s) for name, s in samples.items()}
    per_step = (median["ours"] - median["plain"]) / STEPS * 1e6
    restate = (median["restate"] - median["restate plain"]) / STEPS * 1e6
    print(
        f"peer: {STEPS} steps per workflow, {ROUNDS} x {WORKFLOWS} per side; per-step overhead "
        f"Restate {restate:.0f} us (handler with steps {median['restate'] * 1e3:.1f} ms, "
        f"without {median['restate plain'] * 1e3:.1f} ms), ours sqlite {per_step:.0f} us"
    )
    result = entry("peer.restate.step.sqlite", "us/step", per_step, restate, 0.25)
    result["note"] = (
        f"restate-server {VERSION}, restate-sdk {_version('restate-sdk')} on hypercorn "
        f"{_version('hypercorn')}; {STEPS} steps"
    )
    return result


BENCHMARKS = {"peer.dbos.step": bench_peer, "peer.restate.step.sqlite": bench_restate}

if __name__ == "__main__":
    from benchmarks.run import main

    raise SystemExit(main(["--only", "peer."]))
