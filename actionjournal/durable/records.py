"""Journal records: small, typed, append-only.

Every record carries the identity of the run it belongs to (namespace, operator
uid, epoch, key id, seq), so a store can filter by it without decoding payloads
and records of other namespaces are never mistaken for ours.
Values inside records are bytes produced by :class:`~actionjournal.durable.values.ValueCodec`.
"""

from __future__ import annotations

import bisect
import hashlib
from datetime import datetime
from typing import Literal, TypeGuard

import msgspec

FORMAT_VERSION = 1


def record_time(at: float) -> str:
    """A record's ``at`` as people read it: ISO 8601 in local time with its UTC offset, so a
    time copied from an error or a tool's output means the same in any other time zone."""
    return datetime.fromtimestamp(at).astimezone().isoformat(timespec="milliseconds")


class ErrorInfo(msgspec.Struct, frozen=True, array_like=True):
    """A recorded exception: type, message, args, attributes and cause chain.

    ``args`` is ``None`` when the exception cannot be rebuilt equal (it then replays as
    ``RecordedCallError``). ``state`` came later: records without it rebuild from args.
    """

    type: str  # "module.QualName"
    message: str
    args: bytes | None  # ValueCodec bytes of list(exc.args)
    cause: ErrorInfo | None = None
    traceback: str = ""
    state: bytes | None = None  # ValueCodec bytes of the exception's __dict__


class EventData(msgspec.Struct, frozen=True, array_like=True):
    """An event as journaled: its original id, type and encoded attributes."""

    id: str
    type: str
    attributes: bytes


class MemoryOp(msgspec.Struct, frozen=True, array_like=True):
    """One memory update; replayed in order to rebuild memory exactly."""

    scope: Literal["short_term", "sensory"]
    op: Literal["set", "delete", "new_object"]
    path: str
    value: bytes | None = None


class WaitOp(msgspec.Struct, frozen=True, array_like=True):
    """A timer or signal effect of an action, journaled with its ``ActionCompleted`` and
    re-applied on replay (the action's body is not run again).

    ``schedule``: timer ``id`` delivers ``event`` at ``due``; ``token`` tells this schedule
    from an earlier one of the same id ("": ``id`` itself). ``cancel``: timer ``id`` no
    longer fires. ``expect``: signal ``id`` named ``name`` is answered or times out at
    ``due``, delivering ``event`` then (``None``: a ``SignalTimedOut``). Times are absolute
    (epoch seconds), never durations, so a replay waits only for what is left.
    """

    op: Literal["schedule", "cancel", "expect"]
    id: str
    due: float  # 0.0 for ``cancel``
    event: EventData | None = None
    name: str = ""
    token: str = ""


class Record(msgspec.Struct, frozen=True, array_like=True, tag=True):
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str
    seq: int


class CallRecord(Record, frozen=True):
    """What every record of a durable call starts with, after its run's identity: its
    action execution, its position there, and what identifies the call (its id, function,
    ``durable_id`` and argument digest). Never journaled itself; the wire order of its
    subclasses' fields is this base's, then their own (as in format 1)."""

    action_id: str
    index: int
    call_id: str
    function_id: str
    durable_id: str | None
    arg_digest: str


class CallStarted(CallRecord, frozen=True, tag="cs"):
    """Written and acknowledged before the function runs (reconciled or non-rerun calls)."""

    attempt: int
    at: float
    action: str = ""  # the action's name ("" in records written before it was kept)


class CallFinished(CallRecord, frozen=True, tag="cf"):
    """A call's outcome: ``value`` (ValueCodec bytes; ``None`` encodes too) or ``error``."""

    value: bytes | None
    error: ErrorInfo | None
    at: float
    duration: float
    reconciled: bool = False
    action: str = ""  # the action's name ("" in records written before it was kept)
    attempt: int = 0  # the attempt that ended so (0: the first; 0 in records before retries)


class CallAttemptFailed(CallRecord, frozen=True, tag="ca"):
    """A failed attempt of a call that its retry policy retries.

    ``attempt`` counts from 0 (as :attr:`CallInfo.attempt`); the next attempt may start at
    ``retry_at`` (epoch seconds), so a restart during the backoff waits only what is left.
    ``retry_at`` is ``None`` when no attempt follows in this try of the run
    (``record_failures=False`` ran out of attempts): the run's next try starts a new round.
    """

    attempt: int
    error: ErrorInfo
    at: float
    retry_at: float | None
    action: str = ""


class CallsDropped(Record, frozen=True, tag="cd"):
    """Divergence policy ``rerun`` dropped the recorded calls of an action from ``index`` on."""

    action_id: str
    index: int


class ActionCompleted(Record, frozen=True, tag="ac"):
    """An action finished: its memory updates and output events, replayed instead of its body."""

    action_id: str
    action: str
    memory_ops: list[MemoryOp]
    outputs: list[EventData]
    at: float
    # Lineage: the id of the event the action ran on; each of ``outputs`` came from it and
    # this action. None: journaled before lineage was recorded (the journal still reads).
    trigger_event_id: str | None = None
    waits: list[WaitOp] = []  # timers scheduled or cancelled, signals expected (in order)


class RunCompleted(Record, frozen=True, tag="rc"):
    """Every action of the run finished; the run's records may be cleaned up later."""

    at: float
    input_digest: str


