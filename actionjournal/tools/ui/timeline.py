"""A run's records as a timeline: bars over time, entries in journal order, restarts.

Each record type has one renderer (:func:`renders`): it turns a record into an entry and,
where it has a span, a bar. A record type added to the journal is shown by adding one
renderer here; until then it still appears, as a generic entry with its time.

Restarts are shown where the journal proves one: a call started without an outcome that a
later record settles (a reconciled outcome, or the call started again), a try of the run
that failed (``RunFailed``, not final) with records after it, or a dead letter re-driven.
Before each, what the restarted process replayed (completed actions, calls with outcomes
of unfinished actions) is told apart from what it executed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import msgspec

from actionjournal.durable.records import (
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    RunCompleted,
    RunFailed,
)
from actionjournal.tools.journal.runs import build_runs, call_status
from actionjournal.tools.toolkit import fmt_time
from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.queries import RunRow
from actionjournal.tools.ui.values import Shown


class Entry(msgspec.Struct, omit_defaults=True):
    """One record of the run, as the timeline lists it."""

    position: int
    kind: str
    lane: str
    title: str
    at: float | None = None
    restart: int = 0  # how many proven restarts came before it (0: the first process)
    replayed: bool = False  # a later restart replayed it instead of running it again
    details: dict[str, Any] = {}


class Bar(msgspec.Struct):
    """A span on a lane: an attempt of a call, a backoff before the next one, an action."""

    lane: str
    kind: str  # action | attempt | failed | backoff | unknown | reconciled
    label: str
    start: float
    end: float
    restart: int = 0


class Restart(msgspec.Struct):
    number: int
    before_position: int  # the first record written after it
    kind: str  # "restart" or "re-drive"
    evidence: str
    replayed_actions: list[str]
    replayed_calls: list[str]
    settled_calls: list[str]  # started without an outcome: reconciled or run again
    executed_records: int  # records written after it (until the next one)
    at: float | None = None  # when the first record after it was written
    ran_again: list[str] = []  # calls with an outcome before it that ran again after it


class CallSummary(msgspec.Struct):
    lane: str
    action: str
    index: int
    function_id: str
    call_id: str
    status: str
    attempts: int
    reconciled: bool
    outcome: str


class Timeline(msgspec.Struct):
    run: RunRow
    start: float
    end: float
    lanes: list[str]
    bars: list[Bar]
    entries: list[Entry]
    restarts: list[Restart]
    calls: list[CallSummary]
    events: list[dict[str, Any]]
    memory: list[dict[str, Any]]
    outcome: dict[str, Any] | None
    unreadable: list[str]


@dataclass
class Builder:
    """What renderers add to while the run's records are read in order."""

    shown: Shown
    entries: list[Entry] = field(default_factory=list)
    bars: list[Bar] = field(default_factory=list)
    lanes: dict[str, None] = field(default_factory=dict)
    events: list[dict[str, Any]] = field(default_factory=list)
    memory: list[dict[str, Any]] = field(default_factory=list)
    outcome: dict[str, Any] | None = None
    action_names: dict[str, str] = field(default_factory=dict)  # action id -> name
    action_start: dict[str, float] = field(default_factory=dict)
    last_attempt_end: dict[str, float] = field(default_factory=dict)  # call lane -> when
    action_last: dict[str, float] = field(default_factory=dict)  # action id -> latest record
    started: dict[str, tuple[float, int]] = field(default_factory=dict)  # lane -> at, attempt

    def settle(self, lane: str, attempt: int, until: float, reconciled: bool = False) -> None:
        """End the lane's started attempt: an outcome of the same attempt ends it as usual;
        anything else (a reconciler's answer, a new start) shows it never finished."""
        begun = self.started.pop(lane, None)
        if begun is not None and (reconciled or begun[1] != attempt):
            self.bar(lane, "unknown", f"attempt {begun[1] + 1}: no outcome journaled",
                     begun[0], until)  # fmt: skip

    def add(self, item: jr.Scanned, lane: str, title: str, **details: Any) -> Entry:
        self.lanes.setdefault(lane, None)
        record = item.record
        entry = Entry(
            position=item.position,
            kind=type(record).__name__,
            lane=lane,
            title=title,
            at=getattr(record, "at", None),
            details={k: v for k, v in details.items() if v not in (None, "", [], {})},
        )
        self.entries.append(entry)
        return entry

    def bar(self, lane: str, kind: str, label: str, start: float, end: float) -> None:
        self.lanes.setdefault(lane, None)
        self.bars.append(Bar(lane, kind, label, start, max(end, start)))

    def action_lane(self, action_id: str, name: str) -> str:
        if name:
            self.action_names[action_id] = name
        return f"action {self.action_names.get(action_id) or '?'} #{action_id[:8]}"

    def call_lane(self, record: Any) -> str:
        action = self.action_names.get(record.action_id) or record.action or "?"
        if record.action:
            self.action_names[record.action_id] = record.action
        self.action_start.setdefault(record.action_id, _start_of(record))
        return f"  call {record.index} of {action} #{record.action_id[:8]}: {record.function_id}"


