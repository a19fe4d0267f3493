"""In-memory store for unit tests of the core. Not durable: never use it in a job."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator

from actionjournal.durable.codec import FLAG_SIGNED, RecordCodec
from actionjournal.durable.records import CONTROL_KEY, JournalRecord, Marker, StoreIdentity
from actionjournal.durable.store import (
    Cleanable,
    Progress,
    ScanFilter,
    ScannedRecord,
    StoreObserver,
)
from actionjournal.stores.config import MemoryStoreConfig
from actionjournal.stores.quarantine import KeyRead, decode_range

_DELETED = ("", "", "", b"")  # a deleted entry: positions of the others must not move


class MemoryStore(Cleanable):
    """``MemoryStore()``, or ``MemoryStore(MemoryStoreConfig(name=...), codec)``."""

    def __init__(
        self,
        config: MemoryStoreConfig | None = None,
        codec: RecordCodec | None = None,
        *,
        observer: StoreObserver | None = None,
    ) -> None:
        self.config = config or MemoryStoreConfig()
        self.codec = codec or RecordCodec()
        self.observer = observer
        self.identity = StoreIdentity("memory", self.config.name, uuid.uuid4().hex)
        self.entries: list[tuple[str, str, str, bytes]] = []  # (namespace, uid, key_id, bytes)
        self.first_position = 0
        self._lock = threading.Lock()

    def append(self, record: JournalRecord) -> Marker:
        started = time.perf_counter()
        data = self.codec.encode(record)
        with self._lock:
            self.entries.append((record.namespace, record.operator_uid, record.key_id, data))
            position = self.first_position + len(self.entries) - 1
        self.observe_append(len(data), started)
        return self.marker(record.key_id, position, record.epoch)

    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        with self._lock:
            entries = list(self.entries)
        start = max(0, (after.position + 1 - self.first_position) if after else 0)
        ours = [
            (self.first_position + i, data)
            for i, (ns, uid, kid, data) in enumerate(entries[start:], start)
            if kid in (key_id, CONTROL_KEY) and ns == namespace and uid == operator_uid
        ]
        read = KeyRead("memory store", "position", 0, namespace, operator_uid, key_id, str)
        return decode_range(self.codec, ours, 0, self.first_position + len(entries), read)

    def earliest_position(self, key_id: str) -> int:
        return self.first_position

    # -- operator tools -------------------------------------------------------------------

    def position_range(self, partition: int) -> tuple[int, int]:
        with self._lock:
            entries = list(self.entries)
        high = self.first_position + len(entries)
        low = next(
            (self.first_position + i for i, e in enumerate(entries) if e is not _DELETED), high
        )
        return low, high

    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        with self._lock:
            entries = self.entries[start - self.first_position : end - self.first_position]
        for position, entry in enumerate(entries, start):
            ns, uid, _, data = entry
            if entry is _DELETED:
                continue
            if wanted.ours(ns, uid):
                record = self.codec.decode(data, f"memory store position {position}")
                signed = bool(data[4] & FLAG_SIGNED)
                yield ScannedRecord(position, len(data), ns, uid, record, signed)
            elif wanted.foreign:
                yield ScannedRecord(position, len(data), ns, uid, None)
        if progress is not None:
            progress(end - start, end - start)

    def delete_below(
        self,
        namespace: str,
        operator_uid: str,
        partition: int,
        position: int,
        progress: Progress | None = None,
    ) -> int:
        deleted = 0
        with self._lock:
            for i, (ns, uid, _, _) in enumerate(self.entries[: position - self.first_position]):
                if ns == namespace and uid == operator_uid:
                    self.entries[i] = _DELETED
                    deleted += 1
        if progress is not None:
            progress(deleted, deleted)
        return deleted
