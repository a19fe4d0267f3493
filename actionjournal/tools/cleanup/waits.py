"""What pending timers and expected signals keep: the records of the run that asked for them.

A pending timer or signal lives in its key's state, which a restore needs no journal
record for; but until it fires, is cancelled, answered or times out, the run that asked
for it is the journal's only account of it (``actionjournal timers list``, ``signals
list``, a fired timer's lineage), so cleanup keeps that run's records. With a snapshot the
pending ones are known exactly (each names the run that asked for it); with a time-based
state they are those the journal shows asked for by a run completed before the cutoff and
not ended by a record journaled before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from actionjournal.durable.records import (
    ActionCompleted,
    JournalRecord,
    RunCompleted,
    RunInput,
    ends_run,
)
from actionjournal.tools.cleanup.document import Blocker

Run = tuple[str, int, int]  # key id, epoch, seq


def blocker(key_id: str, seq: int, position: int, what: str) -> Blocker:
    short = key_id if len(key_id) <= 12 else key_id[:12] + "…"
    return Blocker(
        "pending_wait",
        position,
        f"run key={short} seq={seq} asked for {what} still pending in the restorable state "
        "(a timer not fired or cancelled, a signal not answered or timed out): the run's "
        "records stay until it ends",
        key_id=key_id,
        seq=seq,
    )


@dataclass
class JournaledWaits:
    """Time-based states: the timers and signals a partition's records leave pending at the
    cutoff, with the first position of the run that asked for each."""

    cutoff: float
    first: dict[Run, int] = field(default_factory=dict)  # open runs: their first record
    asked: dict[Run, list[tuple[str, str]]] = field(default_factory=dict)  # (op, id)
    pending: dict[tuple[str, str], tuple[int, int]] = field(default_factory=dict)

    def see(self, position: int, record: JournalRecord) -> None:
        run = (record.key_id, record.epoch, record.seq)
        self.first.setdefault(run, position)
        if isinstance(record, ActionCompleted) and record.waits:
            self.asked.setdefault(run, []).extend((op.op, op.id) for op in record.waits)
        elif isinstance(record, RunInput) and record.delivered and record.at < self.cutoff:
            self.pending.pop((record.key_id, record.id), None)
        if not ends_run(record):
            return
        first = self.first.pop(run, position)
        asked = self.asked.pop(run, [])
        if not isinstance(record, RunCompleted) or record.at >= self.cutoff:
            return  # not in the restorable state: kept as a run it does not contain
        for op, wait_id in asked:
            if op == "cancel":
                self.pending.pop((record.key_id, wait_id), None)
            else:
                self.pending[(record.key_id, wait_id)] = (first, record.seq)

    def blockers(self) -> list[Blocker]:
        return [
            blocker(key_id, seq, position, f"timer or signal {wait_id}")
            for (key_id, wait_id), (position, seq) in self.pending.items()
        ]
