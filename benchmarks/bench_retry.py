"""Retry benchmark: what a journaled retry with backoff costs over a hand-written loop, and
over the same loop journaling the same records synchronously (the durability floor)."""

from __future__ import annotations

import asyncio
import functools
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, RetryPolicy
from actionjournal import action as on
from actionjournal.stores import SqliteStore
from benchmarks.common import entry

RUNS = 1_000
BACKOFF_S = 0.001
_failed: set[int] = set()


def flaky(i: int) -> int:
    """Fails its first attempt (a connection error, retried by default), then succeeds."""
    if i not in _failed:
        _failed.add(i)
        raise ConnectionError("temporarily unavailable")
    return i


class Retrying(Agent):
    uid = "bench-retry"

    @on(InputEvent)
    async def handle(self, event, ctx):
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(flaky, event.input)))


def ours(directory: Path) -> tuple[float, list[bytes]]:
    """1,000 runs of one key, one after the other, each call failing once: SQLite journal.
    Also returns the bytes of the first run's records, in journal order."""
    _failed.clear()
    retry = RetryPolicy(max_attempts=3, initial_interval=BACKOFF_S, backoff=1.0)
    store = SqliteStore(directory / f"journal-{time.monotonic_ns()}.db")
    runner = LocalRunner(Retrying(), store, JournalConfig(retry=retry))
    started = time.perf_counter()
    asyncio.run(runner.run([("k", i) for i in range(RUNS)]))
    elapsed = time.perf_counter() - started
    rows = store._db.execute("SELECT body FROM journal WHERE seq = 0 ORDER BY pos").fetchall()
    store.close()
    assert len(runner.outputs) == RUNS
    assert runner.metrics.value("actionjournal_call_attempts_total", result="retried") == RUNS
    return elapsed, [body for (body,) in rows]


def hand_written(journal: Callable[[str], None] | None = None) -> float:
    """The same calls with a hand-written retry loop and the same backoff. ``journal(what)``,
    when given, is told each failed attempt (``"failed"``), each result (``"finished"``) and
    each run's end (``"completed"``) as they happen."""
    _failed.clear()
    started = time.perf_counter()
    for i in range(RUNS):
        for attempt in range(3):
            try:
                flaky(i)
                break
            except ConnectionError:
                if attempt == 2:
                    raise
                if journal is not None:
                    journal("failed")
                time.sleep(BACKOFF_S)
        if journal is not None:
            journal("finished")
            journal("completed")
    return time.perf_counter() - started


def durability_floor(directory: Path, bodies: list[bytes]) -> float:
    """:func:`hand_written`, appending the bytes of our records synchronously to a raw SQLite
    file with the same settings (WAL, ``synchronous=FULL``), committed as ours commits them:
    ``CallAttemptFailed`` before the backoff, ``CallFinished``, then ``ActionCompleted`` and
    ``RunCompleted`` together."""
    failed, finished, action_completed, run_completed = bodies
    commits = {
        "failed": [failed],
        "finished": [finished],
        "completed": [action_completed, run_completed],
    }
    db = sqlite3.connect(directory / f"floor-{time.monotonic_ns()}.db", isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=FULL")
    db.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT, body BLOB)")

    def journal(what: str) -> None:
        db.execute("BEGIN")
        for body in commits[what]:
            db.execute("INSERT INTO t (k, body) VALUES (?, ?)", ("k", body))
        db.execute("COMMIT")

    elapsed = hand_written(journal)
    (rows,) = db.execute("SELECT COUNT(*) FROM t").fetchone()
    db.close()
    assert rows == 4 * RUNS
    return elapsed


@functools.cache
def _rounds() -> tuple[list[float], list[float], list[float]]:
    """Ours, the loop without journal and the durability floor, in interleaved rounds: both
    entries come from the same measurements."""
    mine, plain, floor = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):
            elapsed, bodies = ours(Path(tmp))
            mine.append(elapsed)
            plain.append(hand_written())
            floor.append(durability_floor(Path(tmp), bodies))
    return mine, plain, floor


def bench_backoff_overhead() -> list[dict]:
    mine, plain, floor = _rounds()
    note = (
        f"{RUNS} runs of one key in sequence, each call failing once with ConnectionError and "
        f"retried after {BACKOFF_S * 1000:g} ms; journal on SQLite (synchronous=FULL): "
        "CallAttemptFailed, CallFinished, ActionCompleted, RunCompleted per run, in three "
        "commits; each retry logs one WARNING line (logging's default handler, to stderr)"
    )
    overhead = entry(
        "retry.backoff.overhead", "s", statistics.median(mine), statistics.median(plain), 2.0
    )
    against_floor = entry(
        "retry.backoff.overhead.floor",
        "s",
        statistics.median(mine),
        statistics.median(floor),
        2.0,
    )
    overhead["note"] = against_floor["note"] = note
    return [overhead, against_floor]


BENCHMARKS = {"retry.backoff.overhead": lambda ctx: bench_backoff_overhead()}
