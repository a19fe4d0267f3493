"""Core benchmarks: the cost of a durable call on the memory and SQLite stores, and the
throughput of concurrent SQLite appends (group commit)."""

from __future__ import annotations

import resource
import sqlite3
import statistics
import tempfile
import threading
import time
from pathlib import Path

import msgspec

from actionjournal.durable.call_options import CallOptions
from actionjournal.durable.calls import ActionCalls
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.records import CallFinished
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
    """Ours: ``durable_execute`` on the memory store. Baseline: the floor of journaling a call
    in memory: make the call, encode its result and the same ``CallFinished`` record with
    msgspec, append the bytes to a list."""
    opts = CallOptions()
    store = MemoryStore()
    _calls(store).execute(work, (PAYLOAD,), {}, opts)
    record = store.codec.decode(store.entries[-1][3])
    assert isinstance(record, CallFinished)
    encode = msgspec.msgpack.Encoder().encode
    replace = msgspec.structs.replace
    entries: list[bytes] = []

    def floor() -> None:
        value = encode(work(PAYLOAD))
        entries.append(encode(replace(record, value=value, at=time.time())))

    ours = []
    base = []
    for _ in range(3):  # interleave rounds; keep the best of each side
        calls = _calls(MemoryStore())
        ours.append(_per_call_us(lambda c=calls: c.execute(work, (PAYLOAD,), {}, opts), n))
        entries.clear()
        base.append(_per_call_us(floor, n))
    o, b = min(ours), min(base)
    return entry("core.durable_execute.memory", "us/call", o, b, target=3.0)


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


def bench_group_commit(
    threads: int = 64, per_thread: int = 100, raw_n: int = 1000, rounds: int = 5
) -> dict:
    """Ours: ``threads`` threads, one key each, appending through one SQLite store at once.
    Baseline: one thread inserting and committing the same record bytes one at a time on a
    raw connection with the same settings (WAL, ``synchronous=FULL``).

    A round of either side writes more than SQLite's WAL checkpoint interval (1,000 pages), so
    each round pays its share of checkpoints: shorter rounds (40 appends a thread, 400 raw
    commits) sometimes missed one and swung the ratio between 3.4 and 5.1."""
    opts = CallOptions()
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp) / "ours.db")
        _calls(store).execute(work, (PAYLOAD,), {}, opts)
        (body,) = store._db.execute("SELECT body FROM journal ORDER BY pos DESC").fetchone()
        record = store.codec.decode(body)
        raw = sqlite3.connect(Path(tmp) / "raw.db", isolation_level=None)
        raw.execute("PRAGMA journal_mode=WAL")
        raw.execute("PRAGMA synchronous=FULL")
        raw.execute("CREATE TABLE t (pos INTEGER PRIMARY KEY AUTOINCREMENT, k TEXT, body BLOB)")

        commits = []  # rows per commit, for the printout
        commit = store._commit

        def counted(batch: list) -> None:
            commits.append(len(batch))
            commit(batch)

        store._commit = counted  # type: ignore[method-assign]
        costs = []  # (CPU us, voluntary context switches) per record of each round, whole process

        def ours_round() -> float:
            barrier = threading.Barrier(threads + 1)

            def appender(n: int) -> None:
                key = f"key-{n}"
                barrier.wait()
                for seq in range(per_thread):
                    store.append(msgspec.structs.replace(record, key_id=key, seq=seq))

            pool = [threading.Thread(target=appender, args=(n,)) for n in range(threads)]
            for t in pool:
                t.start()
            barrier.wait()
            before = resource.getrusage(resource.RUSAGE_SELF)
            start = time.perf_counter()
            for t in pool:
                t.join()
            elapsed = time.perf_counter() - start
            after = resource.getrusage(resource.RUSAGE_SELF)
            n = threads * per_thread
            cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
            costs.append((cpu / n * 1e6, (after.ru_nvcsw - before.ru_nvcsw) / n))
            return n / elapsed

        def raw_round() -> float:
            start = time.perf_counter()
            for _ in range(raw_n):
                raw.execute("BEGIN")
                raw.execute("INSERT INTO t (k, body) VALUES (?, ?)", ("key", body))
                raw.execute("COMMIT")
            return raw_n / (time.perf_counter() - start)

        ours_round(), raw_round()  # warm-up: each side's WAL file grows to its working size
        costs.clear()
        commits.clear()
        ours, base = [], []
        for _ in range(rounds):  # interleaved rounds, median of each side
            ours.append(ours_round())
            base.append(raw_round())
        store.close()
        raw.close()
    o, b = statistics.median(ours), statistics.median(base)
    print(
        f"group commit: {threads} threads x {per_thread} appends, records/s per round: ours "
        f"{[round(x) for x in ours]}, raw insert+commit loop {[round(x) for x in base]}; "
        f"ours per record (CPU us, voluntary context switches): "
        f"{[(round(c), round(s, 2)) for c, s in costs]}; {len(commits)} commits of "
        f"{sum(commits) / len(commits):.1f} records on average"
    )
    return entry(f"core.sqlite.group_commit.{threads}", "records/s", o, b, target=5.0)


BENCHMARKS = {
    "core.durable_execute.memory": lambda ctx: bench_memory(),
    "core.durable_execute.sqlite": lambda ctx: bench_sqlite(),
    "core.sqlite.group_commit.64": lambda ctx: bench_group_commit(),
}
