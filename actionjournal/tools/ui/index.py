"""The explorer's run index: a local SQLite file that answers the pages without a scan.

One file per journal (store identity, namespace, operator), made next to nothing else: it
holds one row per run (status, times, counts, the positions of its records), the call and
event ids that lead to a run, the runs' failures (dead letters with their key and input
bytes), and per-partition tallies for the health page. Where each partition was read up
to is kept too, so a restart resumes there; a journal recreated under the same name (another
uid) starts the index afresh. What is written here is built by :mod:`.indexer`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sqlite3
import threading
from pathlib import Path

from actionjournal.durable.records import StoreIdentity

SCHEMA_VERSION = "1"

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (k TEXT PRIMARY KEY, v TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS progress (
    partition INTEGER PRIMARY KEY,
    next INTEGER NOT NULL,      -- the first position not read yet
    low INTEGER NOT NULL,       -- what the partition retained when last read
    high INTEGER NOT NULL,
    read_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    operator_uid TEXT NOT NULL,
    key_id TEXT NOT NULL,
    epoch INTEGER NOT NULL,
    seq INTEGER NOT NULL,
    partition INTEGER NOT NULL,
    status TEXT NOT NULL,
    first_at REAL NOT NULL,
    last_at REAL NOT NULL,
    ended_at REAL,
    actions TEXT NOT NULL,      -- ",name,name," for LIKE '%,name,%'
    calls INTEGER NOT NULL,
    attempts INTEGER NOT NULL,
    records INTEGER NOT NULL,
    bytes INTEGER NOT NULL,
    error_type TEXT,
    error TEXT,
    dead_letters INTEGER NOT NULL,
    failures INTEGER NOT NULL,
    open_calls INTEGER NOT NULL -- calls started without an outcome, or waiting to retry
);
CREATE TABLE IF NOT EXISTS run_state (
    run INTEGER PRIMARY KEY,
    positions BLOB NOT NULL,    -- int64 positions of the run's records, in order
    calls BLOB NOT NULL         -- msgpack: the state of each call (see indexer.CallState)
);
-- call and event ids, by their first 60 bits (id_key): a prefix of an id is a range
CREATE TABLE IF NOT EXISTS ids (h INTEGER NOT NULL, run INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS failures (
    partition INTEGER NOT NULL,
    position INTEGER NOT NULL,
    run INTEGER NOT NULL,
    at REAL NOT NULL,
    final INTEGER NOT NULL,
    error_type TEXT NOT NULL,
    error TEXT NOT NULL,
    key BLOB,
    input BLOB NOT NULL,
    PRIMARY KEY (partition, position)
);
CREATE TABLE IF NOT EXISTS types (
    partition INTEGER NOT NULL, type TEXT NOT NULL, records INTEGER NOT NULL,
    bytes INTEGER NOT NULL, PRIMARY KEY (partition, type)
);
CREATE TABLE IF NOT EXISTS growth (
    hour INTEGER PRIMARY KEY, records INTEGER NOT NULL, bytes INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS control (
    partition INTEGER NOT NULL, position INTEGER NOT NULL, type TEXT NOT NULL,
    at REAL NOT NULL, text TEXT NOT NULL, PRIMARY KEY (partition, position)
);
CREATE TABLE IF NOT EXISTS unreadable (
    partition INTEGER NOT NULL, position INTEGER NOT NULL, kind TEXT NOT NULL,
    error TEXT NOT NULL, key_id TEXT NOT NULL, PRIMARY KEY (partition, position)
);
CREATE TABLE IF NOT EXISTS actions (
    operator_uid TEXT NOT NULL, action TEXT NOT NULL, executions INTEGER NOT NULL,
    first_at REAL NOT NULL, last_at REAL NOT NULL, PRIMARY KEY (operator_uid, action)
);
CREATE TABLE IF NOT EXISTS sent (
    operator_uid TEXT NOT NULL, action TEXT NOT NULL, event_type TEXT NOT NULL,
    n INTEGER NOT NULL, PRIMARY KEY (operator_uid, action, event_type)
);
"""


