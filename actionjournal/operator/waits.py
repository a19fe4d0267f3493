"""A key's timers and expected signals: in its keyed state, in a run, and what fires.

A key keeps its pending timers and expected signals in its
:class:`~actionjournal.operator.engine.KeyState`, so they are checkpointed with it, move
with the key when a job is rescaled and survive a restore in upgrade mode. An action
changes them through its context (:class:`ActionWaits`); the changes are journaled with
its ``ActionCompleted`` and reach the state only when its run completes
(:func:`applied`), as memory updates do. When a timer is due, or a deadline passed, the
binding queues a run for it (:class:`Origin`); that run looks again, when it starts,
whether the timer is still pending (it may have been cancelled or replaced meanwhile) and
whether the signal is still unanswered: the first of answer and timeout wins.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.events import Event
from actionjournal.durable.identity import wait_id
from actionjournal.durable.records import EventData, RunInput, WaitOp
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.values import ValueCodec
from actionjournal.durable.waits import (
    Signal,
    SignalReceived,
    SignalTimedOut,
    aware,
    due_time,
    seconds,
)

Clock = Callable[[], float]
"""Epoch seconds now: ``time.time``, or a clock a test controls."""


class Timer(msgspec.Struct, array_like=True, frozen=True, omit_defaults=True):
    """A pending timer: at ``due`` (epoch seconds) its event starts a run of the key."""

    id: str
    due: float
    event_type: str
    attributes: bytes  # ValueCodec bytes of the event's attributes
    token: str = ""  # which schedule of ``id`` this is ("": the id itself)
    queued: int = -1  # the seq of the run queued for it (-1: not due yet)
    seq: int = -1  # the run that scheduled it (cleanup keeps that run's records)

    @property
    def schedule(self) -> str:
        return self.token or self.id


class SignalWait(msgspec.Struct, array_like=True, frozen=True, omit_defaults=True):
    """An expected signal: answered by a ``SignalInput`` of its id, or timed out at ``deadline``."""

    id: str
    name: str
    deadline: float
    timeout_type: str  # the event delivered at the deadline (SignalTimedOut's, or the action's)
    timeout_attributes: bytes
    queued: int = -1  # the seq of the run queued for its deadline (-1: not passed yet)
    seq: int = -1  # the run that expected it


class Origin(msgspec.Struct, array_like=True, frozen=True, omit_defaults=True):
    """What a run that no input of the job's stream started is for (in its PendingInput)."""

    kind: Literal["timer", "timeout", "answer"]
    id: str  # the timer's or the signal's id
    token: str = ""  # timers: which schedule fired ("": the id)
    event_type: str = ""  # timers: the event's type (its attributes are the pending input)


@dataclass
class Delivery:
    """What a run started by an :class:`Origin` delivers (``event`` None: nothing, its
    timer was cancelled or replaced, or its signal already answered or timed out), the
    record that says so, and what of the key's waits it used up."""

    event: Event | None
    record: dict[str, Any]  # the RunInput's own fields
    consumed: Origin | None


