"""The embedded default store: one SQLite file in WAL mode.

An append is a committed transaction with ``synchronous=FULL``: durable when it
returns, across a process kill and a power cut. Positions come from an
AUTOINCREMENT column, so they never repeat, even after cleanup deletes rows.

Group commit: appends made while a commit is in progress (other keys' runs, on other
threads) wait in a queue, and the next commit takes them all: one transaction, one
multi-row INSERT and one fsync for the lot, each appender returning once that commit is
done. One waiting appender is handed the next commit, and the other appenders of the
commit are woken in turn, each waking the next as it resumes. A woken thread needs the GIL:
woken all at once, they mostly slept a second time waiting for it. Stepping SQLite once per
row cost more than the fsync too: every step releases the GIL, which the committing thread
then queues to get back behind the appenders.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path

from actionjournal.durable.codec import FLAG_SIGNED, RecordCodec
from actionjournal.durable.errors import JournalWriteError, RecordError, StoreError
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity
from actionjournal.durable.store import (
    Cleanable,
    Progress,
    ScanFilter,
    ScannedRecord,
    StoreObserver,
)
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.stores.quarantine import KeyRead, decode_range, store_options

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


_INSERT = "INSERT INTO journal (namespace, operator_uid, key_id, seq, body) VALUES "


@dataclass(eq=False)
class _Pending:
    record: JournalRecord
    data: bytes
    position: int = 0
    error: BaseException | None = None


@dataclass(eq=False)
class _Waiter:
    """The records of one ``append_all`` and how their appender is woken: when their commit
    is done (``woken``, by the appender before it in ``next`` order), or when it is handed
    the next commit (``lead``)."""

    records: list[_Pending]
    wake: threading.Lock = field(default_factory=threading.Lock)
    lead: bool = False
    woken: bool = False
    next: _Waiter | None = None  # the appender of the same commit it wakes when it resumes
    gone: bool = False  # its wait was interrupted: never hand it a commit nor wake it

    def __post_init__(self) -> None:
        self.wake.acquire()  # held until the appender is woken


class SqliteStore(Cleanable):
    """The journal in one SQLite file: ``SqliteStore(SqliteStoreConfig(path=...))``, or for
    short ``SqliteStore("journal.db")``. ``read_only=True`` (the inspect tools, through
    :meth:`open_existing`): an existing journal, never written to, and no file created next
    to it (see :func:`_connect_read_only`)."""

    def __init__(
        self,
        config: SqliteStoreConfig | str | Path,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
        read_only: bool = False,
    ) -> None:
        if not isinstance(config, SqliteStoreConfig):
            config = SqliteStoreConfig(path=str(config))
        self.config = config
        self.path = Path(config.path)
        self.codec = codec or RecordCodec()
        self.observer = observer
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
                f"cannot open SQLite journal {self.path}: {exc}; check the path and its "
                f"permissions, and if the file is damaged, check it with `sqlite3 {self.path} "
                "'PRAGMA integrity_check'` and restore it from a copy"
            ) from exc
        self.identity = StoreIdentity("sqlite", str(self.path.resolve()), store_uid)
        self._lock = threading.Lock()  # the connection
        self._queue_lock = threading.Lock()  # the queue and _committing
        self._queue: list[_Waiter] = []  # appends waiting for the next commit
        self._committing = False  # a commit is in progress or handed to a waiter
        # Rows per INSERT: five parameters each, within this SQLite's limit on parameters.
        self._rows = max(1, min(1000, self._db.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // 5))

    @classmethod
    def open_existing(
        cls,
        config: SqliteStoreConfig,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
        read_only: bool = False,
    ) -> SqliteStore:
        """The journal file ``config`` names, which must exist (a mistyped path is an error,
        never a new empty journal); ``read_only``: never written to."""
        path = Path(config.path)
        if not path.is_file():
            raise StoreError(f"no SQLite journal at {path}: the file does not exist")
        store = cls(config, codec, observer=observer, read_only=True)  # a non-journal fails here
        if read_only:
            return store
        store.close()
        return cls(config, codec, observer=observer)

    def append(self, record: JournalRecord) -> Marker:
        return self.append_all([record])[0]

    def append_all(self, records: Sequence[JournalRecord]) -> list[Marker]:
        """The records go in one transaction, in order (with whatever else is queued then)."""
        if not records:
            return []
        started = time.perf_counter()
        waiter = _Waiter([_Pending(record, self.codec.encode(record)) for record in records])
        with self._queue_lock:
            self._queue.append(waiter)  # together: whichever commit takes one takes all
            lead = not self._committing
            self._committing = True
        if not lead:
            try:
                waiter.wake.acquire()  # committed by another appender, or handed the next commit
            except BaseException:  # a signal's exception in the main thread: pass on a commit
                with self._queue_lock:
                    waiter.gone = True
                    handed, woken = waiter.lead, waiter.woken
                # Handed or woken before it was gone: pass it on, or later appends wait forever.
                if handed or woken:
                    waiter.wake.acquire()  # released now or in a moment (held again)
                    self._resumed(waiter)
                raise
            lead = waiter.lead
            if not lead:
                self._wake_from(waiter.next)
        if lead:
            self._commit_queued(waiter)
        markers = []
        for pending in waiter.records:
            if pending.error is not None:
                raise pending.error
            self.observe_append(len(pending.data), started)
            record = pending.record
            markers.append(self.marker(record.key_id, pending.position, record.epoch))
        return markers

    def _resumed(self, waiter: _Waiter) -> None:
        """Do what an appender's wake-up asks of it: make the commit it was handed, or wake
        the next appender of its commit."""
        if waiter.lead:
            self._commit_queued(waiter)
        else:
            self._wake_from(waiter.next)

    def _wake_from(self, waiter: _Waiter | None) -> None:
        """Wake the first appender from ``waiter`` on (in ``next`` order) that still waits."""
        with self._queue_lock:
            while waiter is not None and waiter.gone:
                waiter = waiter.next
            if waiter is not None:
                waiter.woken = True
        if waiter is not None:
            waiter.wake.release()

    def _commit_queued(self, leader: _Waiter) -> None:
        """Commit everything queued in one transaction, hand the next commit to the first
        appender that queued meanwhile, and wake the first of the others in the commit
        (``leader`` is the committing appender's own)."""
        with self._queue_lock:
            batch, self._queue = self._queue, []
        pending = [p for waiter in batch for p in waiter.records]
        try:
            self._commit(pending)
        except BaseException as exc:  # not SQLite's, which _commit gives every record
            for p in pending:
                p.error = JournalWriteError(
                    f"SQLite journal {self.path}: the commit of a {type(p.record).__name__} for "
                    f"key {p.record.key_id} seq {p.record.seq} was interrupted ({exc!r}), so it "
                    "is not known to be kept"
                )
            raise
        finally:
            with self._queue_lock:
                following = next((w for w in self._queue if not w.gone), None)
                if following is not None:
                    following.lead = True
                else:
                    self._committing = False
            if following is not None:
                following.wake.release()
            waiting = [waiter for waiter in batch if waiter is not leader]
            for waiter, after in pairwise(waiting):
                waiter.next = after
            self._wake_from(waiting[0] if waiting else None)

    def _commit(self, batch: list[_Pending]) -> None:
        """One transaction of multi-row INSERTs. Rows of one statement get consecutive
        positions (AUTOINCREMENT, under the write lock): the last one is ``lastrowid``. A
        batch that fits one statement is that statement's own transaction, so SQLite is
        stepped once (each step releases the GIL, which 64 appenders then contend for)."""
        statements = [batch[i : i + self._rows] for i in range(0, len(batch), self._rows)]
        with self._lock:
            try:
                if len(statements) > 1:
                    self._db.execute("BEGIN IMMEDIATE")
                for rows in statements:
                    values: list[object] = []
                    for p in rows:
                        r = p.record
                        values += (r.namespace, r.operator_uid, r.key_id, r.seq, p.data)
                    sql = _INSERT + ", ".join(["(?, ?, ?, ?, ?)"] * len(rows))
                    last = self._db.execute(sql, values).lastrowid or 0
                    for position, p in enumerate(rows, last - len(rows) + 1):
                        p.position = position
                if len(statements) > 1:
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

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        start = after.position if after is not None else -1
        with self._reading(f"the records of key id {key_id}"):
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
        with self._reading("its earliest position"):
            (low,) = self._db.execute("SELECT MIN(pos) FROM journal").fetchone()
            if low is None:  # empty: everything up to the last position ever used was deleted
                row = self._db.execute("SELECT seq FROM sqlite_sequence WHERE name='journal'")
                last = row.fetchone()
                return int(last[0]) + 1 if last else 1
        return int(low)

    # -- operator tools -------------------------------------------------------------------

    def position_range(self, partition: int) -> tuple[int, int]:
        self._one_partition(partition)
        with self._reading("its position range"):
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
            with self._reading(f"rows after position {last}"):
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
        shrink (SQLite reuses the freed pages); ``cleanup apply --vacuum`` gives space back.
        """
        self._one_partition(partition)
        match = "namespace = ? AND operator_uid = ? AND pos < ?"
        args = (namespace, operator_uid, position)
        with self._reading(f"the rows of namespace {namespace!r} below position {position}"):
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

    @contextmanager
    def _reading(self, what: str) -> Iterator[None]:
        """Hold the connection for a read; SQLite's errors (a damaged page: "database disk
        image is malformed") become a StoreError naming the journal and what to do."""
        with self._lock:
            try:
                yield
            except sqlite3.Error as exc:
                raise StoreError(
                    f"SQLite journal {self.path}: reading {what} failed: {exc}. If the file is "
                    f"damaged, check it with `sqlite3 {self.path} 'PRAGMA integrity_check'` and "
                    "restore it from a copy; until then runs that need it cannot recover"
                ) from exc

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