Renderer = Callable[[Any, jr.Scanned, Builder], None]
RENDERERS: dict[type, Renderer] = {}


def renders(kind: type) -> Callable[[Renderer], Renderer]:
    """Register the renderer of a record type (one per type)."""

    def register(fn: Renderer) -> Renderer:
        RENDERERS[kind] = fn
        return fn

    return register


def _start_of(record: Any) -> float:
    if isinstance(record, CallFinished):
        return record.at - record.duration
    return float(getattr(record, "at", 0.0) or 0.0)


@renders(CallStarted)
def _call_started(record: CallStarted, item: jr.Scanned, b: Builder) -> None:
    lane = b.call_lane(record)
    b.settle(lane, record.attempt, record.at)
    b.started[lane] = (record.at, record.attempt)
    b.add(
        item,
        lane,
        f"attempt {record.attempt + 1} started (journaled before it ran: it has a reconciler "
        "or an on_unknown policy other than rerun)",
        call_id=record.call_id,
        durable_id=record.durable_id,
    )


@renders(CallAttemptFailed)
def _attempt_failed(record: CallAttemptFailed, item: jr.Scanned, b: Builder) -> None:
    lane = b.call_lane(record)
    start = max(
        b.last_attempt_end.get(lane, 0.0),
        b.action_last.get(record.action_id, 0.0),
        b.action_start.get(record.action_id, 0.0),
    )
    start = start if 0 < start <= record.at else record.at
    begun = b.started.get(lane)
    if begun is not None and begun[1] == record.attempt:  # journaled when it started
        start = begun[0]
    b.settle(lane, record.attempt, start)
    b.action_last[record.action_id] = record.at
    b.bar(lane, "failed", f"attempt {record.attempt + 1} failed", min(start, record.at), record.at)
    if record.retry_at is not None:
        b.bar(lane, "backoff", "backoff", record.at, record.retry_at)
        b.last_attempt_end[lane] = record.retry_at
        then = f"; next attempt at {fmt_time(record.retry_at)}"
    else:
        then = "; no retry in this try of the run"
    b.add(
        item,
        lane,
        f"attempt {record.attempt + 1} failed: {record.error.type}: "
        f"{b.shown.cut(record.error.message)}{then}",
        call_id=record.call_id,
        retry_at=record.retry_at,
        error=b.shown.error(record.error),
    )


@renders(CallFinished)
def _call_finished(record: CallFinished, item: jr.Scanned, b: Builder) -> None:
    lane = b.call_lane(record)
    start = record.at - record.duration
    b.settle(lane, record.attempt, start, record.reconciled)
    if record.reconciled:
        kind, what = "reconciled", "settled by its reconciler"
    elif record.error is not None:
        kind, what = "failed", f"failed: {record.error.type}: {b.shown.cut(record.error.message)}"
    else:
        kind, what = "attempt", "returned"
    b.bar(lane, kind, f"attempt {record.attempt + 1}", start, record.at)
    b.action_last[record.action_id] = record.at
    details: dict[str, Any] = {"call_id": record.call_id, "duration_s": record.duration}
    if record.error is not None:
        details["error"] = b.shown.error(record.error)
    else:
        details["result"] = b.shown.value(record.value, "result")
    b.add(item, lane, f"attempt {record.attempt + 1} {what}", **details)


@renders(CallsDropped)
def _calls_dropped(record: CallsDropped, item: jr.Scanned, b: Builder) -> None:
    lane = b.action_lane(record.action_id, "")
    b.add(
        item,
        lane,
        f"divergence policy 'rerun' dropped the recorded calls from index {record.index} on",
    )


