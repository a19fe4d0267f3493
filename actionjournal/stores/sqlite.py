"""The embedded default store: one SQLite file in WAL mode.

An append is a committed transaction with ``synchronous=FULL``: durable when it
returns, across a process kill and a power cut. Positions come from an
AUTOINCREMENT column, so they never repeat, even after cleanup deletes rows.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from pathlib import Path

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import JournalWriteError, StoreError
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity
from actionjournal.durable.stats import note_append
from actionjournal.stores.base import ActionStateStore

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS journal (
    pos INTEGER PRIMARY KEY AUTOINCREMENT,
    namespace TEXT NOT NULL,
    operator_uid TEXT NOT NULL,
    key_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    body BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_by_key ON journal (namespace, operator_uid, key_id, pos);
"""


class SqliteStore(ActionStateStore):
    def __init__(self, path: str | Path, codec: RecordCodec | None = None) -> None:
        self.path = Path(path)
        self.codec = codec or RecordCodec()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.executescript(_SCHEMA)
            self._db.execute(
                "INSERT OR IGNORE INTO meta (k, v) VALUES ('store_uid', ?)", (uuid.uuid4().hex,)
            )
            (store_uid,) = self._db.execute("SELECT v FROM meta WHERE k = 'store_uid'").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite journal {self.path}: {exc}; check the path and its permissions"
            ) from exc
        self.identity = StoreIdentity("sqlite", str(self.path.resolve()), store_uid)
        self._lock = threading.Lock()

    def append(self, record: JournalRecord) -> Marker:
        started = time.perf_counter()
        data = self.codec.encode(record)
        try:
            with self._lock:
                cursor = self._db.execute(
                    "INSERT INTO journal (namespace, operator_uid, key_id, seq, body) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (record.namespace, record.operator_uid, record.key_id, record.seq, data),
                )
        except sqlite3.Error as exc:
            raise JournalWriteError(
                f"SQLite journal {self.path} did not commit a {type(record).__name__} for key "
                f"{record.key_id} seq {record.seq}: {exc}; the record is not kept"
            ) from exc
        note_append("sqlite", len(data), started)
        return self.marker(record.key_id, cursor.lastrowid or 0, record.epoch)

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        start = after.position if after is not None else -1
        with self._lock:
            (end,) = self._db.execute("SELECT COALESCE(MAX(pos), 0) FROM journal").fetchone()
            rows = self._db.execute(
                "SELECT pos, body FROM journal WHERE namespace = ? AND operator_uid = ? "
                "AND key_id IN (?, '') AND pos > ? AND pos <= ? ORDER BY pos",
                (namespace, operator_uid, key_id, start, end),
            ).fetchall()
        return [self.codec.decode(body, f"{self.path} row {pos}") for pos, body in rows]

    def earliest_position(self, key_id: str) -> int:
        with self._lock:
            (low,) = self._db.execute("SELECT MIN(pos) FROM journal").fetchone()
            if low is None:  # empty: everything up to the last position ever used was deleted
                row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'")
                last = row.fetchone()
                return (last[0] + 1) if last else 1
        return low

    def close(self) -> None:
        with self._lock:
            self._db.close()
