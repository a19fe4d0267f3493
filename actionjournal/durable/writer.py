"""Appends the records of one run, filling in the run's identity."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from actionjournal.durable.errors import JournalWriteError
from actionjournal.durable.records import JournalRecord, Marker


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
        try:
            return self.store.append(record)
        except JournalWriteError as exc:
            if not context:
                raise
            raise JournalWriteError(f"{context}: {exc}") from exc
