"""Building the run index: read each partition from where the index stopped, fold every
record into its run, write what changed in one transaction per batch.

Records come from the store's read side (:func:`.journal.scan`, the scan ``journal
inspect`` uses); this module only folds decoded records into per-run tallies. Runs still
open stay in memory between batches; a run met again after it ended (a re-drive) is
loaded back from the index. Following a journal live is calling :meth:`Indexer.catch_up`
again: it reads only what was appended since.
"""

from __future__ import annotations

import queue
import threading
import time
from array import array
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import msgspec

from actionjournal.durable.records import (
    CONTROL_KEY,
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    ErrorInfo,
    Quarantined,
    RunCompleted,
    RunFailed,
    UpgradeSkipped,
)
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.index import id_key, open_index

BATCH = 20_000  # records folded between two writes of the index
LAST_SEQ_KEYS = 200_000

# Call states kept per call (CallState.state).
STARTED = "started"  # CallStarted, no outcome: a restart reconciles it or applies on_unknown
RETRYING = "retrying"  # a failed attempt with a retry_at: the next attempt waits for it
GAVE_UP = "gave up"  # a failed attempt, no retry in this try of the run
FINISHED = "finished"
FAILED = "failed"  # a final error outcome
DROPPED = "dropped"  # divergence policy 'rerun' dropped it
OPEN = (STARTED, RETRYING)

# Run statuses.
COMPLETED = "completed"
IN_FLIGHT = "in_flight"
RUN_FAILED = "failed"  # a try failed (retry-then-dead-letter): it runs again after a restart
DEAD_LETTERED = "dead_lettered"
REDRIVEN = "redriven"  # completed by a re-drive after its dead letter
STATUSES = (COMPLETED, IN_FLIGHT, RUN_FAILED, DEAD_LETTERED, REDRIVEN)


class CallState(msgspec.Struct, array_like=True):
    """What the index keeps of one durable call of a run (its latest state)."""

    call_id: str
    action: str
    function_id: str
    index: int
    attempt: int = 0
    state: str = STARTED
    started_at: float | None = None
    at: float | None = None  # of its latest record
    retry_at: float | None = None
    error_type: str = ""
    error: str = ""
    reconciled: bool = False
    attempts_failed: int = 0


_CALLS = msgspec.msgpack.Encoder()
_CALLS_DECODE = msgspec.msgpack.Decoder(dict[str, CallState])


def decode_calls(data: bytes) -> dict[str, CallState]:
    """The calls of a run as ``run_state.calls`` holds them."""
    return _CALLS_DECODE.decode(data)


def root_error(error: ErrorInfo) -> ErrorInfo:
    while error.cause is not None:
        error = error.cause
    return error


@dataclass
class RunTally:
    """One run as the index folds it."""

    id: int
    operator_uid: str
    key_id: str
    epoch: int
    seq: int
    partition: int
    positions: array = field(default_factory=lambda: array("q"))
    calls: dict[str, CallState] = field(default_factory=dict)
    actions: set[str] = field(default_factory=set)
    first_at: float = 0.0
    last_at: float = 0.0
    ended_at: float | None = None
    completed: bool = False
    dead_letters: int = 0
    failures: int = 0
    last_failure_final: bool = False
    after_failure: bool = False  # records after its last RunFailed (a re-drive, a restart)
    records: int = 0
    size: int = 0
    error_type: str | None = None
    error: str | None = None

    @property
    def status(self) -> str:
        if self.completed:
            return REDRIVEN if self.dead_letters else COMPLETED
        if self.failures and not self.after_failure:
            return DEAD_LETTERED if self.last_failure_final else RUN_FAILED
        return IN_FLIGHT

    @property
    def ended(self) -> bool:
        return self.status in (COMPLETED, REDRIVEN, DEAD_LETTERED)

    def open_calls(self) -> int:
        if self.ended:
            return 0
        return sum(1 for c in self.calls.values() if c.state in OPEN)

    def attempts(self) -> int:
        return sum(c.attempt + 1 for c in self.calls.values() if c.state != DROPPED)

    def row(self) -> tuple[Any, ...]:
        return (
            self.id,
            self.operator_uid,
            self.key_id,
            self.epoch,
            self.seq,
            self.partition,
            self.status,
            self.first_at,
            self.last_at,
            self.ended_at,
            "," + ",".join(sorted(self.actions)) + "," if self.actions else "",
            sum(1 for c in self.calls.values() if c.state != DROPPED),
            self.attempts(),
            self.records,
            self.size,
            self.error_type,
            self.error,
            self.dead_letters,
            self.failures,
            self.open_calls(),
        )


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


