"""Crash injection for the examples' PyFlink tests (pickled into Flink workers)."""

from __future__ import annotations

import functools
import os
from typing import Any

from actionjournal.durable.records import ActionCompleted, JournalRecord, Marker
from actionjournal.stores import SqliteStoreConfig, open_store
from actionjournal.testing.crash import kill_now


class _KillAfterAggregationRequest:
    """Delegates to a store; SIGKILLs the process right after the journal acknowledged
    the fan-in action that sends the aggregation request: both branch answers are
    journaled, the aggregation request has not gone out."""

    def __init__(self, store: Any, killed: str) -> None:
        self._store = store
        self._killed = killed

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def append(self, record: JournalRecord) -> Marker:
        marker = self._store.append(record)
        if (
            isinstance(record, ActionCompleted)
            and record.action == "collect"
            and any(out.type == "chat_request" for out in record.outputs)
        ):
            with open(self._killed, "w") as f:
                f.write(f"killed pid {os.getpid()} after {record.action} of seq {record.seq}\n")
            kill_now()
        return marker


class KillOnceAtAggregation:
    """A store factory: the first worker to open it is killed at the aggregation request,
    after writing ``<marker>.killed``."""

    def __init__(self, marker: str, journal: str) -> None:
        self.marker = marker
        self.factory = functools.partial(open_store, SqliteStoreConfig(path=journal))

    def __call__(self, codec: Any) -> Any:
        store = self.factory(codec)
        if os.path.exists(self.marker):
            return store
        with open(self.marker, "w") as f:
            f.write(f"armed in pid {os.getpid()}\n")
        return _KillAfterAggregationRequest(store, f"{self.marker}.killed")
