"""Retry benchmark: what a journaled retry with backoff costs over a hand-written loop."""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
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


def ours(directory: Path) -> float:
    """1,000 runs of one key, one after the other, each call failing once: SQLite journal."""
    _failed.clear()
    retry = RetryPolicy(max_attempts=3, initial_interval=BACKOFF_S, backoff=1.0)
    store = SqliteStore(directory / f"journal-{time.monotonic_ns()}.db")
    runner = LocalRunner(Retrying(), store, JournalConfig(retry=retry))
    started = time.perf_counter()
    asyncio.run(runner.run([("k", i) for i in range(RUNS)]))
    elapsed = time.perf_counter() - started
    store.close()
    assert len(runner.outputs) == RUNS
    assert runner.metrics.value("actionjournal_call_attempts_total", result="retried") == RUNS
    return elapsed


def baseline() -> float:
    """The same calls with a hand-written retry loop and the same backoff, no journal."""
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
                time.sleep(BACKOFF_S)
    return time.perf_counter() - started


def bench_backoff_overhead() -> dict:
    mine, theirs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(3):  # interleaved rounds; the median of each side
            mine.append(ours(Path(tmp)))
            theirs.append(baseline())
    result = entry(
        "retry.backoff.overhead", "s", statistics.median(mine), statistics.median(theirs), 2.0
    )
    result["note"] = (
        f"{RUNS} runs of one key in sequence, each call failing once with ConnectionError and "
        f"retried after {BACKOFF_S * 1000:g} ms; journal on SQLite (synchronous=FULL): "
        "CallAttemptFailed, CallFinished, ActionCompleted, RunCompleted per run"
    )
    return result


BENCHMARKS = {"retry.backoff.overhead": lambda ctx: bench_backoff_overhead()}
