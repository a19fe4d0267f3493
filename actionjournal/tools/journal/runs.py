"""A key's records grouped into runs, actions and calls, with what each one's status means.

Values are shown as a short preview decoded without pickle: inspecting a journal never
runs code that the journal's bytes choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from actionjournal.durable.records import (
    CONTROL_KEY,
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    JournalRecord,
    RunCompleted,
    RunFailed,
)
from actionjournal.durable.store import ScannedRecord
from actionjournal.durable.values import ValueCodec
from actionjournal.tools.journal.documents import ActionDoc, CallDoc, RunDoc, SentDoc

_PREVIEW = 80


@dataclass
class _Call:
    index: int
    started: CallStarted | None = None
    finished: CallFinished | None = None
    failed: CallAttemptFailed | None = None  # the last failed attempt that was to be retried
    size: int = 0
    dropped: bool = False

    @property
    def attempt(self) -> int:
        """The last attempt journaled (0: the first)."""
        return max(
            (r.attempt for r in (self.started, self.failed, self.finished) if r is not None),
            default=0,
        )


@dataclass
class _Action:
    action_id: str
    calls: dict[int, _Call] = field(default_factory=dict)
    completed: ActionCompleted | None = None
    records: int = 0
    size: int = 0
    first_at: float | None = None
    name: str | None = None  # from any of its records that carries it (calls do, format 2)


@dataclass
class JournaledRun:
    key_id: str
    epoch: int
    seq: int
    operator_uid: str
    partition: int
    first_position: int
    last_position: int
    actions: dict[str, _Action] = field(default_factory=dict)
    completed: RunCompleted | None = None
    failed: RunFailed | None = None  # its last RunFailed (a dead letter when final)
    records: int = 0
    size: int = 0
    first_at: float | None = None
    last_at: float | None = None


def start_time(record: JournalRecord) -> float | None:
    """When what the record reports began (a call: when it started)."""
    if isinstance(record, CallFinished):
        return record.at - record.duration
    return getattr(record, "at", None)


def build_runs(partition: int, items: list[ScannedRecord]) -> list[JournaledRun]:
    """Group a key's scanned records into runs, actions and calls, in journal order."""
    runs: dict[tuple[str, int, int], JournaledRun] = {}
    for item in items:
        record = item.record
        if record is None or record.key_id == CONTROL_KEY:
            continue
        ident = (item.operator_uid, record.epoch, record.seq)
        run = runs.get(ident)
        if run is None:
            run = runs[ident] = JournaledRun(
                record.key_id,
                record.epoch,
                record.seq,
                item.operator_uid,
                partition,
                item.position,
                item.position,
            )
        run.records += 1
        run.size += item.size
        run.last_position = item.position
        started = start_time(record)
        if started is not None:
            run.first_at = started if run.first_at is None else min(run.first_at, started)
        at = getattr(record, "at", None)
        if at is not None:
            run.last_at = at if run.last_at is None else max(run.last_at, at)
        if isinstance(record, RunCompleted):
            run.completed = record
            continue
        if isinstance(record, RunFailed):
            run.failed = record
            continue
        _add_to_action(run, record, item.size, started)
    return sorted(runs.values(), key=lambda r: (r.first_position, r.seq))


def _add_to_action(run: JournaledRun, record: Any, size: int, started: float | None) -> None:
    action = run.actions.get(record.action_id)
    if action is None:
        action = run.actions[record.action_id] = _Action(record.action_id)
    action.records += 1
    action.size += size
    action.name = getattr(record, "action", None) or action.name
    if started is not None and (action.first_at is None or started < action.first_at):
        action.first_at = started
    if isinstance(record, ActionCompleted):
        action.completed = record
    elif isinstance(record, CallsDropped):
        for index, dropped in action.calls.items():
            if index >= record.index:
                dropped.dropped = True
    elif isinstance(record, CallStarted):
        call = action.calls.get(record.index)
        if call is None or call.dropped or call.finished is not None:
            call = action.calls[record.index] = _Call(record.index)
        call.started = record
        call.size += size
    else:  # CallFinished or CallAttemptFailed: the outcome of an attempt
        call = action.calls.get(record.index)
        if call is None or call.dropped:
            call = action.calls[record.index] = _Call(record.index)
        if isinstance(record, CallAttemptFailed):
            call.failed, call.finished = record, None
        else:
            call.finished = record
        call.size += size