@renders(ActionCompleted)
def _action_completed(record: ActionCompleted, item: jr.Scanned, b: Builder) -> None:
    lane = b.action_lane(record.action_id, record.action)
    start = b.action_start.get(record.action_id, record.at)
    b.bar(lane, "action", record.action, start, record.at)
    sent = []
    for event in record.outputs:
        ok, attributes = b.shown.decode(event.attributes)
        shown = b.shown.text(attributes, "event") if ok else str(attributes)
        event_doc = {"id": event.id, "type": event.type, "attributes": shown,
                     "action": record.action,  # lineage: the action and event it came from
                     "upstream_event_id": record.trigger_event_id}  # fmt: skip
        sent.append(event_doc)
        b.events.append({**event_doc, "position": item.position, "at": record.at})
    ops = []
    for op in record.memory_ops:
        root = f"memory.{op.path}"
        value = b.shown.value(op.value, root) if op.value is not None else None
        doc: dict[str, Any] = {"scope": op.scope, "op": op.op, "path": op.path, "value": value}
        ops.append(doc)
        b.memory.append({**doc, "action": record.action, "position": item.position})
    b.add(
        item,
        lane,
        f"action {record.action} completed: {len(sent)} event(s) sent, {len(ops)} memory update(s)",
        events=sent,
        memory=ops,
        trigger_event_id=record.trigger_event_id,
    )


@renders(RunCompleted)
def _run_completed(record: RunCompleted, item: jr.Scanned, b: Builder) -> None:
    b.outcome = {"status": "completed", "at": record.at}
    b.add(item, "run", "run completed")


@renders(RunFailed)
def _run_failed(record: RunFailed, item: jr.Scanned, b: Builder) -> None:
    error = b.shown.error(record.error)
    status = (
        "dead-lettered" if record.final else "a try failed (the run runs again after a restart)"
    )
    b.outcome = {"status": status, "at": record.at, "error": error}
    b.add(
        item,
        "run",
        f"run {status}: {record.error.type}: {b.shown.cut(record.error.message)}",
        error=error,
        input=b.shown.value(record.input, "input"),
        key=b.shown.value(record.key, "key") if record.key is not None else None,
    )


def _generic(record: Any, item: jr.Scanned, b: Builder) -> None:
    b.add(item, "run", f"{type(record).__name__} record")


def build_timeline(
    run: RunRow, items: list[jr.Scanned], unreadable: list[jr.Unreadable], shown: Shown
) -> Timeline:
    """The timeline of ``run`` from its records (``items``, in journal order)."""
    b = Builder(shown)
    b.lanes["run"] = None
    for item in items:
        record = item.record
        if record is None:
            continue
        RENDERERS.get(type(record), _generic)(record, item, b)
    restarts = _restarts(items, b)
    last = max((e.at for e in b.entries if e.at is not None), default=run.last_at)
    for lane in list(b.started):  # started, no outcome yet: in flight, or its process died
        b.settle(lane, -1, last)
    times = [t for bar in b.bars for t in (bar.start, bar.end)]
    times += [e.at for e in b.entries if e.at is not None]
    start = min(times, default=run.first_at)
    end = max(times, default=run.last_at)
    return Timeline(
        run=run,
        start=start,
        end=end,
        lanes=_ordered(list(b.lanes)),
        bars=b.bars,
        entries=b.entries,
        restarts=restarts,
        calls=_calls(items, run, b, shown),
        events=b.events,
        memory=b.memory,
        outcome=b.outcome,
        unreadable=[jr.describe_unreadable(bad) for bad in unreadable],
    )


def _ordered(lanes: list[str]) -> list[str]:
    """The run first, then each action followed by its calls, in order of appearance."""
    order: dict[str, int] = {}
    for lane in lanes:
        order.setdefault(lane.rsplit("#", 1)[-1][:8], len(order))

    def place(lane: str) -> tuple[int, int, str]:
        if lane == "run":
            return (-1, 0, "")
        return (order[lane.rsplit("#", 1)[-1][:8]], lane.startswith("  "), lane)

    return sorted(lanes, key=place)