# Made once the first pass is read (sorting what is there beats inserting into B-trees row
# by row); from then on kept up as rows come.
INDEXES = """
CREATE INDEX IF NOT EXISTS runs_recent ON runs (first_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS runs_key ON runs (key_id, seq);
CREATE INDEX IF NOT EXISTS runs_status ON runs (status, first_at DESC, id DESC);
CREATE INDEX IF NOT EXISTS failures_run ON failures (run);
CREATE INDEX IF NOT EXISTS ids_h ON ids (h);
"""


def indexed(db: sqlite3.Connection) -> bool:
    """Whether the index's own indexes exist (not on a first pass)."""
    found = db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs_key'").fetchone()
    return found is not None


def default_path(identity: StoreIdentity, namespace: str, operator_uid: str | None) -> Path:
    """Where the index of a journal lives unless ``--index`` says: the user's cache."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    name = "\x00".join([identity.backend, identity.name, namespace, operator_uid or ""])
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return base / "actionjournal" / "ui" / f"{identity.backend}-{digest}.sqlite"


ID_DIGITS = 15  # hex digits of an id kept in ``ids.h`` (60 bits: a positive int64)


def id_key(text: str) -> int:
    """``ids.h`` of a call or event id (hex digests; anything else is hashed first)."""
    try:
        return int(text[:ID_DIGITS], 16) if len(text) >= ID_DIGITS else _hashed(text)
    except ValueError:
        return _hashed(text)


def _hashed(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest()) >> 4


def id_range(prefix: str) -> tuple[int, int] | None:
    """``ids.h`` bounds of the ids starting with a hex ``prefix``; None if it is not hex."""
    prefix = prefix.lower()[:ID_DIGITS]
    try:
        low = int(prefix.ljust(ID_DIGITS, "0"), 16)
        high = int(prefix.ljust(ID_DIGITS, "f"), 16)
    except ValueError:
        return None
    return low, high


def connect(path: Path) -> sqlite3.Connection:
    db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
    db.execute("PRAGMA journal_mode=WAL")
    db.execute("PRAGMA synchronous=OFF")  # only a power cut can hurt it; it is rebuilt then
    db.execute("PRAGMA cache_size=-65536")  # 64 MiB: the id and run B-trees stay in memory
    return db


def open_index(
    path: Path, identity: StoreIdentity, namespace: str, operator_uid: str | None
) -> sqlite3.Connection:
    """The index of this journal at ``path``; one of another journal (or of a journal
    recreated under the same name) is started afresh."""
    path.parent.mkdir(parents=True, exist_ok=True)
    wanted = {
        "schema": SCHEMA_VERSION,
        "backend": identity.backend,
        "name": identity.name,
        "uid": identity.uid,
        "namespace": namespace,
        "operator_uid": operator_uid or "",
    }
    try:
        db = connect(path)
        db.executescript(SCHEMA)
        found = dict(db.execute("SELECT k, v FROM meta").fetchall())
    except sqlite3.DatabaseError:  # damaged (a power cut while it was written): rebuilt
        found = {"damaged": "yes"}
    if found and found != wanted:
        with contextlib.suppress(sqlite3.Error, UnboundLocalError):
            db.close()
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)
        db = connect(path)
        db.executescript(SCHEMA)
        found = {}
    if not found:
        db.executemany("INSERT INTO meta VALUES (?, ?)", list(wanted.items()))
    return db


class Readers:
    """One read connection per thread (SQLite in WAL mode: reads never wait for the
    indexer's writes)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._lock = threading.Lock()

    def get(self) -> sqlite3.Connection:
        db: sqlite3.Connection | None = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, check_same_thread=False)
            db.row_factory = sqlite3.Row
            self._local.db = db
            with self._lock:
                self._all.append(db)
        return db

    def close(self) -> None:
        with self._lock:
            for db in self._all:
                db.close()
            self._all.clear()