def _preview(values: ValueCodec, data: bytes | None) -> str:
    if data is None:
        return "no value"
    try:
        text = repr(values.decode(data))
    except Exception as exc:  # pickled, or a type not importable here: say so, never unpickle
        return f"<{len(data)} bytes, not shown: {type(exc).__name__}>"
    return text if len(text) <= _PREVIEW else text[: _PREVIEW - 1] + "…"


def call_status(call: _Call, action_completed: bool) -> str:
    if call.dropped:
        return "dropped"
    failed = call.failed
    if call.finished is None and failed is not None:
        if call.started is not None and call.started.attempt > failed.attempt:
            return "unknown"
        return "retrying" if failed.retry_at is not None else "gave up (for this try of the run)"
    if call.finished is None:
        return "unknown"  # started, no outcome: a reconciler or the policy decides on recovery
    if call.finished.error is not None:
        return "failed"
    return "finished" if action_completed else "replayable"


def _call_doc(call: _Call, action_completed: bool, values: ValueCodec) -> CallDoc:
    head = call.finished or call.started or call.failed
    assert head is not None
    outcome: dict[str, Any] | None = None
    if call.finished is None and call.failed is not None:
        failed = call.failed.error
        outcome = {"error": {"type": failed.type, "message": failed.message}}
    if call.finished is not None:
        error = call.finished.error
        outcome = (
            {"error": {"type": error.type, "message": error.message}}
            if error is not None
            else {
                "value": _preview(values, call.finished.value),
                "value_bytes": len(call.finished.value or b""),
            }
        )
    return CallDoc(
        index=call.index,
        status=call_status(call, action_completed),
        function_id=head.function_id,
        durable_id=head.durable_id,
        call_id=head.call_id,
        attempt=call.attempt,
        started_at=call.started.at if call.started else None,
        finished_at=call.finished.at if call.finished else None,
        duration_s=call.finished.duration if call.finished else None,
        reconciled=bool(call.finished and call.finished.reconciled),
        bytes=call.size,
        outcome=outcome,
    )


def run_doc(run: JournaledRun, values: ValueCodec) -> RunDoc:
    actions = []
    for action in run.actions.values():
        done = action.completed is not None
        calls = [
            _call_doc(call, done, values)
            for call in sorted(action.calls.values(), key=lambda c: c.index)
        ]
        completed = action.completed
        actions.append(
            ActionDoc(
                action_id=action.action_id,
                action=action.name,
                status="completed" if completed else "incomplete",
                started_at=action.first_at,
                completed_at=completed.at if completed else None,
                outputs=len(completed.outputs) if completed else 0,
                memory_ops=len(completed.memory_ops) if completed else 0,
                records=action.records,
                bytes=action.size,
                calls=calls,
                trigger_event_id=completed.trigger_event_id if completed else None,
                sent=[SentDoc(e.id, e.type) for e in completed.outputs] if completed else [],
            )
        )
    done_run = run.completed
    status = "finished" if done_run else "in flight"
    if done_run is None and run.failed is not None:
        status = "dead-lettered" if run.failed.final else "in flight (a try failed)"
    return RunDoc(
        key_id=run.key_id,
        operator_uid=run.operator_uid,
        epoch=run.epoch,
        seq=run.seq,
        partition=run.partition,
        status=status,
        started_at=run.first_at,
        completed_at=done_run.at if done_run else None,
        duration_s=(done_run.at - run.first_at) if done_run and run.first_at is not None else None,
        records=run.records,
        bytes=run.size,
        first_position=run.first_position,
        end_position=run.last_position + 1,
        actions=actions,
    )
