"""Journals written straight into an SQLite file, for tool tests that need many records fast.

The rows are exactly what :class:`~actionjournal.stores.sqlite.SqliteStore` appends (same
schema, same codec), inserted in one transaction instead of one fsync each.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import CallFinished, JournalRecord, RunCompleted
from actionjournal.stores.sqlite import SqliteStore


def write(path: Path, records: Iterable[JournalRecord | tuple[str, str, bytes]]) -> None:
    """Append ``records`` to the SQLite journal at ``path`` (created if missing); a
    ``(namespace, operator_uid, raw bytes)`` tuple is appended as it is (a corrupt row)."""
    SqliteStore(path).close()
    codec = RecordCodec()
    rows = []
    for r in records:
        if isinstance(r, tuple):
            rows.append((r[0], r[1], "k", 0, r[2]))
        else:
            rows.append((r.namespace, r.operator_uid, r.key_id, r.seq, codec.encode(r)))
    db = sqlite3.connect(path)
    try:
        with db:
            db.executemany(
                "INSERT INTO journal (namespace, operator_uid, key_id, seq, body) "
                "VALUES (?,?,?,?,?)",
                rows,
            )
    finally:
        db.close()


def runs(
    key_id: str,
    count: int,
    *,
    namespace: str = "default",
    operator_uid: str = "worker",
    first_seq: int = 0,
    at: float = 1_700_000_000.0,
) -> list[JournalRecord]:
    """``count`` finished runs of one key: a call and a ``RunCompleted`` each, a second apart."""
    out: list[JournalRecord] = []
    for seq in range(first_seq, first_seq + count):
        common = (namespace, operator_uid, 0, key_id, seq)
        t = at + seq
        out.append(
            CallFinished(
                *common,
                action_id=f"a{seq}",
                index=0,
                call_id=f"{seq:032x}",
                function_id="app:call",
                durable_id=None,
                arg_digest="d",
                value=b"\xc0",
                error=None,
                at=t,
                duration=0.001,
            )
        )
        out.append(RunCompleted(*common, at=t, input_digest="i"))
    return out
