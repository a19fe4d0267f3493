"""Cleanup benchmark: seconds to plan over one million journal records on SQLite.

The journal: 10,000 keys x 25 runs x 4 records (two ``CallFinished``, an
``ActionCompleted``, a ``RunCompleted``), written round by round as a job would. The
oldest restorable state is a LocalRunner snapshot in which every key has finished 20
runs; the first key's marker (its 20th ``RunCompleted``) bounds the plan, which deletes
760,003 records and keeps the rest.

Ours: ``make_plan`` (a scan that decodes every record, the per-key rule, the plan
document). Baseline: a raw read of the same rows (``SELECT`` of every column, bytes
untouched), the least any plan has to do.
"""

from __future__ import annotations

import sqlite3
import tempfile
import time
from pathlib import Path

import msgspec

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import (
    ActionCompleted,
    CallFinished,
    EventData,
    Marker,
    RunCompleted,
)
from actionjournal.operator.engine import KeyState
from actionjournal.operator.local import KeySnapshot, Snapshot
from actionjournal.stores import SqliteStore
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.tools.cleanup import CleanupPlan, load_snapshot, make_plan
from benchmarks.common import entry

KEYS = 10_000
RUNS = 25
DONE = 20  # runs every key has finished in the snapshot


def build(path: Path, keys: int = KEYS, runs: int = RUNS) -> tuple[Path, int]:
    """Write the journal straight into SQLite (fast), then a matching snapshot."""
    store = SqliteStore(path)
    identity = store.identity
    store.close()
    codec = RecordCodec()
    ids = [key_id(f"user-{k}") for k in range(keys)]
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA synchronous=OFF")
    db.execute("BEGIN")
    insert = (
        "INSERT INTO journal (pos, namespace, operator_uid, key_id, seq, body) "
        "VALUES (?, 'bench', 'agent', ?, ?, ?)"
    )
    pos = 0
    markers: dict[str, int] = {}
    value = msgspec.msgpack.encode({"text": "x" * 60})
    for seq in range(runs):
        batch = []
        for kid in ids:
            common = ("bench", "agent", 0, kid, seq)
            action = f"action-{seq}"
            for index in range(2):
                record = CallFinished(
                    *common, action_id=action, index=index, call_id=f"c{seq}.{index}",
                    function_id="bench:call", durable_id=None, arg_digest="d", value=value,
                    error=None, at=1.0, duration=0.01,
                )  # fmt: skip
                pos += 1
                batch.append((pos, kid, seq, codec.encode(record)))
            done = ActionCompleted(
                *common, action_id=action, action="handle", memory_ops=[],
                outputs=[EventData("e", "output", value)], at=1.0,
            )  # fmt: skip
            pos += 1
            batch.append((pos, kid, seq, codec.encode(done)))
            pos += 1
            batch.append((pos, kid, seq, codec.encode(RunCompleted(*common, 1.0, "i"))))
            if seq == DONE - 1:
                markers[kid] = pos
        db.executemany(insert, batch)
    db.execute("COMMIT")
    db.close()
    snapshot = path.with_suffix(".snapshot")
    keys_state = [
        KeySnapshot(b"", kid, KeyState(next_seq=DONE, marker=Marker(identity, 0, 0, markers[kid])))
        for kid in ids
    ]
    snap = Snapshot(1, keys * DONE, keys_state, namespace="bench", operator_uid="agent")
    snapshot.write_bytes(msgspec.msgpack.encode(snap))
    return snapshot, pos


def raw_read(path: Path) -> int:
    db = sqlite3.connect(path)
    n = 0
    for _row in db.execute(
        "SELECT pos, namespace, operator_uid, key_id, seq, body FROM journal ORDER BY pos"
    ):
        n += 1
    db.close()
    return n


def plan_once(path: Path, snapshot: Path) -> CleanupPlan:
    store = SqliteStore(path)
    try:
        state = load_snapshot(snapshot, store, "bench", "agent")
        return make_plan(store, SqliteStoreConfig(path=str(path)), "bench", "agent", state)
    finally:
        store.close()


def bench_plan(ctx=None) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.db"
        snapshot, total = build(path)
        ours, base = [], []
        for _ in range(2):  # interleaved; keep the best of each
            start = time.perf_counter()
            assert raw_read(path) == total
            base.append(time.perf_counter() - start)
            start = time.perf_counter()
            plan = plan_once(path, snapshot)
            ours.append(time.perf_counter() - start)
        (partition,) = plan.partitions
        # Up to the first key's marker (its RunCompleted of run DONE - 1): the rest stays.
        assert partition.records_deleted == (DONE - 1) * KEYS * 4 + 3, partition
    scale = 1_000_000 / total
    return entry("cleanup.plan.per_million", "s", min(ours) * scale, min(base) * scale, 10.0)


BENCHMARKS = {"cleanup.plan.per_million": bench_plan}
