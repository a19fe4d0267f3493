"""Appends the records of one run, filling in the run's identity."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from actionjournal.durable.errors import ContextClosedError, JournalWriteError, RecordTooLargeError
from actionjournal.durable.guards import RunBudget
from actionjournal.durable.records import JournalRecord, Marker, Record
from actionjournal.durable.stats import JournalMetrics, appending

R = TypeVar("R", bound=Record)


class Appender(Protocol):
    """The one thing the core needs of a store (stores depend on the core, not back); an
    ``append_all(records)`` of its class, when it has one, commits several together."""

    def append(self, record: JournalRecord) -> Marker: ...


@dataclass
class RunWriter:
    """Writes a run's records. :meth:`for_action` gives one action execution its own
    writer, which remembers whether any of its writes failed and refuses writes once
    the action finished (``close``)."""

    store: Appender
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str
    seq: int
    metrics: JournalMetrics | None = None  # appends are timed and counted here
    budget: RunBudget | None = None  # the run's journal length guard
    action: str | None = None  # set on an action's writer: its records carry the name
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
        return self.write_all([record], context, reserved)[0]

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
        try:
            if self.budget is not None:
                for record in records:
                    self.budget.take(record, reserved)
            token = appending.set(self.metrics)
            try:
                if len(records) == 1:
                    return [self.store.append(records[0])]
                # Looked up on the class: a wrapper that forwards unknown attributes to the
                # store it wraps (crash tests) must see every record through its own append.
                append_all = getattr(type(self.store), "append_all", None)
                if append_all is None:
                    return [self.store.append(record) for record in records]
                return list(append_all(self.store, records))
            except JournalWriteError as exc:
                if self.metrics is not None:
                    identity = getattr(self.store, "identity", None)
                    self.metrics.append_failed(getattr(identity, "backend", "unknown"))
                if not context or isinstance(exc, RecordTooLargeError):  # says it all; handled
                    raise
                raise JournalWriteError(f"{context}: {exc}") from exc
            finally:
                appending.reset(token)
        except RecordTooLargeError:
            raise  # never kept, and the caller journals what it does instead (a call: a failure)
        except Exception as exc:
            if self.failure is None:
                self.failure = exc
            raise
