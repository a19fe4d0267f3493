"""The embedded default store: one SQLite file in WAL mode.

An append is a committed transaction with ``synchronous=FULL``: durable when it
returns, across a process kill and a power cut. Positions come from an
AUTOINCREMENT column, so they never repeat, even after cleanup deletes rows.

Group commit: appends made while a commit is in progress (other keys' runs, on other
threads) wait in a queue, and the next commit takes them all: one transaction and one
fsync for the lot, each appender returning once that commit is done.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from actionjournal.durable.codec import FLAG_SIGNED, RecordCodec
from actionjournal.durable.errors import JournalWriteError, RecordError, StoreError
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity
from actionjournal.durable.stats import note_append
from actionjournal.stores.base import (
    MaintenanceStore,
    Progress,
    ScanFilter,
    ScannedRecord,
    decode_range,
)
from actionjournal.stores.quarantine import KeyRead, store_options

_SCAN_BATCH = 20_000
_DELETE_BATCH = 20_000

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


@dataclass(eq=False)
class _Pending:
    record: JournalRecord
    data: bytes
    position: int = 0
    done: bool = False
    error: JournalWriteError | None = None


class SqliteStore(MaintenanceStore):
    """``read_only=True`` (the inspect tools): an existing journal, never written to, and no
    file created next to it (see :func:`_connect_read_only`)."""

    def __init__(
        self, path: str | Path, codec: RecordCodec | None = None, *, read_only: bool = False
    ) -> None:
        self.path = Path(path)
        self.codec = codec or RecordCodec()
        try:
            if read_only:
                self._db = _connect_read_only(self.path)
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._db = sqlite3.connect(self.path, check_same_thread=False, isolation_level=None)
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=FULL")
                self._db.execute("PRAGMA busy_timeout=10000")
                self._db.executescript(_SCHEMA)
                self._db.execute(
                    "INSERT OR IGNORE INTO meta (k, v) VALUES ('store_uid', ?)",
                    (uuid.uuid4().hex,),
                )
            (store_uid,) = self._db.execute("SELECT v FROM meta WHERE k = 'store_uid'").fetchone()
        except sqlite3.Error as exc:
            raise StoreError(
                f"cannot open SQLite journal {self.path}: {exc}; check the path and its permissions"
            ) from exc
        self.identity = StoreIdentity("sqlite", str(self.path.resolve()), store_uid)
        self._lock = threading.Lock()  # the connection
        self._commits = threading.Condition()  # the queue of appends waiting for a commit
        self._queue: list[_Pending] = []
        self._committing = False

    def append(self, record: JournalRecord) -> Marker:
        return self.append_all([record])[0]

    def append_all(self, records: Sequence[JournalRecord]) -> list[Marker]:
        """The records go in one transaction, in order (with whatever else is queued then)."""
        if not records:
            return []
        started = time.perf_counter()
        batch = [_Pending(record, self.codec.encode(record)) for record in records]
        leading: list[_Pending] = []
        with self._commits:
            self._queue.extend(batch)  # together: whichever commit takes one takes all
            while not batch[-1].done and self._committing:
                self._commits.wait()
            if not batch[-1].done:  # lead: commit everything queued so far in one transaction
                leading, self._queue = self._queue, []
                self._committing = True
        if leading:
            self._commit(leading)
        markers = []
        for pending in batch:
            if pending.error is not None:
                raise pending.error
            note_append("sqlite", len(pending.data), started)
            record = pending.record
            markers.append(self.marker(record.key_id, pending.position, record.epoch))
        return markers

    def _commit(self, batch: list[_Pending]) -> None:
        """Group commit: concurrent appends share one transaction and one fsync."""
        try:
            with self._lock:
                try:
                    self._db.execute("BEGIN IMMEDIATE")
                    for p in batch:
                        r = p.record
                        cursor = self._db.execute(
                            "INSERT INTO journal (namespace, operator_uid, key_id, seq, body) "
                            "VALUES (?, ?, ?, ?, ?)",
                            (r.namespace, r.operator_uid, r.key_id, r.seq, p.data),
                        )
                        p.position = cursor.lastrowid or 0
                    self._db.execute("COMMIT")
                except sqlite3.Error as exc:
                    if self._db.in_transaction:
                        self._db.execute("ROLLBACK")
                    for p in batch:
                        p.error = JournalWriteError(
                            f"SQLite journal {self.path} did not commit a "
                            f"{type(p.record).__name__} for key {p.record.key_id} seq "
                            f"{p.record.seq}: {exc}; the record is not kept"
                        )
        finally:
            with self._commits:
                for p in batch:
                    p.done = True
                self._committing = False
                self._commits.notify_all()

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
        read = KeyRead(str(self.path), "row", 0, namespace, operator_uid, key_id, self.tool_options)
        return decode_range(self.codec, rows, start + 1, end + 1, read)

    def tool_options(self) -> str:
        return store_options(self.codec, store="sqlite", path=self.identity.name)

    def earliest_position(self, key_id: str) -> int:
        with self._lock:
            (low,) = self._db.execute("SELECT MIN(pos) FROM journal").fetchone()
            if low is None:  # empty: everything up to the last position ever used was deleted
                row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'")
                last = row.fetchone()
                return int(last[0]) + 1 if last else 1
        return int(low)

    # -- operator tools -------------------------------------------------------------------

    def position_range(self, partition: int) -> tuple[int, int]:
        self._one_partition(partition)
        with self._lock:
            (low, high) = self._db.execute("SELECT MIN(pos), MAX(pos) FROM journal").fetchone()
            if low is None:
                row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'")
                last = row.fetchone()
                nxt = (last[0] + 1) if last else 1
                return nxt, nxt
        return low, high + 1

    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        namespace, operator_uid, foreign = wanted.namespace, wanted.operator_uid, wanted.foreign
        # Batches by position, so the connection is never held while the caller works.
        conditions = ["pos > ?", "pos < ?"]
        extra: list[str] = []
        if not foreign:
            conditions.append("namespace = ?")
            extra.append(namespace)
            if operator_uid:
                conditions.append("operator_uid = ?")
                extra.append(operator_uid)
        query = (
            "SELECT pos, namespace, operator_uid, key_id, length(body), "
            "CASE WHEN namespace = ? THEN body END FROM journal "
            f"WHERE {' AND '.join(conditions)} ORDER BY pos LIMIT {_SCAN_BATCH}"
        )
        last = start - 1
        decode = self.codec.decode
        while last < end - 1:
            with self._lock:
                rows = self._db.execute(query, (namespace, last, end, *extra)).fetchall()
            if not rows:
                break
            for pos, ns, uid, key_id, size, body in rows:
                if body is None or (operator_uid and uid != operator_uid):
                    if foreign:
                        yield ScannedRecord(pos, size, ns, uid, None)
                    continue
                try:
                    record = decode(body, f"{self.path} row {pos}")
                except RecordError as exc:
                    if not foreign:
                        raise
                    yield ScannedRecord(pos, size, ns, uid, None, key_id=key_id, error=str(exc))
                    continue
                signed = bool(body[4] & FLAG_SIGNED)
                yield ScannedRecord(pos, size, ns, uid, record, signed, key_id)
            last = rows[-1][0]
            if progress is not None:
                progress(last + 1 - start, end - start)

    def delete_below(
        self,
        namespace: str,
        operator_uid: str,
        partition: int,
        position: int,
        progress: Progress | None = None,
    ) -> int:
        """Delete this namespace/operator's rows below ``position``, in short transactions.

        Rows of other namespaces and operators are never deleted. The file does not
        shrink (SQLite reuses the freed pages); ``VACUUM`` it offline to give space back.
        """
        self._one_partition(partition)
        match = "namespace = ? AND operator_uid = ? AND pos < ?"
        args = (namespace, operator_uid, position)
        with self._lock:
            (total,) = self._db.execute(
                f"SELECT COUNT(*) FROM journal WHERE {match}", args
            ).fetchone()
        deleted = 0
        while True:
            try:
                with self._lock:
                    cursor = self._db.execute(
                        f"DELETE FROM journal WHERE pos IN (SELECT pos FROM journal WHERE {match} "
                        f"ORDER BY pos LIMIT {_DELETE_BATCH})",
                        args,
                    )
            except sqlite3.Error as exc:
                raise StoreError(
                    f"deleting rows of namespace {namespace!r} below position {position} from "
                    f"SQLite journal {self.path} failed after {deleted} rows: {exc}"
                ) from exc
            deleted += cursor.rowcount
            if progress is not None:
                progress(deleted, max(total, deleted))
            if cursor.rowcount < _DELETE_BATCH:
                return deleted

    def _one_partition(self, partition: int) -> None:
        if partition != 0:
            raise ValueError(f"SQLite journal {self.path} has one partition (0), not {partition}")

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes. While the WAL's side files exist (a writer is running,
    or crashed) a read-only connection uses them. Without them it would create ``-wal`` and
    ``-shm`` and leave them behind, so the file is then read as immutable: no writer has it
    open, and one starting during the read is not seen."""
    side_files = Path(f"{path}-wal").exists() and Path(f"{path}-shm").exists()
    mode = "ro" if side_files else "ro&immutable=1"
    db = sqlite3.connect(
        f"{path.resolve().as_uri()}?mode={mode}",
        uri=True,
        check_same_thread=False,
        isolation_level=None,
    )
    db.execute("PRAGMA busy_timeout=10000")
    return db
