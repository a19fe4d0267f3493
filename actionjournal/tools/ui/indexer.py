"""Building the run index: read each partition from where the index stopped, fold every
record into its run, write what changed in one transaction per batch.

Records come from the store's read side (:func:`.journal.scan`, the scan ``journal
inspect`` uses); :mod:`.tally` folds the decoded records into per-run tallies and
:mod:`.writer` commits them. Runs still open stay in memory between batches; a run met
again after it ended (a re-drive) is loaded back from the index. Following a journal live
is calling :meth:`Indexer.catch_up` again: it reads only what was appended since.
"""

from __future__ import annotations

import contextlib
import threading
import time
from array import array
from pathlib import Path
from typing import Any

from actionjournal.durable.records import (
    CONTROL_KEY,
    CleanupBoundary,
    Quarantined,
    UpgradeSkipped,
)
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.index import INDEXES, indexed, open_index
from actionjournal.tools.ui.tally import (
    COMPLETED,
    DEAD_LETTERED,
    REDRIVEN,
    RUN_FAILED,
    Batch,
    RunTally,
    decode_calls,
    encode_calls,
    fold,
)
from actionjournal.tools.ui.writer import Writer

BATCH = 20_000  # records folded between two writes of the index
LAST_SEQ_KEYS = 200_000

_RUN_COLUMNS = (
    "id, operator_uid, key_id, epoch, seq, partition, status, first_at, last_at, ended_at, "
    "actions, calls, attempts, records, bytes, error_type, error, dead_letters, failures, "
    "open_calls"
)

_CHANGING = (
    "status", "first_at", "last_at", "ended_at", "actions", "calls", "attempts", "records",
    "bytes", "error_type", "error", "dead_letters", "failures", "open_calls",
)  # fmt: skip
_UPSERT_RUN = (
    f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES ({','.join('?' * 20)}) ON CONFLICT (id) DO UPDATE "
    f"SET {', '.join(f'{c} = excluded.{c}' for c in _CHANGING)}"
)

_PROGRESS = "INSERT OR REPLACE INTO progress VALUES (?, ?, ?, ?, ?)"


