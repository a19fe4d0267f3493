"""Example 1's wall clock: a review judged on two aspects in parallel, then aggregated.

Ours: median seconds per review of the parallel sentiment agent on the local runner,
journaling to SQLite (WAL, synchronous=FULL), against the local test model server over
real HTTP. Baseline: the latencies configured on that server for the slowest branch plus
the aggregation, i.e. what a perfectly parallel run would take. The ratio is our
overhead: the branch fan-out, the fan-in, three journaled calls and nine actions.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from pathlib import Path

from actionjournal import LocalRunner
from actionjournal.stores import SqliteStore
from actionjournal.testing.model_server import ModelServer
from benchmarks.common import entry
from examples.parallel_sentiment.agent import (
    REVIEWS,
    TEST_LATENCY,
    ParallelSentiment,
    chat_models,
    restaurant_of,
)


def bench_parallel_wall(ctx: object = None, rounds: int = 7) -> dict:
    branch = max(TEST_LATENCY["taste-judge"], TEST_LATENCY["service-judge"])
    baseline = branch + TEST_LATENCY["summarizer"]
    with tempfile.TemporaryDirectory() as tmp, ModelServer(latency=TEST_LATENCY) as server:
        store = SqliteStore(Path(tmp) / "journal.db")
        runner = LocalRunner(ParallelSentiment(chat_models(server.url)), store)

        async def one(review: dict) -> float:
            started = time.perf_counter()
            runner.submit(restaurant_of(review), review)
            await runner.drain()
            return time.perf_counter() - started

        async def measure() -> list[float]:
            await one(REVIEWS[0])  # warm-up: imports, HTTP clients, worker threads
            return [await one(REVIEWS[i % len(REVIEWS)]) for i in range(rounds)]

        walls = asyncio.run(measure())
        store.close()
        assert server.count() == 3 * (rounds + 1), "a review did not make exactly three calls"
    return entry("examples.parallel.wall", "s/review", statistics.median(walls), baseline, 1.10)


BENCHMARKS = {"examples.parallel.wall": bench_parallel_wall}
