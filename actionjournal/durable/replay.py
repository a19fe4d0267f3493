"""What the journal recorded for a key, indexed for replay."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from actionjournal.durable.records import (
    CONTROL_KEY,
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    JournalRecord,
    Quarantined,
    RunCompleted,
    RunFailed,
    RunInput,
    UpgradeSkipped,
)


@dataclass
class RecordedCall:
    started: CallStarted | None = None
    finished: CallFinished | None = None
    failed: CallAttemptFailed | None = None  # the last failed attempt, retried after it
    round_start: int = 0  # first attempt of the current round (see CallAttemptFailed)
    dead_letters: int = 0  # the run's dead letters journaled before the call's last record

    @property
    def head(self) -> CallStarted | CallFinished | CallAttemptFailed:
        head = self.finished or self.started or self.failed
        assert head is not None
        return head

    @property
    def unknown(self) -> bool:
        """Its last attempt started and no outcome of it is journaled: the process or the
        action stopped while it ran. (A round that ended without a final outcome,
        ``record_failures=False``, is journaled as a failed attempt without ``retry_at``: its
        outcome is known, and the next try starts a new round.)"""
        started, failed = self.started, self.failed
        if self.finished is not None or started is None:
            return False
        return failed is None or started.attempt > failed.attempt

    @property
    def round_ended(self) -> bool:
        """Its last round of attempts failed, and with ``record_failures=False`` that was
        journaled as the round's end (a failed attempt without ``retry_at``), not as its
        outcome: the next try of the run starts a new round."""
        failed = self.failed
        return (
            self.finished is None
            and failed is not None
            and failed.retry_at is None
            and not self.unknown
        )

    @property
    def next_attempt(self) -> int:
        """The number of the attempt to make now (0: none was journaled)."""
        attempt = self.failed.attempt + 1 if self.failed else 0
        if self.finished is not None:  # a re-drive tries a journaled failure again
            attempt = max(attempt, self.finished.attempt + 1)
        if self.started is not None:
            attempt = max(attempt, self.started.attempt + 1 if self.unknown else 0)
        return attempt


@dataclass
class RecordedAction:
    calls: dict[int, RecordedCall] = field(default_factory=dict)
    completed: ActionCompleted | None = None
    name: str = ""  # the action's name, when its records carry it (not format-1 call records)
    uncertain: bool = False  # a quarantined record may have held one of its calls (see KeyJournal)


@dataclass
class RecordedRun:
    seq: int
    actions: dict[str, RecordedAction] = field(default_factory=dict)
    completed: RunCompleted | None = None
    records: int = 0  # how many records the run has in the journal (its length guard)
    uncertain: bool = False  # a quarantined record may have been one of the run's
    failed: RunFailed | None = None  # the last dead letter (a final RunFailed)
    dead_letters: int = 0  # final RunFailed records: a re-drive answers one of them
    tries: int = 0  # failed tries (RunFailed, not final) since the last dead letter
    input: RunInput | None = None  # what started it, when a timer or a signal did

    def action(self, action_id: str) -> RecordedAction:
        action = self.actions.get(action_id) or RecordedAction()
        action.uncertain = action.uncertain or self.uncertain
        return action

    def known_id(self, action_id: str, legacy_id: str) -> str:
        """``action_id``, unless only ``legacy_id`` is journaled: the same action execution,
        journaled when trigger-event fingerprints digested the journaled attribute bytes
        rather than their canonical encoding."""
        if action_id not in self.actions and legacy_id in self.actions:
            return legacy_id
        return action_id


@dataclass
class KeyJournal:
    """Runs of one key, from records of the current epoch at or after ``min_seq``.

    A record recovery skipped because an operator quarantined it arrives as its
    :class:`Quarantined` decision, in its place. What it held is unknown, so every run it may
    have belonged to (seqs from the key's record before it to the one after it; to the last
    pending run if none follows) is ``uncertain``: there, a durable call without a record may
    have started, and its on_unknown policy decides.
    """

    runs: dict[int, RecordedRun] = field(default_factory=dict)
    records: int = 0
    boundaries: list[CleanupBoundary] = field(default_factory=list)
    quarantined: list[Quarantined] = field(default_factory=list)
    uncertain: list[tuple[int, int | None]] = field(default_factory=list)  # seq ranges, inclusive

    @classmethod
    def build(cls, records: Iterable[JournalRecord], epoch: int, min_seq: int) -> KeyJournal:
        journal = cls()
        last_seq = min_seq  # the first seq a record after the key's latest one can have
        gap_from: int | None = None  # a skipped record belongs to a run of this seq or later
        for record in records:
            if isinstance(record, CleanupBoundary):
                journal.boundaries.append(record)
                continue
            if isinstance(record, Quarantined):
                journal.quarantined.append(record)
                if record.key_id != CONTROL_KEY and gap_from is None:
                    gap_from = last_seq
                continue
            if isinstance(record, UpgradeSkipped) or record.epoch != epoch:
                continue
            # A run's RunCompleted is its last record: a record skipped after it is a later run's.
            last_seq = record.seq + 1 if isinstance(record, RunCompleted) else record.seq
            if gap_from is not None:
                journal.uncertain.append((gap_from, record.seq))
                gap_from = None
            if record.seq < min_seq:
                continue
            journal.records += 1
            run = journal.runs.setdefault(record.seq, RecordedRun(record.seq))
            run.records += 1
            if isinstance(record, RunCompleted):
                run.completed = record
                continue
            if isinstance(record, RunInput):
                run.input = record
                continue
            if isinstance(record, RunFailed):
                if record.final:
                    run.failed, run.tries = record, 0
                    run.dead_letters += 1
                else:
                    run.tries += 1
                continue
            action = run.actions.setdefault(record.action_id, RecordedAction())
            action.name = getattr(record, "action", "") or action.name
            if isinstance(record, ActionCompleted):
                action.completed = record
            elif isinstance(record, CallsDropped):
                action.calls = {i: c for i, c in action.calls.items() if i < record.index}
            else:
                _index_call(action.calls.setdefault(record.index, RecordedCall()), record)
                action.calls[record.index].dead_letters = run.dead_letters
        if gap_from is not None:
            journal.uncertain.append((gap_from, None))
        for run in journal.runs.values():
            run.uncertain = journal.is_uncertain(run.seq)
        return journal

    def is_uncertain(self, seq: int) -> bool:
        return any(low <= seq and (high is None or seq <= high) for low, high in self.uncertain)

    def run(self, seq: int) -> RecordedRun:
        return self.runs.get(seq) or RecordedRun(seq, uncertain=self.is_uncertain(seq))


def _index_call(call: RecordedCall, record: CallStarted | CallFinished | CallAttemptFailed) -> None:
    """A later record of a call position supersedes what earlier attempts left there."""
    if isinstance(record, CallStarted):
        call.started, call.finished = record, None
    elif isinstance(record, CallAttemptFailed):
        call.failed, call.finished = record, None
        if record.retry_at is None:  # the round ended without a final outcome
            call.round_start = record.attempt + 1
    else:
        call.finished = record
