"""Timers and signals as the journal tells their story, for ``timers list`` and ``signals list``.

A timer or an expected signal is journaled with the ``ActionCompleted`` of the action that
asked for it, and counts from its run's ``RunCompleted`` on (a run that never completed,
or was dead-lettered, changed nothing: the key's state has none of its requests). A run it
started journaled a ``RunInput``: fired, timed out, answered, or an answer that came too
late (or twice). Values are shown decoded without pickle: reading a journal never runs
code its bytes choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import msgspec

from actionjournal.durable.records import ActionCompleted, RunCompleted, RunInput, WaitOp
from actionjournal.durable.store import Inspectable
from actionjournal.durable.values import ValueCodec
from actionjournal.tools import reading
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.runs import preview
from actionjournal.tools.toolkit import ProgressBar

TimerStatus = Literal["pending", "fired", "cancelled", "replaced"]
SignalStatus = Literal["pending", "answered", "timed_out", "unknown"]


class TimerDoc(msgspec.Struct):
    """One scheduled timer, as ``timers list --json`` prints it."""

    key_id: str
    id: str
    status: TimerStatus
    due: float  # epoch seconds
    event_type: str
    scheduled_at: float
    scheduled_seq: int  # the run that scheduled it
    operator_uid: str
    fired_at: float | None = None
    fired_seq: int | None = None  # the run it started
    ended_at: float | None = None  # cancelled or replaced: when that run completed


class LateAnswer(msgspec.Struct):
    at: float
    seq: int
    value: str  # a preview


class SignalDoc(msgspec.Struct):
    """One expected signal, as ``signals list --json`` prints it."""

    key_id: str
    id: str
    name: str
    status: SignalStatus
    deadline: float  # epoch seconds
    expected_at: float
    expected_seq: int
    operator_uid: str
    ended_at: float | None = None  # answered or timed out: when its run started
    ended_seq: int | None = None
    answer: str | None = None  # a preview of the answer
    late_answers: list[LateAnswer] = []


@dataclass
class Waits:
    """What a scan found: timers and signals by (operator uid, key id, id), in order."""

    timers: dict[tuple[str, str, str], list[TimerDoc]] = field(default_factory=dict)
    signals: dict[tuple[str, str, str], SignalDoc] = field(default_factory=dict)
    skipped: list[Unreadable] = field(default_factory=list)

    def timer_list(self) -> list[TimerDoc]:
        return [t for docs in self.timers.values() for t in docs]

    def signal_list(self) -> list[SignalDoc]:
        return list(self.signals.values())


def find_waits(
    store: Inspectable,
    namespace: str,
    operator_uid: str | None,
    key_id: str | None = None,
    progress: bool | None = None,
) -> Waits:
    """Scan every partition of the namespace (one key's records share a partition)."""
    found = Waits()
    values = ValueCodec()  # no pickle
    for partition in store.partitions():
        bar = ProgressBar(f"reading partition {partition}", progress)
        # A run's requests, until its RunCompleted makes them count.
        asked: dict[tuple[str, str, int, int], list[tuple[WaitOp, float]]] = {}
        try:
            for item in reading.scan(
                store, partition, namespace, operator_uid, found.skipped, progress=bar
            ):
                record = item.record
                if record is None or (key_id is not None and record.key_id != key_id):
                    continue
                uid = item.operator_uid
                run = (uid, record.key_id, record.epoch, record.seq)
                if isinstance(record, ActionCompleted) and record.waits:
                    asked.setdefault(run, []).extend((op, record.at) for op in record.waits)
                elif isinstance(record, RunCompleted):
                    for op, at in asked.pop(run, []):
                        _requested(found, uid, record, op, at)
                elif isinstance(record, RunInput):
                    _started(found, uid, record, values)
        finally:
            bar.close()
    return found


def _requested(found: Waits, uid: str, done: RunCompleted, op: WaitOp, asked_at: float) -> None:
    where = (uid, done.key_id, op.id)
    if op.op == "expect":
        found.signals[where] = SignalDoc(
            key_id=done.key_id,
            id=op.id,
            name=op.name,
            status="pending",
            deadline=op.due,
            expected_at=asked_at,
            expected_seq=done.seq,
            operator_uid=uid,
        )
        return
    docs = found.timers.setdefault(where, [])
    current = docs[-1] if docs and docs[-1].status == "pending" else None
    if current is not None:
        current.status = "cancelled" if op.op == "cancel" else "replaced"
        current.ended_at = done.at
    if op.op == "schedule":
        docs.append(
            TimerDoc(
                key_id=done.key_id,
                id=op.id,
                status="pending",
                due=op.due,
                event_type=op.event.type if op.event else "",
                scheduled_at=asked_at,
                scheduled_seq=done.seq,
                operator_uid=uid,
            )
        )


def _started(found: Waits, uid: str, record: RunInput, values: ValueCodec) -> None:
    where = (uid, record.key_id, record.id)
    if record.kind == "timer":
        if not record.delivered:
            return  # it had been cancelled or replaced: shown as such
        for doc in reversed(found.timers.get(where, [])):
            if doc.status == "pending":
                doc.status, doc.fired_at, doc.fired_seq = "fired", record.at, record.seq
                return
        return
    signal = found.signals.get(where)
    answer = preview(values, record.value) if record.value is not None else None
    if not record.delivered:
        late = LateAnswer(record.at, record.seq, answer or "")
        if signal is None:  # its expectation is not in the journal (cleaned up, or never)
            signal = found.signals[where] = SignalDoc(
                key_id=record.key_id,
                id=record.id,
                name="",
                status="unknown",
                deadline=0.0,
                expected_at=0.0,
                expected_seq=-1,
                operator_uid=uid,
            )
        signal.late_answers.append(late)
        return
    if signal is None:
        return
    signal.status = "answered" if record.kind == "answer" else "timed_out"
    signal.ended_at, signal.ended_seq, signal.answer = record.at, record.seq, answer
