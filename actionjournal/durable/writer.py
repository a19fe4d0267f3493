"""Appends the records of one run, filling in the run's identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from actionjournal.durable.errors import JournalWriteError
from actionjournal.durable.guards import RunBudget
from actionjournal.durable.records import JournalRecord, Marker
from actionjournal.durable.stats import JournalMetrics, appending


class Appender(Protocol):
    """The one thing the core needs of a store (stores depend on the core, not back)."""

    def append(self, record: JournalRecord) -> Marker: ...


@dataclass(frozen=True)
class RunWriter:
    store: Appender
    namespace: str
    operator_uid: str
    epoch: int
    key_id: str
    seq: int
    metrics: JournalMetrics | None = None  # appends are timed and counted here
    budget: RunBudget | None = None  # the run's journal length guard

    def build(self, record_type: type[JournalRecord], **fields: Any) -> JournalRecord:
        return record_type(
            namespace=self.namespace,
            operator_uid=self.operator_uid,
            epoch=self.epoch,
            key_id=self.key_id,
            seq=self.seq,
            **fields,
        )

    def write(self, record: JournalRecord, context: str = "") -> Marker:
        if self.budget is not None:
            self.budget.take(record)
        token = appending.set(self.metrics)
        try:
            return self.store.append(record)
        except JournalWriteError as exc:
            if self.metrics is not None:
                identity = getattr(self.store, "identity", None)
                self.metrics.append_failed(getattr(identity, "backend", "unknown"))
            if not context:
                raise
            raise JournalWriteError(f"{context}: {exc}") from exc
        finally:
            appending.reset(token)
