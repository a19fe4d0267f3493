"""Crash points: kill the process for real at a named place in the journal's life.

A crash point is ``"before:<Record>:<n>"`` or ``"after:<Record>:<n>"``: SIGKILL
this process just before the n-th append of that record type reaches the store,
or just after it was acknowledged. ``<Record>`` is a record class name such as
``CallFinished``, ``ActionCompleted`` or ``RunCompleted``.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Any

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import JournalRecord, Marker
from actionjournal.durable.store import Store, StoreObserver


def kill_now() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def crash_point(crash_at: str | None) -> tuple[str, str, int] | None:
    """``"before:<Record>:<n>"`` parsed (``None``: no crash); a malformed one is a ValueError."""
    if not crash_at:
        return None
    when, record_type, n = crash_at.split(":")
    if when not in ("before", "after"):
        raise ValueError(f"crash point {crash_at!r}: use before:<Record>:<n> or after:...")
    return when, record_type, int(n)


class CrashingStore(Store):
    """Wraps a real store; kills the process at ``crash_at``. Everything else is delegated
    (also ``append_all``, whose records each pass through :meth:`append` here)."""

    def __init__(self, store: Store, crash_at: str | None) -> None:
        self._store = store
        self._lock = threading.Lock()
        self._seen: dict[str, int] = {}
        self._point = crash_point(crash_at)
        self.identity = store.identity
        self.max_record_bytes = store.max_record_bytes
        self.durable = store.durable

    def __getattr__(self, name: str) -> Any:  # the wrapped store's own (tools, tests)
        return getattr(self._store, name)

    @property  # type: ignore[override]
    def codec(self) -> RecordCodec:
        return self._store.codec

    @codec.setter
    def codec(self, codec: RecordCodec) -> None:  # the engine installs the configured codec
        self._store.codec = codec

    @property  # type: ignore[override]
    def observer(self) -> StoreObserver | None:
        return self._store.observer

    @observer.setter
    def observer(self, observer: StoreObserver | None) -> None:
        self._store.observer = observer

    def append(self, record: JournalRecord) -> Marker:
        hit = self._hit(type(record).__name__)
        if hit == "before":
            kill_now()
        marker = self._store.append(record)
        if hit == "after":
            kill_now()
        return marker

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        return self._store.read_key(namespace, operator_uid, key_id, after)

    def earliest_position(self, key_id: str) -> int:
        return self._store.earliest_position(key_id)

    def partition_of(self, key_id: str) -> int:
        return self._store.partition_of(key_id)

    def marker(self, key_id: str, position: int, epoch: int) -> Marker:
        return self._store.marker(key_id, position, epoch)

    def tool_options(self) -> str:
        return self._store.tool_options()

    def close(self) -> None:
        self._store.close()

    def _hit(self, record_type: str) -> str | None:
        if self._point is None or self._point[1] != record_type:
            return None
        with self._lock:
            self._seen[record_type] = self._seen.get(record_type, 0) + 1
            return self._point[0] if self._seen[record_type] == self._point[2] else None


class CrashOnce:
    """A store factory that crashes the first process opening it, at ``crash_at``.

    For jobs that reopen the store after a restart (Flink restores the task in a
    new Python worker): ``marker`` records that the crash was armed once already.
    """

    def __init__(self, marker: str, crash_at: str, factory: Any) -> None:
        self.marker = marker
        self.crash_at = crash_at
        self.factory = factory

    def __call__(self, codec: Any) -> Any:
        store = self.factory(codec)
        if os.path.exists(self.marker):
            return store
        with open(self.marker, "w") as f:
            f.write(f"armed crash at {self.crash_at} in pid {os.getpid()}\n")
        return CrashingStore(store, self.crash_at)