class _Batch:
    """What one batch adds besides runs: tallies merged into the index when it is written."""

    def __init__(self) -> None:
        self.ids: list[tuple[int, int]] = []
        self.failures: list[tuple[Any, ...]] = []
        self.types: dict[tuple[int, str], list[int]] = {}
        self.growth: dict[int, list[int]] = {}
        self.control: list[tuple[Any, ...]] = []
        self.unreadable: list[tuple[Any, ...]] = []
        self.actions: dict[tuple[str, str], list[float]] = {}
        self.sent: dict[tuple[str, str, str], int] = {}


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
        self._batch = _Batch()
        (last,) = self.db.execute("SELECT COALESCE(MAX(id), 0) FROM runs").fetchone()
        self._next_id = last + 1
        self.lock = threading.Lock()
        self._writer = Writer(self.db)
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
            for partition in jr.partitions(self.store):
                read += self._partition(partition)
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
        types, growth = self._batch.types, self._batch.growth
        live = self.live
        read = 0
        position = start
        for item in jr.scan(self.store, partition, self.journal, skipped, start, high):
            position = item.position + 1
            read += 1
            record = item.record
            if record is None:  # another namespace or operator: counted, never decoded
                tally = types.setdefault((partition, "other namespace"), [0, 0])
                tally[0] += 1
                tally[1] += item.size
            else:
                name = type(record).__name__
                counted = types.get((partition, name))
                if counted is None:
                    counted = types[(partition, name)] = [0, 0]
                counted[0] += 1
                counted[1] += item.size
                at = getattr(record, "at", None)
                if at is not None:
                    hour = growth.get(int(at // 3600))
                    if hour is None:
                        hour = growth[int(at // 3600)] = [0, 0]
                    hour[0] += 1
                    hour[1] += item.size
                if record.key_id == CONTROL_KEY or isinstance(record, Quarantined):
                    self._control(partition, item)
                else:
                    ident = (item.operator_uid, record.key_id, record.epoch, record.seq)
                    run = live.get(ident)
                    if run is None:
                        run = self._run(ident, partition)
                    self._fold(run, item, record)
            if read % BATCH == 0:
                self._unreadable(skipped)
                self._write(partition, position, low, high)
                types, growth = self._batch.types, self._batch.growth
        self._unreadable(skipped)
        self._write(partition, max(position, high), low, high)
        self._writer.drain()
        self.records_indexed += read
        return read

    def _unreadable(self, skipped: list[jr.Unreadable]) -> None:
        for bad in skipped:
            self._batch.unreadable.append(
                (bad.partition, bad.position, bad.kind, bad.error, bad.key_id)
            )
        skipped.clear()

    def _control(self, partition: int, item: jr.Scanned) -> None:
        record = item.record
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
        if last is None:
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
            run.positions.frombytes(row[20])
            run.calls = decode_calls(row[21])
        self.live[ident] = run
        return run

    def _fold(self, run: RunTally, item: jr.Scanned, record: Any) -> None:
        run.positions.append(item.position)
        run.records += 1
        run.size += item.size
        run.after_failure = True
        self._dirty[run.id] = run
        at = getattr(record, "at", None)
        if at is not None:
            started = at - record.duration if type(record) is CallFinished else at
            if not run.first_at or started < run.first_at:
                run.first_at = started
            if at > run.last_at:
                run.last_at = at
        kind = type(record)
        if kind is CallFinished or kind is CallStarted or kind is CallAttemptFailed:
            self._call(run, record, kind)
        elif kind is ActionCompleted:
            run.actions.add(record.action)
            stats = self._batch.actions.get((run.operator_uid, record.action))
            done_at: float = record.at
            if stats is None:
                self._batch.actions[(run.operator_uid, record.action)] = [1, done_at, done_at]
            else:
                stats[0] += 1
                stats[1] = min(stats[1], done_at)
                stats[2] = max(stats[2], done_at)
            sent = self._batch.sent
            for event in record.outputs:
                self._batch.ids.append((id_key(event.id), run.id))
                edge = (run.operator_uid, record.action, event.type)
                sent[edge] = sent.get(edge, 0) + 1
        elif kind is RunCompleted:
            run.completed = True
            run.ended_at = record.at
        elif kind is RunFailed:
            run.failures += 1
            run.after_failure = False
            run.last_failure_final = record.final
            root = root_error(record.error)
            run.error_type, run.error = root.type, record.error.message
            if record.final:
                run.dead_letters += 1
                run.ended_at = record.at
            self._batch.failures.append(
                (
                    run.partition,
                    item.position,
                    run.id,
                    record.at,
                    int(record.final),
                    root.type,
                    record.error.message,
                    record.key,
                    record.input,
                )
            )
        elif kind is CallsDropped:
            for slot, call in run.calls.items():
                if slot.rsplit(":", 1)[0] == record.action_id and call.index >= record.index:
                    call.state = DROPPED

    def _call(self, run: RunTally, record: Any, kind: type) -> None:
        slot = f"{record.action_id}:{record.index}"
        call = run.calls.get(slot)
        if (
            call is None
            or call.state == DROPPED
            or (kind is CallStarted and call.state in (FINISHED, FAILED))
        ):
            call = run.calls[slot] = CallState(
                record.call_id, record.action, record.function_id, record.index
            )
            self._batch.ids.append((id_key(record.call_id), run.id))
        if record.action:
            run.actions.add(record.action)
            call.action = record.action
        call.attempt = max(call.attempt, record.attempt)
        call.at = record.at
        if kind is CallStarted:
            call.state = STARTED
            call.started_at = call.started_at or record.at
            call.retry_at = None
        elif kind is CallAttemptFailed:
            call.state = RETRYING if record.retry_at is not None else GAVE_UP
            call.retry_at = record.retry_at
            call.attempts_failed += 1
            root = root_error(record.error)
            call.error_type, call.error = root.type, record.error.message
            if not run.error_type:
                run.error_type, run.error = call.error_type, call.error
        else:
            call.started_at = call.started_at or record.at - record.duration
            call.retry_at = None
            call.reconciled = record.reconciled
            if record.error is None:
                call.state = FINISHED
            else:
                call.state = FAILED
                root = root_error(record.error)
                call.error_type, call.error = root.type, record.error.message
                run.error_type, run.error = call.error_type, call.error

    # -- writing the index

    def _write(self, partition: int, next_position: int, low: int, high: int) -> None:
        """Hand what the batch folded to the writer thread, as one transaction."""
        batch, self._batch = self._batch, _Batch()
        dirty, self._dirty = self._dirty, {}
        runs = list(dirty.values())
        statements: list[tuple[str, list[tuple[Any, ...]]]] = [
            (_UPSERT_RUN, [run.row() for run in runs]),
            (
                "INSERT OR REPLACE INTO run_state VALUES (?, ?, ?)",
                [(run.id, run.positions.tobytes(), _CALLS.encode(run.calls)) for run in runs],
            ),
            ("INSERT OR IGNORE INTO ids VALUES (?, ?)", batch.ids),
            ("INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch.failures),
            (
                "INSERT INTO types VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE SET "
                "records = records + excluded.records, bytes = bytes + excluded.bytes",
                [(p, t, n, b) for (p, t), (n, b) in batch.types.items()],
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


class Writer:
    """Runs the index's transactions on a thread of its own: SQLite's work (which releases
    the GIL) overlaps the next batch's reading and decoding. At most one batch waits."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._jobs: queue.Queue[list[tuple[str, list[tuple[Any, ...]]]] | None] = queue.Queue(1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="index-writer", daemon=True)
        self._thread.start()

    def submit(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        self._check()
        self._jobs.put(statements)

    def drain(self) -> None:
        """Return once every submitted transaction is committed."""
        self._jobs.join()
        self._check()

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    def _check(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        while True:
            statements = self._jobs.get()
            try:
                if statements is None:
                    return
                if self._error is None:
                    self._run(statements)
            except BaseException as exc:  # handed to the indexing thread
                self._error = exc
            finally:
                self._jobs.task_done()

    def _run(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        db = self.db
        db.execute("BEGIN")
        try:
            for sql, rows in statements:
                if rows:
                    db.executemany(sql, rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise


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
