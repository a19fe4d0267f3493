"""Guards: payload size and per-run journal length, each with a warn and a fail threshold.

In the spirit of Temporal's limits (payload warn 256 KB / error 2 MB, history warn 10,240 /
fail 51,200 events). Crossing a warn threshold logs a warning naming where it happened
(key, seq, action, call) and the threshold; crossing a fail threshold raises an
:class:`~actionjournal.durable.errors.ActionJournalError` saying the same. Both are counted in
``actionjournal_guard_hits_total{guard, level}``.

Where a value is encoded (a call's result, a memory update, an event) the codec does not
know which run it belongs to, so runs and actions describe themselves in a context
variable that the messages read (:func:`scope`, :func:`where`).
"""

from __future__ import annotations

import contextvars
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, Protocol

from actionjournal.durable.errors import RunJournalTooLongError

log = logging.getLogger("actionjournal.guards")

_scope: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar(
    "actionjournal_scope", default=()
)


class GuardObserver(Protocol):
    def guard_hit(self, guard: str, level: str) -> None: ...


@contextmanager
def scope(part: str) -> Iterator[None]:
    """Add ``part`` (e.g. "key 'alice', seq 3" or "action triage") to messages in this context.

    Tasks and ``asyncio.to_thread`` copy the context, so an action's threads see its scope.
    """
    token = _scope.set((*_scope.get(), part))
    try:
        yield
    finally:
        _scope.reset(token)


def where() -> str:
    """The current scope as a suffix for messages: `` (key 'a', seq 0, action act)`` or ""."""
    parts = _scope.get()
    return f" ({', '.join(parts)})" if parts else ""


class RunBudget:
    """Counts the records of one run (those recorded before a restart included)."""

    def __init__(
        self,
        warn: int,
        fail: int,
        observer: GuardObserver | None,
        describe: str,
        recorded: int = 0,
    ) -> None:
        self.warn = warn
        self.fail = fail
        self.observer = observer
        self.describe = describe  # "key id ..., seq 3": used outside a run's scope
        self.records = recorded
        self._warned = False
        self._reserved = 0  # records reserved for durable calls running now, not yet written
        self._lock = threading.Lock()  # actions of one run append from several threads

    def reserve(self, count: int, what: object) -> None:
        """Take ``count`` records now for what a durable call will journal (its start and its
        outcome) before the call runs: a call must never run when its outcome cannot be
        journaled. The reserved records are later written with ``take(record, reserved=True)``.
        """
        with self._lock:
            if self.records + count > self.fail:
                refused = self.records + count
            else:
                self.records += count
                self._reserved += count
                return
        if self.observer is not None:
            self.observer.guard_hit("run_records", "fail")
        raise RunJournalTooLongError(
            f"{what} was not run: with its outcome the run{where() or f' ({self.describe})'} "
            f"would journal {refused} records, over journal.max_run_records={self.fail}, so "
            "its outcome could not be journaled. Nothing of it was journaled and the run fails; "
            "a restart refuses it again (it never runs). Split the work over several inputs, "
            "or raise the limit"
        )

    def release(self, count: int) -> None:
        """Give back reserved records that were not written (a failure left unjournaled)."""
        with self._lock:
            count = min(count, self._reserved)
            self._reserved -= count
            self.records -= count

    def take(self, record: Any, reserved: bool = False) -> None:
        """Account for one more record of the run, before it is appended (``reserved``: one
        of the records :meth:`reserve` took, always written)."""
        with self._lock:
            if reserved and self._reserved > 0:
                self._reserved -= 1
            elif self.records + 1 > self.fail:
                if self.observer is not None:
                    self.observer.guard_hit("run_records", "fail")
                raise RunJournalTooLongError(
                    f"a run{where() or f' ({self.describe})'} would journal record "
                    f"#{self.records + 1} ({type(record).__name__}{_record_where(record)}), over "
                    f"journal.max_run_records={self.fail}; the record is not written and the "
                    "run fails. Split the work over several inputs, or raise the limit"
                )
            else:
                self.records += 1
            written = self.records - self._reserved
            crossed = written >= self.warn and not self._warned
            if crossed:
                self._warned = True
        if crossed:
            if self.observer is not None:
                self.observer.guard_hit("run_records", "warn")
            log.warning(
                "a run%s has journaled %d records (the last a %s%s), reaching "
                "journal.run_records_warn=%d; it fails past journal.max_run_records=%d",
                where() or f" ({self.describe})",
                written,
                type(record).__name__,
                _record_where(record),
                self.warn,
                self.fail,
            )


def _record_where(record: Any) -> str:
    parts = []
    action = getattr(record, "action_id", None)
    if action:
        parts.append(f"action id {action}")
    call = getattr(record, "call_id", None)
    if call:
        parts.append(f"call id {call}")
    return f" of {', '.join(parts)}" if parts else ""