def _restarts(items: list[jr.Scanned], b: Builder) -> list[Restart]:
    """The restarts the records prove, in order; marks entries with them."""
    found: dict[int, tuple[str, str]] = {}  # position of the first record after -> evidence
    started: dict[tuple[str, int], tuple[int, int]] = {}  # call -> (attempt, position) unsettled
    records = [item for item in items if item.record is not None]
    for n, item in enumerate(records):
        record = item.record
        if isinstance(record, (CallStarted, CallFinished, CallAttemptFailed)):
            slot = (record.action_id, record.index)
            open_start = started.pop(slot, None)
            if open_start is not None and (
                isinstance(record, CallStarted) or getattr(record, "reconciled", False)
            ):
                how = (
                    "settled by its reconciler"
                    if isinstance(record, CallFinished)
                    else ("started again")
                )
                found.setdefault(
                    item.position,
                    (
                        "restart",
                        f"call {record.function_id} #{record.index} was started (position "
                        f"{open_start[1]}) and never finished; then {how}",
                    ),
                )
            if isinstance(record, CallStarted):
                started[slot] = (record.attempt, item.position)
        elif isinstance(record, RunFailed) and n + 1 < len(records):
            after = records[n + 1].position
            kind = "re-drive" if record.final else "restart"
            why = (
                "the run was dead-lettered, then re-driven"
                if record.final
                else "a try of the run failed (retry-then-dead-letter): the task restarted"
            )
            found.setdefault(after, (kind, why))
    boundaries = sorted(found)
    restarts = []
    ran_again: dict[int, list[str]] = {}
    for number, boundary in enumerate(boundaries, start=1):
        kind, evidence = found[boundary]
        completed = {
            item.record.action_id
            for item in records
            if item.position < boundary and isinstance(item.record, ActionCompleted)
        }
        actions, calls, settled = [], [], []
        following = boundaries[number] if number < len(boundaries) else None
        again = {
            (i.record.action_id, i.record.index)
            for i in records
            if i.position >= boundary
            and (following is None or i.position < following)
            and isinstance(i.record, (CallStarted, CallFinished, CallAttemptFailed))
        }
        for item in records:
            if item.position >= boundary:
                break
            record = item.record
            if isinstance(record, ActionCompleted):
                actions.append(record.action)
            elif (
                isinstance(record, CallFinished)
                and record.action_id not in completed
                and (record.action_id, record.index) not in again
            ):
                calls.append(f"{record.function_id} #{record.index}")
            elif isinstance(record, CallFinished) and record.action_id not in completed:
                ran_again.setdefault(number, []).append(f"{record.function_id} #{record.index}")
        for item in records:
            if kind != "restart":
                break
            if item.position == boundary and isinstance(item.record, (CallStarted, CallFinished)):
                settled.append(f"{item.record.function_id} #{item.record.index}")
        executed = sum(
            1
            for item in records
            if item.position >= boundary and (following is None or item.position < following)
        )
        at = next((_start_of(i.record) for i in records if i.position == boundary), None)
        restarts.append(
            Restart(
                number,
                boundary,
                kind,
                evidence,
                actions,
                calls,
                settled,
                executed,
                at,
                sorted(set(ran_again.get(number, []))),
            )
        )
    slots: dict[tuple[str, int], list[int]] = {}
    for item in records:
        if isinstance(item.record, (CallStarted, CallFinished, CallAttemptFailed)):
            slots.setdefault((item.record.action_id, item.record.index), []).append(item.position)
    done_actions = [
        (i.position, i.record.action_id) for i in records if isinstance(i.record, ActionCompleted)
    ]
    for entry in b.entries:
        entry.restart = sum(1 for boundary in boundaries if entry.position >= boundary)
        later = [boundary for boundary in boundaries if boundary > entry.position]
        if not later or entry.kind not in ("ActionCompleted", "CallFinished"):
            continue
        if entry.kind == "ActionCompleted":
            entry.replayed = True
            continue
        # A journaled outcome comes back from the journal after a restart, unless the call
        # has records after it (a re-drive retried it, or it ran again).
        call: Any = next(i.record for i in records if i.position == entry.position)
        positions = slots.get((call.action_id, call.index), [])
        entry.replayed = not any(p > entry.position for p in positions) or any(
            action_id == call.action_id and entry.position < position < later[0]
            for position, action_id in done_actions
        )
    return restarts


def _calls(items: list[jr.Scanned], run: RunRow, b: Builder, shown: Shown) -> list[CallSummary]:
    """Each call's status as ``journal inspect`` says it (its run-building code)."""
    built = build_runs(run.partition, items)
    summaries = []
    for built_run in built:
        for action in built_run.actions.values():
            done = action.completed is not None
            for call in sorted(action.calls.values(), key=lambda c: c.index):
                head = call.finished or call.started or call.failed
                if head is None:
                    continue
                if call.finished is not None and call.finished.error is None:
                    outcome = shown.value(call.finished.value, "result")
                elif call.finished is not None and call.finished.error is not None:
                    outcome = (
                        f"{call.finished.error.type}: {shown.cut(call.finished.error.message)}"
                    )
                elif call.failed is not None:
                    outcome = f"{call.failed.error.type}: {shown.cut(call.failed.error.message)}"
                else:
                    outcome = "no outcome journaled"
                summaries.append(
                    CallSummary(
                        lane=b.call_lane(head),
                        action=head.action or b.action_names.get(head.action_id, "?"),
                        index=call.index,
                        function_id=head.function_id,
                        call_id=head.call_id,
                        status=call_status(call, done),
                        attempts=call.attempt + 1,
                        reconciled=bool(call.finished and call.finished.reconciled),
                        outcome=outcome,
                    )
                )
    return summaries