class RunWaits:
    """The key's timers and signals as one run sees them: those of the state when it
    started, with the changes its actions made since (replayed ones included)."""

    def __init__(
        self,
        timers: Iterable[Timer],
        signals: Iterable[SignalWait],
        operator_uid: str,
        key_id: str,
        values: ValueCodec,
        clock: Clock,
        metrics: JournalMetrics | None,
    ) -> None:
        self.timers = {t.id: t for t in timers}
        self.signals = {s.id: s for s in signals}
        self.operator_uid = operator_uid
        self.key_id = key_id
        self.values = values
        self.clock = clock
        self._metrics = metrics  # None: a replayed run, counted when it ran

    def count(self, kind: str, event: str) -> None:
        if self._metrics is not None:
            self._metrics.wait(kind, event)

    def deliver(self, origin: Origin, data: bytes, event_id: str) -> Delivery:
        """The run for ``origin`` starts: what it delivers, checked against the waits now."""
        fields: dict[str, Any] = {"kind": origin.kind, "id": origin.id, "token": origin.token}
        if origin.kind == "timer":
            timer = self.timers.get(origin.id)
            if timer is None or timer.schedule != (origin.token or origin.id):
                return Delivery(None, fields | {"name": "", "due": 0.0, "delivered": False}, None)
            del self.timers[origin.id]
            fields |= {"name": "", "due": timer.due, "delivered": True}
            fired = Event.rebuild(timer.event_type, self.values.decode(data), event_id)
            self.count("timers", "fired")
            return Delivery(fired, fields | {"event_type": fired.type}, origin)
        signal = self.signals.get(origin.id)
        if signal is None:  # answered or timed out before: the first one won
            if origin.kind == "answer":
                self.count("signals", "late")
            late = {"name": "", "due": 0.0, "delivered": False}
            return Delivery(None, fields | late | _answer(origin, data), None)
        del self.signals[origin.id]
        fields |= {"name": signal.name, "due": signal.deadline, "delivered": True}
        if origin.kind == "answer":
            value = self.values.decode(data)
            event: Event = SignalReceived(signal.name, signal.id, value, id=event_id)
            self.count("signals", "received")
            fields |= _answer(origin, data)
        else:
            attributes = self.values.decode(signal.timeout_attributes)
            event = Event.rebuild(signal.timeout_type, attributes, event_id)
            self.count("signals", "timed_out")
        return Delivery(event, fields | {"event_type": event.type}, origin)

    def redeliver(self, started: RunInput, data: bytes, event_id: str) -> Delivery:
        """A re-driven timer or signal run (its dead letter, ``data`` its input): what it
        delivered the first time, whatever the key's timers and signals are now."""
        fields = {f: getattr(started, f) for f in ("kind", "id", "token", "name", "due")}
        fields |= {"delivered": True, "event_type": started.event_type}
        if started.kind == "answer":
            value = self.values.decode(data)
            event = SignalReceived(started.name, started.id, value, id=event_id)
            return Delivery(event, fields | {"value": data}, None)
        return Delivery(
            Event.rebuild(started.event_type, self.values.decode(data), event_id), fields, None
        )

    def replay(self, ops: Iterable[WaitOp], seq: int) -> None:
        """A completed action's journaled changes, applied again instead of its body."""
        _apply(self.timers, self.signals, ops, seq)


def _answer(origin: Origin, data: bytes) -> dict[str, Any]:
    return {"value": data} if origin.kind == "answer" else {}


