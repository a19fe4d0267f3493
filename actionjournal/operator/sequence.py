"""Which run takes a key's next sequence number: an input of the job's stream, a due timer,
or a signal's passed deadline.

Normally in the order they come: an input when it arrives, a timer when it is due, and a
timer due before an input arrived goes first. A run's journal records are found by its
sequence number, so after a restore the key must number them as its journal did, or a
run would meet another's records and its actions would run again.

After a restore, the key's journal may hold runs its state does not reflect (they ran
after the checkpoint). Each such run journaled what started it: a timer or a deadline
(its ``RunInput``), or an input of the stream (anything else). The restored key gives
those numbers out in that order: a timer the journal shows at a number is queued there
(even when the restored clock says it is not due yet: it fired); an input arriving while
the journal shows a timer next waits (``held``) until runs before it have scheduled that
timer again; a due timer waits while the journal shows a stream input next, until the
source delivers it again (a Flink source rewinds to the checkpoint and does). Nothing
waits forever: a journaled timer that no run schedules again once the runs before it
finished is passed over, and timers wait for the source at most
:data:`REDELIVERY_WAIT_S` (then the numbering goes on in arrival order, and an input
that comes later runs as a new one, its actions again).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

import msgspec

from actionjournal.durable.replay import KeyJournal
from actionjournal.operator.waits import Origin, SignalWait, Timer

log = logging.getLogger(__name__)
H = TypeVar("H")
REDELIVERY_WAIT_S = 60.0
"""How long due timers of a restored key wait for the source to deliver the inputs its
journal holds runs of again, before they fire without them."""


@dataclass
class Journaled:
    """The runs a restored key's journal holds beyond its state, by sequence number: the
    schedule (token) of the timer or deadline that started each, ``None`` for an input of
    the job's stream. Numbers are removed as the key gives them out again."""

    origins: dict[int, str | None] = field(default_factory=dict)
    since: float = 0.0  # when the journal was read (the engine's clock)

    @classmethod
    def of(cls, journal: KeyJournal, since: float) -> Journaled:
        origins: dict[int, str | None] = {}
        for seq, run in journal.runs.items():
            started = run.input
            if started is not None and started.kind == "timer":
                origins[seq] = started.token or started.id
            elif started is not None and started.kind == "timeout":
                origins[seq] = started.id
            else:
                origins[seq] = None
        return cls(origins, since)

    def waiting_for_source(self, next_seq: int) -> bool:
        return next_seq in self.origins and self.origins[next_seq] is None


Sequenced = tuple[int, list[H], list[H], list[Timer], list[SignalWait]]
"""The next sequence number, the runs queued (in number order), the inputs still held, the
timers and the signals (those queued marked so)."""


def sequenced(
    next_seq: int,
    busy: bool,
    held: list[H],
    timers: list[Timer],
    signals: list[SignalWait],
    now: float,
    journaled: Journaled | None,
    make: Callable[[int, bytes, Origin], H],
    renumber: Callable[[H, int], H],
) -> Sequenced[H] | None:
    """Give out the key's next sequence numbers (see the module); ``None`` if nothing moved.

    ``busy``: the key has queued runs (one of them may still schedule a journaled timer).
    ``make`` builds the queued run of a timer or deadline; ``renumber`` gives a held input
    its number.
    """
    seq = next_seq
    held, timers, signals = list(held), list(timers), list(signals)
    queued: list[H] = []
    origins = journaled.origins if journaled is not None else {}
    moved = False
    while True:
        for old in [s for s in origins if s < seq]:
            del origins[old]
        if seq in origins:
            token = origins[seq]
            if token is not None:
                fired = _queue(timers, signals, seq, token)
                if fired is not None:
                    queued.append(make(seq, *fired))
                    seq += 1
                    continue
                if busy or queued:
                    break  # a run before it may schedule it again
                log.warning(
                    "the journal holds a run of seq %d started by timer or signal deadline %s, "
                    "which the restored key no longer schedules: the number goes to what "
                    "comes next",
                    seq,
                    token,
                )
                del origins[seq]
                moved = True
                continue
            if held:
                queued.append(renumber(held.pop(0), seq))
                seq += 1
                continue
            assert journaled is not None
            if _earliest(timers, signals, now) is None or now - journaled.since < REDELIVERY_WAIT_S:
                break  # wait for the source to deliver the journaled input again
            log.warning(
                "the journal holds runs of seqs %s started by inputs that were not delivered "
                "again within %.0f s of the restore: due timers fire now, and those inputs, "
                "if they come, run as new inputs (their actions run again)",
                sorted(s for s, t in origins.items() if t is None),
                REDELIVERY_WAIT_S,
            )
            origins.clear()
            moved = True
            continue
        due = _earliest(timers, signals, now)
        if due is not None:
            queued.append(make(seq, *_queue_at(timers, signals, seq, due)))
            seq += 1
            continue
        if held:
            queued.append(renumber(held.pop(0), seq))
            seq += 1
            continue
        break
    if seq == next_seq and not moved:
        return None
    return seq, queued, held, timers, signals


def _earliest(timers: list[Timer], signals: list[SignalWait], now: float) -> tuple[str, int] | None:
    """The earliest timer or deadline due by ``now`` without a run queued: (kind, index)."""
    best: tuple[float, str, int] | None = None
    for i, timer in enumerate(timers):
        if timer.queued < 0 and timer.due <= now and (best is None or timer.due < best[0]):
            best = (timer.due, "timer", i)
    for i, signal in enumerate(signals):
        if (
            signal.queued < 0
            and signal.deadline <= now
            and (best is None or signal.deadline < best[0])
        ):
            best = (signal.deadline, "timeout", i)
    return None if best is None else (best[1], best[2])


def _queue(
    timers: list[Timer], signals: list[SignalWait], seq: int, token: str
) -> tuple[bytes, Origin] | None:
    """Queue the timer or deadline of schedule ``token`` at ``seq``, if the key has it."""
    for i, timer in enumerate(timers):
        if timer.queued < 0 and timer.schedule == token:
            return _queue_at(timers, signals, seq, ("timer", i))
    for i, signal in enumerate(signals):
        if signal.queued < 0 and signal.id == token:
            return _queue_at(timers, signals, seq, ("timeout", i))
    return None


def _queue_at(
    timers: list[Timer], signals: list[SignalWait], seq: int, which: tuple[str, int]
) -> tuple[bytes, Origin]:
    kind, i = which
    if kind == "timer":
        timer = timers[i] = msgspec.structs.replace(timers[i], queued=seq)
        return timer.attributes, Origin("timer", timer.id, timer.token, timer.event_type)
    signal = signals[i] = msgspec.structs.replace(signals[i], queued=seq)
    return signal.timeout_attributes, Origin("timeout", signal.id, event_type=signal.timeout_type)
