"""In-memory store for unit tests of the core. Not durable: never use it in a job."""

from __future__ import annotations

import threading
import time
import uuid

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, StoreIdentity
from actionjournal.durable.stats import note_append
from actionjournal.stores.base import ActionStateStore


class MemoryStore(ActionStateStore):
    def __init__(self, codec: RecordCodec | None = None, name: str = "memory") -> None:
        self.codec = codec or RecordCodec()
        self.identity = StoreIdentity("memory", name, uuid.uuid4().hex)
        self.entries: list[tuple[str, str, str, bytes]] = []  # (namespace, uid, key_id, bytes)
        self.first_position = 0
        self._lock = threading.Lock()

    def append(self, record: JournalRecord) -> Marker:
        started = time.perf_counter()
        data = self.codec.encode(record)
        with self._lock:
            self.entries.append((record.namespace, record.operator_uid, record.key_id, data))
            position = self.first_position + len(self.entries) - 1
        note_append("memory", len(data), started)
        return self.marker(record.key_id, position, record.epoch)

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        with self._lock:
            entries = list(self.entries)
        start = max(0, (after.position + 1 - self.first_position) if after else 0)
        return [
            self.codec.decode(data, f"memory store position {self.first_position + i}")
            for i, (ns, uid, kid, data) in enumerate(entries[start:], start)
            if kid in (key_id, CONTROL_KEY) and ns == namespace and uid == operator_uid
        ]

    def earliest_position(self, key_id: str) -> int:
        return self.first_position