class Indexer:
    """Keeps the index of one journal up to date; :meth:`catch_up` from one thread at a time."""

    def __init__(self, journal: jr.Journal, store: jr.Store, path: Path) -> None:
        self.journal = journal
        self.store = store
        self.path = path
        identity = jr.identity_of(store)
        self.db = open_index(path, identity, journal.namespace, journal.operator_uid)
        self.live: dict[tuple[str, str, int, int], RunTally] = {}
        # The highest seq indexed per key: a record of a higher seq starts a new run, so
        # only a lower one (a re-drive, a run resumed after others) looks in the index.
        self._last_seq: dict[tuple[str, str, int], int] = {}
        self._dirty: dict[int, RunTally] = {}
        self._batch = Batch()
        (last,) = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
        self._next_id = last + 1
        with contextlib.suppress(Exception):  # keys must be looked up from now on
            self._end_first_pass()
        self.lock = threading.Lock()
        self._writer = Writer(self.db)
        # A first pass writes no secondary index (made at its end): every key it meets is
        # new to the index, so none is looked up there.
        self._first_pass = not indexed(self.db)
        self.records_indexed = 0
        self.caught_up_at: float | None = None
        self.error: str | None = None  # the last catch-up's failure, for the pages to show

    def close(self) -> None:
        self._writer.close()
        self.db.close()

    # -- reading the journal

    def catch_up(self) -> int:
        """Read every partition from where the index stopped to its current end; returns
        how many records were read."""
        with self.lock:
            read = 0
            try:
                for partition in jr.partitions(self.store):
                    read += self._partition(partition)
                self._end_first_pass()
            except BaseException:
                # What was folded but not committed would be folded again by the next
                # catch-up, which resumes where the index's last commit says.
                self._forget()
                raise
            self.caught_up_at = time.time()
            self.error = None
            return read

    def pending(self) -> int:
        """Positions appended since the index last read (an upper bound: gaps count)."""
        done = dict(self.db.execute("SELECT partition, next FROM progress").fetchall())
        total = 0
        for p in jr.partitions(self.store):
            low, high = jr.position_range(self.store, p)
            total += max(0, high - max(low, done.get(p, low)))
        return total

    def _partition(self, partition: int) -> int:
        low, high = jr.position_range(self.store, partition)
        row = self.db.execute("SELECT next FROM progress WHERE partition = ?", (partition,))
        found = row.fetchone()
        start = low if found is None else max(found[0], low)
        if start >= high:
            self._progress(partition, max(start, high), low, high)
            return 0
        skipped: list[jr.Unreadable] = []
        live = self.live
        read = 0
        position = start
        for item in jr.scan(self.store, partition, self.journal, skipped, start, high):
            position = item.position + 1
            read += 1
            record = item.record
            if record is None:  # another namespace or operator: counted, never decoded
                tally = self._batch.types.setdefault("other namespace", [0, 0])
                tally[0] += 1
                tally[1] += item.size
            elif record.key_id == CONTROL_KEY or isinstance(record, Quarantined):
                self._control(partition, item)
            else:
                ident = (item.operator_uid, record.key_id, record.epoch, record.seq)
                run = live.get(ident)
                if run is None:
                    run = self._run(ident, partition)
                self._dirty[run.id] = run
                fold(run, item, record, self._batch)
            if read % BATCH == 0:
                self._unreadable(skipped)
                self._write(partition, position, low, high)
        self._unreadable(skipped)
        self._write(partition, max(position, high), low, high)
        self._writer.drain()
        self.records_indexed += read
        return read

    def _forget(self) -> None:
        with contextlib.suppress(Exception):  # the failure itself is what the caller sees
            self._writer.drain()
        self.live.clear()
        self._dirty.clear()
        self._last_seq.clear()
        self._batch = Batch()
        (last,) = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
        self._next_id = last + 1
        with contextlib.suppress(Exception):  # keys must be looked up from now on
            self._end_first_pass()

    def _end_first_pass(self) -> None:
        if self._first_pass:
            self._writer.drain()
            self.db.executescript(INDEXES)
            self._first_pass = False

    def _unreadable(self, skipped: list[jr.Unreadable]) -> None:
        for bad in skipped:
            self._batch.unreadable.append(
                (bad.partition, bad.position, bad.kind, bad.error, bad.key_id)
            )
        skipped.clear()

    def _control(self, partition: int, item: jr.Scanned) -> None:
        record = item.record
        tally = self._batch.types.setdefault(type(record), [0, 0])
        tally[0] += 1
        tally[1] += item.size
        if isinstance(record, CleanupBoundary):
            text = f"cleanup deleted partition {record.partition} below {record.position}"
        elif isinstance(record, Quarantined):
            text = (
                f"quarantined the record at partition {record.partition} position "
                f"{record.position} ({record.size} bytes): {record.reason}"
            )
        elif isinstance(record, UpgradeSkipped):
            text = (
                f"upgrade skipped {record.old_backend} {record.old_name} epoch "
                f"{record.old_epoch}: {record.reason}"
            )
        else:
            return
        self._batch.control.append(
            (partition, item.position, type(record).__name__, record.at, text)
        )

    def _run(self, ident: tuple[str, str, int, int], partition: int) -> RunTally:
        """The run's tally: loaded back from the index when it was written before."""
        uid, key_id, epoch, seq = ident
        key = (uid, key_id, epoch)
        last = self._last_seq.get(key)
        if last is None and self._first_pass and len(self._last_seq) <= LAST_SEQ_KEYS:
            last = -1  # a key the first pass has not met: nothing of it is in the index
        if last is None:
            self._end_first_pass()  # the lookups below need the index's indexes
            self._writer.drain()  # what the index says must include every batch folded
            if len(self._last_seq) > LAST_SEQ_KEYS:
                self._last_seq.clear()  # bounded: forgetting costs a query per key
            (found,) = self.db.execute(
                "SELECT MAX(seq) FROM runs WHERE key_id = ? AND operator_uid = ? AND epoch = ?",
                (key_id, uid, epoch),
            ).fetchone()
            last = -1 if found is None else found
        if seq > last:
            self._last_seq[key] = seq
            run = self.live[ident] = RunTally(self._next_id, uid, key_id, epoch, seq, partition)
            self._next_id += 1
            return run
        self._last_seq[key] = last
        self._end_first_pass()
        self._writer.drain()
        row = self.db.execute(
            "SELECT runs.*, positions, run_state.calls FROM runs JOIN run_state "
            "ON run_state.run = runs.id WHERE operator_uid = ? AND key_id = ? AND epoch = ? "
            "AND seq = ?",
            ident,
        ).fetchone()
        if row is None:
            run = RunTally(self._next_id, uid, key_id, epoch, seq, partition)
            self._next_id += 1
        else:
            run = RunTally(row[0], uid, key_id, epoch, seq, row[5])
            run.first_at, run.last_at, run.ended_at = row[7], row[8], row[9]
            run.actions = {a for a in row[10].split(",") if a}
            run.records, run.size = row[13], row[14]
            run.error_type, run.error = row[15], row[16]
            run.dead_letters, run.failures = row[17], row[18]
            run.completed = row[6] in (COMPLETED, REDRIVEN)
            run.last_failure_final = row[6] == DEAD_LETTERED
            run.after_failure = row[6] not in (DEAD_LETTERED, RUN_FAILED)
            positions = array("q")
            positions.frombytes(row[20])
            run.positions = positions.tolist()
            run.calls = decode_calls(row[21])
        self.live[ident] = run
        return run

    # -- writing the index

    def _write(self, partition: int, next_position: int, low: int, high: int) -> None:
        """Hand what the batch folded to the writer thread, as one transaction."""
        batch, self._batch = self._batch, Batch()
        dirty, self._dirty = self._dirty, {}
        runs = list(dirty.values())
        statements: list[tuple[str, list[tuple[Any, ...]]]] = [
            (_UPSERT_RUN, [run.row() for run in runs]),
            (
                "INSERT OR REPLACE INTO run_state VALUES (?, ?, ?)",
                [(run.id, run.positions_blob(), encode_calls(run.calls)) for run in runs],
            ),
            ("INSERT INTO ids VALUES (?, ?)", batch.ids),
            ("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch.failures),
            (
                "INSERT INTO types VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "records = records + excluded.records, bytes = bytes + excluded.bytes",
                [
                    (partition, t if isinstance(t, str) else t.__name__, n, b)
                    for t, (n, b) in batch.types.items()
                ],
            ),
            (
                "INSERT INTO growth VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET "
                "records = records + excluded.records, bytes = bytes + excluded.bytes",
                [(h, n, b) for h, (n, b) in batch.growth.items()],
            ),
            ("INSERT OR REPLACE INTO control VALUES (?, ?, ?, ?, ?)", batch.control),
            ("INSERT OR REPLACE INTO unreadable VALUES (?, ?, ?, ?, ?)", batch.unreadable),
            (
                "INSERT INTO actions VALUES (?, ?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "executions = executions + excluded.executions, "
                "first_at = min(first_at, excluded.first_at), "
                "last_at = max(last_at, excluded.last_at)",
                [(u, a, n, f, la) for (u, a), (n, f, la) in batch.actions.items()],
            ),
            (
                "INSERT INTO sent VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET n = n + excluded.n",
                [(u, a, t, n) for (u, a, t), n in batch.sent.items()],
            ),
            (_PROGRESS, [(partition, next_position, low, high, time.time())]),
        ]
        self._writer.submit(statements)
        for ident in [i for i, run in self.live.items() if run.ended]:
            del self.live[ident]  # a re-drive loads it back from the index

    def _progress(self, partition: int, next_position: int, low: int, high: int) -> None:
        self._writer.submit([(_PROGRESS, [(partition, next_position, low, high, time.time())])])


def build(journal: jr.Journal, path: Path) -> tuple[int, float]:
    """Bring the index at ``path`` up to date once; returns records read and seconds taken."""
    with journal.opened() as store:
        indexer = Indexer(journal, store, path)
        try:
            start = time.perf_counter()
            read = indexer.catch_up()
            return read, time.perf_counter() - start
        finally:
            indexer.close()