class ActionWaits:
    """The timer and signal requests of one action execution: applied to the run's view at
    once (a later request of the run sees them) and journaled with the action."""

    def __init__(self, run: RunWaits, action: str, action_id: str, seq: int) -> None:
        self.run = run
        self.action = action
        self.action_id = action_id
        self.seq = seq
        self.ops: list[WaitOp] = []
        self._requests = 0

    def _next_id(self) -> str:
        index = self._requests
        self._requests += 1
        return wait_id(self.run.operator_uid, self.run.key_id, self.action_id, index)

    def _event(self, event: Event, what: str) -> tuple[str, bytes]:
        if not isinstance(event, Event):
            raise TypeError(f"{what} takes an Event, got {type(event).__name__}")
        extra = getattr(event, "__dict__", None)
        if extra:
            raise TypeError(
                f"event {event.type!r} ({type(event).__name__}) keeps {sorted(extra)} outside "
                "its attributes; only attributes are kept until the timer fires. Keep the data "
                "in attributes and expose it with properties"
            )
        data = self.run.values.encode(
            event.attributes, f"attributes of event {event.type!r} ({what} in {self.action})"
        )
        return event.type, data

    def schedule_event(
        self, event: Event, delay: Any = None, at: Any = None, timer_id: str | None = None
    ) -> str:
        what = "schedule_event"
        if timer_id is not None and (not isinstance(timer_id, str) or not timer_id):
            raise ConfigurationError(
                f"{what}: timer_id={timer_id!r}: use a non-empty str, or None for an id derived "
                "from the run, the action and the request's position"
            )
        due = due_time(self.run.clock(), delay, at, what)
        event_type, data = self._event(event, what)
        token = self._next_id()
        tid = timer_id or token
        op = WaitOp(
            "schedule",
            tid,
            due,
            EventData("", event_type, data),
            token="" if tid == token else token,
        )
        self.ops.append(op)
        self.run.replay([op], self.seq)
        self.run.count("timers", "scheduled")
        return tid

    def cancel_timer(self, timer_id: str) -> bool:
        if timer_id not in self.run.timers:
            return False
        op = WaitOp("cancel", timer_id, 0.0)
        self.ops.append(op)
        self.run.replay([op], self.seq)
        self.run.count("timers", "cancelled")
        return True

    def expect_signal(self, name: str, timeout: Any, timeout_event: Event | None) -> Signal:
        what = "expect_signal"
        if not isinstance(name, str) or not name:
            raise ConfigurationError(f"{what}: name={name!r}: use a non-empty str")
        deadline = self.run.clock() + seconds(timeout, f"{what}: timeout")
        sid = self._next_id()
        if timeout_event is None:  # journaled too: a dead-lettered timeout re-drives with it
            timeout_event = SignalTimedOut(name, sid)
        event_type, data = self._event(timeout_event, f"{what}'s timeout_event")
        op = WaitOp("expect", sid, deadline, EventData("", event_type, data), name=name)
        self.ops.append(op)
        self.run.replay([op], self.seq)
        self.run.count("signals", "expected")
        return Signal(sid, name, aware(deadline))


def applied(
    timers: list[Timer],
    signals: list[SignalWait],
    consumed: Origin | None,
    ops: Iterable[WaitOp],
    seq: int,
) -> tuple[list[Timer], list[SignalWait]]:
    """The key's waits after run ``seq`` completed: ``consumed`` used up (the timer that
    fired, the signal answered or timed out), then its actions' changes in journal order."""
    by_id = {t.id: t for t in timers}
    expected = {s.id: s for s in signals}
    if consumed is not None:
        if consumed.kind == "timer":
            timer = by_id.get(consumed.id)
            if timer is not None and timer.schedule == (consumed.token or consumed.id):
                del by_id[consumed.id]
        else:
            expected.pop(consumed.id, None)
    _apply(by_id, expected, ops, seq)
    return sorted(by_id.values(), key=_due), sorted(expected.values(), key=_deadline)


def _apply(
    timers: dict[str, Timer], signals: dict[str, SignalWait], ops: Iterable[WaitOp], seq: int
) -> None:
    """Apply ``ops`` to ``timers`` and ``signals`` (by id), in place."""
    for op in ops:
        if op.op == "schedule":
            assert op.event is not None
            timers[op.id] = Timer(
                op.id, op.due, op.event.type, op.event.attributes, op.token, seq=seq
            )
        elif op.op == "cancel":
            timers.pop(op.id, None)
        else:
            assert op.event is not None
            signals[op.id] = SignalWait(
                op.id, op.name, op.due, op.event.type, op.event.attributes, seq=seq
            )


def _due(timer: Timer) -> tuple[float, str]:
    return timer.due, timer.id


def _deadline(signal: SignalWait) -> tuple[float, str]:
    return signal.deadline, signal.id


def next_due(timers: Iterable[Timer], signals: Iterable[SignalWait]) -> float | None:
    """When the key's next timer or deadline that has no run queued yet is due."""
    dues = [t.due for t in timers if t.queued < 0]
    dues += [s.deadline for s in signals if s.queued < 0]
    return min(dues) if dues else None
