"""Folding a run's records into what the index keeps of it: its status, times and counts,
and the latest state of each of its durable calls.

Only decoded records come here (the store's scan decoded them); nothing is parsed again.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field
from typing import Any

import msgspec

from actionjournal.durable.records import (
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    ErrorInfo,
    RunCompleted,
    RunFailed,
)
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.index import id_key

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


def encode_calls(calls: dict[str, CallState]) -> bytes:
    return _CALLS.encode(calls)


def decode_calls(data: bytes) -> dict[str, CallState]:
    """The calls of a run as ``run_state.calls`` holds them."""
    return _CALLS_DECODE.decode(data)


def root_error(error: ErrorInfo) -> ErrorInfo:
    while error.cause is not None:
        error = error.cause
    return error


@dataclass(slots=True)
class RunTally:
    """One run as the index folds it."""

    id: int
    operator_uid: str
    key_id: str
    epoch: int
    seq: int
    partition: int
    positions: list[int] = field(default_factory=list)
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

    def positions_blob(self) -> bytes:
        return array("q", self.positions).tobytes()

    def row(self) -> tuple[Any, ...]:
        status = self.status
        calls = attempts = still_open = 0
        for call in self.calls.values():
            if call.state != DROPPED:
                calls += 1
                attempts += call.attempt + 1
                still_open += call.state in OPEN
        ended = status in (COMPLETED, REDRIVEN, DEAD_LETTERED)
        return (
            self.id,
            self.operator_uid,
            self.key_id,
            self.epoch,
            self.seq,
            self.partition,
            status,
            self.first_at,
            self.last_at,
            self.ended_at,
            "," + ",".join(sorted(self.actions)) + "," if self.actions else "",
            calls,
            attempts,
            self.records,
            self.size,
            self.error_type,
            self.error,
            self.dead_letters,
            self.failures,
            0 if ended else still_open,
        )


class Batch:
    """What one batch adds besides runs: tallies merged into the index when it is written."""

    def __init__(self) -> None:
        self.ids: list[tuple[int, int]] = []
        self.failures: list[tuple[Any, ...]] = []
        self.types: dict[type | str, list[int]] = {}  # record class (or a label): n, bytes
        self.growth: dict[int, list[int]] = {}
        self.control: list[tuple[Any, ...]] = []
        self.unreadable: list[tuple[Any, ...]] = []
        self.actions: dict[tuple[str, str], list[float]] = {}
        self.sent: dict[tuple[str, str, str], int] = {}


def fold(run: RunTally, item: jr.Scanned, record: Any, batch: Batch) -> None:
    """Add one record of ``run`` to it; what else it adds goes to ``batch``."""
    kind = type(record)
    size = item.size
    counted = batch.types.get(kind)
    if counted is None:
        counted = batch.types[kind] = [0, 0]
    counted[0] += 1
    counted[1] += size
    run.positions.append(item.position)
    run.records += 1
    run.size += size
    run.after_failure = True
    at = getattr(record, "at", None)
    if at is not None:
        hour = batch.growth.get(int(at // 3600))
        if hour is None:
            hour = batch.growth[int(at // 3600)] = [0, 0]
        hour[0] += 1
        hour[1] += size
        started = at - record.duration if type(record) is CallFinished else at
        if not run.first_at or started < run.first_at:
            run.first_at = started
        if at > run.last_at:
            run.last_at = at
    if kind is CallFinished or kind is CallStarted or kind is CallAttemptFailed:
        _call(run, record, kind, batch)
    elif kind is ActionCompleted:
        run.actions.add(record.action)
        stats = batch.actions.get((run.operator_uid, record.action))
        done_at: float = record.at
        if stats is None:
            batch.actions[(run.operator_uid, record.action)] = [1, done_at, done_at]
        else:
            stats[0] += 1
            stats[1] = min(stats[1], done_at)
            stats[2] = max(stats[2], done_at)
        sent = batch.sent
        for event in record.outputs:
            batch.ids.append((id_key(event.id), run.id))
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
        batch.failures.append(
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


def _call(run: RunTally, record: Any, kind: type, batch: Batch) -> None:
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
        batch.ids.append((id_key(record.call_id), run.id))
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
