"""What the journal recorded for a key, indexed for replay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from actionjournal.durable.records import (
    ActionCompleted,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    JournalRecord,
    RunCompleted,
    UpgradeSkipped,
)


@dataclass
class RecordedCall:
    started: CallStarted | None = None
    finished: CallFinished | None = None

    @property
    def head(self) -> CallStarted | CallFinished:
        head = self.finished or self.started
        assert head is not None
        return head

    @property
    def attempt(self) -> int:
        return self.started.attempt if self.started else 0


@dataclass
class RecordedAction:
    calls: dict[int, RecordedCall] = field(default_factory=dict)
    completed: ActionCompleted | None = None
    name: str = ""  # the action's name, when its records carry it (not format-1 call records)


@dataclass
class RecordedRun:
    seq: int
    actions: dict[str, RecordedAction] = field(default_factory=dict)
    completed: RunCompleted | None = None
    records: int = 0  # how many records the run has in the journal (its length guard)

    def action(self, action_id: str) -> RecordedAction:
        return self.actions.get(action_id) or RecordedAction()

    def known_id(self, action_id: str, legacy_id: str) -> str:
        """``action_id``, unless only ``legacy_id`` is journaled: the same action execution,
        journaled when trigger-event fingerprints digested the journaled attribute bytes
        rather than their canonical encoding."""
        if action_id not in self.actions and legacy_id in self.actions:
            return legacy_id
        return action_id


@dataclass
class KeyJournal:
    """Runs of one key, from records of the current epoch at or after ``min_seq``."""

    runs: dict[int, RecordedRun] = field(default_factory=dict)
    records: int = 0
    boundaries: list[CleanupBoundary] = field(default_factory=list)

    @classmethod
    def build(cls, records: Iterable[JournalRecord], epoch: int, min_seq: int) -> KeyJournal:
        journal = cls()
        for record in records:
            if isinstance(record, CleanupBoundary):
                journal.boundaries.append(record)
                continue
            if isinstance(record, UpgradeSkipped) or record.epoch != epoch or record.seq < min_seq:
                continue
            journal.records += 1
            run = journal.runs.setdefault(record.seq, RecordedRun(record.seq))
            run.records += 1
            if isinstance(record, RunCompleted):
                run.completed = record
                continue
            action = run.actions.setdefault(record.action_id, RecordedAction())
            action.name = getattr(record, "action", "") or action.name
            if isinstance(record, ActionCompleted):
                action.completed = record
            elif isinstance(record, CallsDropped):
                action.calls = {i: c for i, c in action.calls.items() if i < record.index}
            elif isinstance(record, CallStarted):
                # A new attempt supersedes what an earlier attempt left at this position.
                action.calls[record.index] = RecordedCall(started=record)
            else:
                action.calls.setdefault(record.index, RecordedCall()).finished = record
        return journal

    def run(self, seq: int) -> RecordedRun:
        return self.runs.get(seq) or RecordedRun(seq)