class RunInput(Record, frozen=True, tag="ri"):
    """The input of a run that a timer or a signal started, journaled with the run's first
    records (so a run that journaled anything says what started it).

    ``kind``: ``timer`` (timer ``id`` fired; ``token``: which schedule of it), ``timeout``
    (signal ``id``'s deadline passed) or ``answer`` (an answer to signal ``id`` arrived;
    ``value`` holds it). ``delivered``: false when nothing ran: the timer had been
    cancelled or replaced, or the signal had been answered or had timed out before (a late
    or duplicate answer). ``due``: the timer's due time or the signal's deadline.
    """

    kind: Literal["timer", "timeout", "answer"]
    id: str
    token: str
    name: str
    due: float
    delivered: bool
    at: float
    event_type: str = ""  # the delivered event's type ("" when nothing was delivered)
    value: bytes | None = None  # answers: ValueCodec bytes of the answer


class RunFailed(Record, frozen=True, tag="rf"):
    """A run that failed, journaled before the run failure policy acts on it.

    ``final``: the run was dead-lettered: the key moved on, and a replay hands out the same
    dead letter instead of running it again. Not final: one failed try of
    ``retry-then-dead-letter`` (the task fails and the run runs again after the restore);
    these records count the tries, since keyed state rolls back with the restore.
    ``key`` and ``input`` are ValueCodec bytes, so the dead letter can be listed and
    re-driven from the journal (``key`` is ``None`` when the key cannot be encoded).
    """

    error: ErrorInfo
    at: float
    input_digest: str
    final: bool
    input: bytes
    key: bytes | None = None


def ends_run(record: object) -> TypeGuard[RunCompleted | RunFailed]:
    """Whether ``record`` ends its run: ``RunCompleted``, or a dead letter (a final
    ``RunFailed``). A re-drive of a dead-lettered run may end it again, completed."""
    return isinstance(record, RunCompleted) or (isinstance(record, RunFailed) and record.final)


CONTROL_KEY = ""  # key id of control records: they concern a partition, not one key


class UpgradeSkipped(Record, frozen=True, tag="us"):
    """Audit: upgrade mode ignored recovery markers of another journal or an older epoch."""

    old_backend: str
    old_name: str
    old_uid: str
    old_epoch: int
    reason: str
    at: float


class CleanupBoundary(Record, frozen=True, tag="cb", omit_defaults=True):
    """Cleanup deleted this partition's records of the namespace below ``position``.

    Journaled before deleting, after the boundary, so it outlives what it describes.
    ``deleted_keys`` holds the sorted :func:`key_digest` of every key that lost records:
    a restored state that does not know such a key would otherwise re-run its deleted
    work as new. One cleanup may split its digests over several records. Without
    digests the record encodes as in format 1; older readers ignore the extra field.
    """

    partition: int
    position: int
    at: float
    deleted_keys: bytes = b""

    def deleted(self, key_id: str) -> bool:
        """Whether ``key_id`` lost records to this cleanup (binary search, no decoding)."""
        return _Digests(self.deleted_keys).contains(key_digest(key_id))


class Quarantined(Record, frozen=True, tag="qr"):
    """Recovery skips the record at ``position`` of ``partition``: an operator's audited
    decision (``actionjournal journal quarantine``) about a record that cannot be read.

    ``key_id`` is the skipped record's key (``CONTROL_KEY`` for a control record), so the
    decision is read with that key's records and with nothing else. ``size`` is the skipped
    record's (positions are never reused), ``reason`` why it was skipped.
    """

    partition: int
    position: int
    size: int
    reason: str
    at: float


DIGEST_SIZE = 8  # 2**64 values: a false match needs billions of cleaned keys


def key_digest(key_id: str) -> bytes:
    return hashlib.blake2b(key_id.encode(), digest_size=DIGEST_SIZE).digest()


class _Digests:
    """A sorted concatenation of digests, searched in place."""

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __len__(self) -> int:
        return len(self.data) // DIGEST_SIZE

    def __getitem__(self, i: int) -> bytes:
        return self.data[i * DIGEST_SIZE : (i + 1) * DIGEST_SIZE]

    def contains(self, digest: bytes) -> bool:
        i = bisect.bisect_left(self, digest)
        return i < len(self) and self[i] == digest


JournalRecord = (
    CallStarted
    | CallFinished
    | CallsDropped
    | ActionCompleted
    | RunCompleted
    | UpgradeSkipped
    | CleanupBoundary
    | Quarantined
    | RunFailed
    | CallAttemptFailed
    | RunInput
)


class StoreIdentity(msgspec.Struct, frozen=True, array_like=True):
    """Which journal a marker points into. ``uid`` changes when the store is recreated."""

    backend: str
    name: str
    uid: str


class Marker(msgspec.Struct, frozen=True, array_like=True):
    """A key's recovery marker, kept in keyed state: its journal position in a given store."""

    store: StoreIdentity
    epoch: int
    partition: int
    position: int  # records after this position may belong to runs the state does not reflect
    format_version: int = FORMAT_VERSION


class JournalBinding(msgspec.Struct, frozen=True, array_like=True):
    """Which journal, namespace and epoch a job's state was written against.

    Checkpointed once per job (Flink operator state, a local snapshot), not per key, so a
    restore against another journal is refused before any key runs, including keys the
    state has no marker for. Kept in state, not in the journal.
    """

    store: StoreIdentity
    epoch: int
    namespace: str
    format_version: int = FORMAT_VERSION
