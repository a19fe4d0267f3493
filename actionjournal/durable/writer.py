"""Appends the records of one run, filling in the run's identity."""

from __future__ import annotations

import asyncio
import contextvars
import dataclasses
import functools
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

from actionjournal.durable.errors import (
    ContextClosedError,
    JournalUnavailableError,
    JournalWriteError,
    RecordTooLargeError,
)
from actionjournal.durable.guards import RunBudget
from actionjournal.durable.records import JournalRecord, Marker, Record
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.store import Store

R = TypeVar("R", bound=Record)
T = TypeVar("T")

JOURNAL_THREADS = 64
"""Appends in flight at once per operator (each waits for its commit: group commit needs many)."""


class JournalHealth:
    """What every run of one operator (a process, or a Flink subtask) shares of its journal.

    Its first refused write: after it no durable call and no run starts, so a journal that
    stopped taking writes (two brokers of three down) fails the runs and the task at once
    instead of running calls whose outcomes cannot be journaled. And the threads appends run
    on, apart from actions' and sync calls' threads: a stalled journal blocks no user call,
    and busy user calls never hold appends up.
    """

    def __init__(self, threads: int = JOURNAL_THREADS) -> None:
        self.failure: JournalWriteError | None = None
        self._threads = threads
        self._executor: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()

    def refused(self, exc: JournalWriteError) -> None:
        """A write was refused: remember the first one."""
        if self.failure is None and not isinstance(exc, RecordTooLargeError):
            self.failure = exc

    def check(self, what: str) -> None:
        """Raise :class:`JournalUnavailableError` once a write was refused."""
        if self.failure is not None:
            raise JournalUnavailableError(
                f"{what} was not started: the journal refused a write earlier in this process "
                f"({self.failure}), and no durable call starts after that, since its outcome "
                "could not be journaled. The task fails and restarts from its checkpoint (a "
                "LocalRunner stops: restore a snapshot once the journal takes writes again)"
            ) from self.failure

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(*args)`` on a journal thread, in a copy of this context (as ``to_thread``)."""
        loop = asyncio.get_running_loop()
        call = functools.partial(contextvars.copy_context().run, fn, *args)
        return await loop.run_in_executor(self._pool(), call)

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(
                    self._threads, thread_name_prefix="actionjournal-journal"
                )
            return self._executor

    def close(self) -> None:
        with self._lock:
            if self._executor is not None:
                self._executor.shutdown(wait=False)
                self._executor = None


@dataclass
class RunWriter:
    """Writes a run's records. :meth:`for_action` gives one action execution its own
    writer, which remembers whether any of its writes failed and refuses writes once
    the action finished (``close``)."""

    store: Store
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str
    seq: int
    metrics: JournalMetrics | None = None  # appends are timed and counted here
    budget: RunBudget | None = None  # the run's journal length guard
    action: str | None = None  # set on an action's writer: its records carry the name
    health: JournalHealth | None = None  # the operator's: a refused write stops new calls
    lead: list[JournalRecord] = dataclasses.field(default_factory=list, repr=False, compare=False)
    """Records that go with the run's first write, in the same commit (shared by the run's
    action writers): what started the run, so any run that journaled something says so."""
    _lead_lock: threading.Lock = dataclasses.field(
        default_factory=threading.Lock, repr=False, compare=False
    )
    failure: Exception | None = dataclasses.field(default=None, init=False)
    """The first write of this writer that failed (the action must fail, whatever it caught)."""
    closed: bool = dataclasses.field(default=False, init=False)
    run: tuple[str, str, int, str, int] = dataclasses.field(init=False, repr=False, compare=False)
    """namespace, operator_uid, epoch, key_id, seq: the first fields of every record."""

    def __post_init__(self) -> None:
        self.run = (self.namespace, self.operator_uid, self.epoch, self.key_id, self.seq)

    def for_action(self, action: str) -> RunWriter:
        return dataclasses.replace(self, action=action)

    def close(self) -> None:
        self.closed = True

    def build(self, record_type: type[R], **fields: Any) -> R:
        if self.action is not None and "action" in record_type.__struct_fields__:
            fields.setdefault("action", self.action)
        return record_type(
            namespace=self.namespace,
            operator_uid=self.operator_uid,
            epoch=self.epoch,
            key_id=self.key_id,
            seq=self.seq,
            **fields,
        )

    def write(self, record: JournalRecord, context: str = "", reserved: bool = False) -> Marker:
        return self.write_all((record,), context, reserved)[0]

    async def write_async(
        self, record: JournalRecord, context: str = "", reserved: bool = False
    ) -> Marker:
        """:meth:`write` on a journal thread (see :class:`JournalHealth`)."""
        return (await self.write_all_async([record], context, reserved))[0]

    async def write_all_async(
        self, records: Sequence[JournalRecord], context: str = "", reserved: bool = False
    ) -> list[Marker]:
        """:meth:`write_all` on a journal thread (see :class:`JournalHealth`)."""
        if self.health is None:
            return await asyncio.to_thread(self.write_all, records, context, reserved)
        return await self.health.run(self.write_all, records, context, reserved)

    def write_all(
        self, records: Sequence[JournalRecord], context: str = "", reserved: bool = False
    ) -> list[Marker]:
        """Append ``records`` in order, in one commit where the store can (all or none).
        ``reserved``: the run's length budget already counted them (see RunBudget.reserve)."""
        if self.closed:
            raise ContextClosedError(
                f"{context or type(records[0]).__name__}: action {self.action} (key id "
                f"{self.key_id}, seq {self.seq}) had already finished, so nothing of it may be "
                "journaled any more. Await every durable call before the action returns"
            )
        lead: list[JournalRecord] = []
        if self.lead:
            with self._lead_lock:
                lead, self.lead[:] = list(self.lead), []
            records = [*lead, *records]
        try:
            if self.budget is not None:
                for record in records:
                    self.budget.take(record, reserved)
            try:
                if len(records) == 1:
                    return [self.store.append(records[0])]
                return self.store.append_all(records)[len(lead) :]  # the caller's records
            except JournalWriteError as exc:
                if self.health is not None:
                    self.health.refused(exc)
                if self.metrics is not None:
                    self.metrics.append_failed(self.store.identity.backend)
                if not context or isinstance(exc, RecordTooLargeError):  # says it all; handled
                    raise
                raise JournalWriteError(f"{context}: {exc}") from exc
        except RecordTooLargeError:
            raise  # never kept, and the caller journals what it does instead (a call: a failure)
        except Exception as exc:
            if self.failure is None:
                self.failure = exc
            raise
