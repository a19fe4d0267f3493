"""A one-million-record SQLite journal for the explorer's benchmarks, written straight
into SQLite (fast) with what a job writes: per run two calls, an action, its completion;
every 50th run retries a call once, every 500th is dead-lettered. Times advance 10 ms a
run, ids are distinct, as in a real journal."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import msgspec

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import (
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    ErrorInfo,
    EventData,
    RunCompleted,
    RunFailed,
)
from actionjournal.stores import SqliteStore

NAMESPACE = "bench"
OPERATOR = "agent"
START = 1_767_225_600.0  # 2026-01-01


def run_records(key: str, kid: str, seq: int, at: float, value: bytes) -> list:
    """The records of one run (4, 5 with a retried call, 4 for a dead letter)."""
    common = (NAMESPACE, OPERATOR, 0, kid, seq)
    action = f"{kid[:16]}-{seq}"
    records: list = []
    if seq % 50 == 7:
        error = ErrorInfo("builtins.ConnectionError", "service down", None)
        records.append(
            CallAttemptFailed(
                *common,
                action,
                0,
                f"{action}-c0",
                "bench:call",
                None,
                "d",
                0,
                error,
                at,
                at + 0.001,
            )
        )
    for index in range(2):
        records.append(
            CallFinished(
                *common,
                action,
                index,
                f"{action}-c{index}",
                "bench:call",
                None,
                "d",
                value,
                None,
                at + 0.002 * (index + 1),
                0.001,
                False,
                "handle",
                0,
            )
        )
    if seq % 500 == 3:
        error = ErrorInfo("builtins.ValueError", f"bad input {seq}", None)
        records.append(
            RunFailed(
                *common,
                error,
                at + 0.006,
                "i",
                True,
                msgspec.msgpack.encode({"n": seq}),
                msgspec.msgpack.encode(key),
            )
        )
        return records
    records.append(
        ActionCompleted(
            *common, action, "handle", [], [EventData(f"{action}-e", "output", value)], at + 0.005
        )
    )
    records.append(RunCompleted(*common, at + 0.006, "i"))
    return records


def build(path: Path, records: int = 1_000_000, keys: int = 10_000) -> int:
    """Write about ``records`` records over ``keys`` keys; returns how many were written."""
    SqliteStore(path).close()
    codec = RecordCodec()
    value = msgspec.msgpack.encode({"text": "x" * 60})
    names = [f"user-{k}" for k in range(keys)]
    ids = [key_id(name) for name in names]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    insert = (
        "INSERT INTO journal (pos, namespace, operator_uid, key_id, seq, body) "
        f"VALUES (?, '{NAMESPACE}', '{OPERATOR}', ?, ?, ?)"
    )
    pos = run = 0
    while pos < records:
        seq, k = divmod(run, keys)
        batch = []
        for record in run_records(names[k], ids[k], seq, START + run * 0.01, value):
            pos += 1
            batch.append((pos, ids[k], seq, codec.encode(record)))
        db.executemany(insert, batch)
        run += 1
    db.execute("COMMIT")
    db.close()
    return pos
