"""Core benchmarks: the cost of a durable call on the memory and SQLite stores."""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

from actionjournal.durable.calls import ActionCalls, CallOptions
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.replay import RecordedAction
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.writer import RunWriter
from actionjournal.stores import MemoryStore, SqliteStore
from benchmarks.common import entry

PAYLOAD = {"text": "x" * 150, "score": 0.5}


def work(value: dict) -> dict:
    return value


def _calls(store) -> ActionCalls:
    """Durable calls as a run makes them: counted, timed and metered like in the engine."""
    config = JournalConfig()
    metrics = JournalMetrics()
    values = config.value_codec()
    values.observer = metrics
    writer = RunWriter(store, "bench", "op", 0, "key", 0, metrics)
    return ActionCalls(writer, "action", "act", RecordedAction(), config, values, metrics)


def _per_call_us(fn, n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def bench_memory(n: int = 20_000) -> dict:
    opts = CallOptions()
    ours = []
    base = []
    for _ in range(3):  # interleave rounds; keep the best of each side
        calls = _calls(MemoryStore())
        ours.append(_per_call_us(lambda c=calls: c.execute(work, (PAYLOAD,), {}, opts), n))
        base.append(_per_call_us(lambda: work(PAYLOAD), n))
    o, b = min(ours), min(base)
    return entry("core.durable_execute.memory", "us/call", o, b, target=20.0)


def bench_sqlite(n: int = 300) -> dict:
    opts = CallOptions()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "ours.db")
        calls = _calls(store)
        raw = sqlite3.connect(Path(tmp) / "raw.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=FULL")
        raw.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT, body BLOB)")
        # Same bytes as our CallFinished record, so only the overhead differs.
        calls.execute(work, (PAYLOAD,), {}, opts)
        (body,) = store._db.execute("SELECT body FROM journal ORDER BY pos DESC").fetchone()
        assert RecordCodec().decode(body)
        ours, base = [], []
        for _ in range(5):
            ours.append(_per_call_us(lambda: calls.execute(work, (PAYLOAD,), {}, opts), n))
            base.append(
                _per_call_us(
                    lambda: raw.execute("INSERT INTO t (k, body) VALUES (?, ?)", ("key", body)), n
                )
            )
        store.close()
        raw.close()
    o, b = sorted(ours)[len(ours) // 2], sorted(base)[len(base) // 2]
    return entry("core.durable_execute.sqlite", "us/call", o, b, target=1.5)


BENCHMARKS = {
    "core.durable_execute.memory": lambda ctx: bench_memory(),
    "core.durable_execute.sqlite": lambda ctx: bench_sqlite(),
}
