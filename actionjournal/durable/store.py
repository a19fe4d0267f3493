"""The store contract: what a job needs of a journal, what the tools read, what cleanup needs.

Three levels, each a base class a backend subclasses (so the type checker knows what it
can do, and shared defaults are inherited):

- :class:`Store`: a job's needs: append records durably, read one key's records, and the
  settings the engine must know (``codec``, ``identity``, ``max_record_bytes``, ``durable``)
  and an ``observer`` for its metrics.
- :class:`Inspectable`: what ``actionjournal journal`` and the journal explorer read: the
  partitions, their position ranges, and scans of every record in position order.
- :class:`Cleanable`: what ``actionjournal cleanup`` needs on top: a control record into a
  chosen partition, and deletion below a position. A Fluss journal is Inspectable only,
  so cleanup refuses it before it runs.

The contract lives in the core because the core's writer and engine use it; backends live
in :mod:`actionjournal.stores` and open through its one factory, ``open_store``.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity

Progress = Callable[[int, int], None]
"""``progress(done, total)``: positions (or rows) handled so far of a scan or a deletion."""


class StoreObserver(Protocol):
    """Who counts a store's work (the runner's metrics, see docs/operations.md)."""

    def appended(self, backend: str, nbytes: int, seconds: float) -> None:
        """An append of ``nbytes`` encoded bytes became durable after ``seconds``."""

    def foreign(self, n: int) -> None:
        """A recovery read met ``n`` records that are no actionjournal records."""


@dataclass(frozen=True, slots=True)
class ScannedRecord:
    """One record met by :meth:`Inspectable.scan`, with its position and encoded size.

    ``record`` is ``None`` for a record of another namespace or operator (asked for with
    ``foreign=True``): it is recognised from its header and never decoded. With
    ``foreign=True`` a scan also yields, instead of raising, the records it cannot read:
    ``error`` says why, ``key_id`` whose they are (when known), and ``foreign`` marks bytes
    that are no actionjournal record at all (jobs skip those).
    """

    position: int
    size: int
    namespace: str
    operator_uid: str
    record: JournalRecord | None
    signed: bool = False  # the record carries an HMAC (the journal is signed)
    key_id: str = ""
    error: str = ""
    foreign: bool = False


@dataclass(frozen=True)
class ScanFilter:
    """Which records a scan decodes (``namespace``, and ``operator_uid`` when given), and
    whether it yields the others undecoded (``foreign``)."""

    namespace: str
    operator_uid: str | None = None
    foreign: bool = False

    def ours(self, namespace: str, operator_uid: str) -> bool:
        return namespace == self.namespace and self.operator_uid in (None, operator_uid)


class Store(ABC):
    """What a job needs: an append-only journal of records, readable per key.

    ``append`` returns only once the record is durable (committed, acknowledged) and raises
    :class:`~actionjournal.durable.errors.JournalWriteError` otherwise: a caller never
    believes a record is kept when it is not. Stores are used from several threads at once.
    """

    codec: RecordCodec
    """How records are encoded (and signed). The engine installs the job's signing codec
    in a store opened without one (see ``use_configured_codec``)."""
    identity: StoreIdentity
    """Which journal this is (backend, name, and an id that changes when it is recreated):
    recovery markers carry it, so a restore against another journal is refused."""
    max_record_bytes: int | None = None
    """The largest encoded record the store takes (Kafka: the topic's max.message.bytes);
    ``None``: no limit of its own. Larger ones fail with ``RecordTooLargeError``."""
    durable: bool = True
    """False for a store that keeps nothing (``none``, durability off): markers in restored
    state are not validated against it, and nothing is replayed."""
    observer: StoreObserver | None = None
    """Who counts appends and foreign records; a runner attaches its metrics when it starts."""

    def observe_append(self, nbytes: int, started: float) -> None:
        """Report an append that became durable (``started``: its ``time.perf_counter()``)."""
        observer = self.observer
        if observer is not None:
            observer.appended(self.identity.backend, nbytes, time.perf_counter() - started)

    @abstractmethod
    def append(self, record: JournalRecord) -> Marker:
        """Make ``record`` durable; return the marker of its position."""

    def append_all(self, records: Sequence[JournalRecord]) -> list[Marker]:
        """Make ``records`` durable, in this order; return their markers.

        A store that can commits them together (SQLite: one transaction, all kept or none);
        by default they are appended one after the other.
        """
        return [self.append(record) for record in records]

    @abstractmethod
    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        """Records of one key written after ``after`` (all retained ones if ``None``), in order,
        with the control records (key id ``CONTROL_KEY``) of the key's partition among them.

        The read is bounded by an end position captured no later than when it began
        (it ends even while other writers keep appending). It must include every record
        of the key itself appended before the read: a store may share one end position
        among the keys recovering together (Kafka: within one second), because a key's
        own records are appended only by its own subtask, after its recovery.
        """

    @abstractmethod
    def earliest_position(self, key_id: str) -> int:
        """The first retained position of the key's partition (a marker below it lost data)."""

    def partition_of(self, key_id: str) -> int:
        """The partition that holds the key's records; stable for the life of the journal."""
        return 0

    def marker(self, key_id: str, position: int, epoch: int) -> Marker:
        return Marker(self.identity, epoch, self.partition_of(key_id), position)

    def tool_options(self) -> str:
        """The ``actionjournal`` command options that name this journal (for messages that
        say which command to run)."""
        return f"--store {self.identity.backend}"

    def close(self) -> None:
        """Release connections; the journal stays."""
        return None  # nothing to release by default (not an abstract method)


class Inspectable(Store):
    """A journal the tools can read whole (docs/operations.md says what each method must
    guarantee): ``actionjournal journal``, the journal explorer, cleanup's planning."""

    def partitions(self) -> list[int]:
        """The partitions (buckets) of the journal; a single-range store has ``[0]``."""
        return [0]

    @abstractmethod
    def position_range(self, partition: int) -> tuple[int, int]:
        """``(low, high)``: the first retained position of ``partition`` and the end
        (exclusive) of what was written so far. Positions in between may be gaps."""

    def scan_bounds(self, partition: int, start: int | None, end: int | None) -> tuple[int, int]:
        """``[start, end)`` of a scan, clipped to what the partition retains now."""
        low, high = self.position_range(partition)
        return (low if start is None else max(start, low)), (
            high if end is None else min(end, high)
        )

    def scan(
        self,
        partition: int,
        namespace: str,
        operator_uid: str | None = None,
        *,
        start: int | None = None,
        end: int | None = None,
        foreign: bool = False,
        progress: Progress | None = None,
    ) -> Iterator[ScannedRecord]:
        """Records of ``partition`` in ``[start, end)`` (default: the whole retained range
        captured when the scan begins), in position order.

        Only records of ``namespace`` (and ``operator_uid`` when given) are decoded and
        yielded; with ``foreign=True`` the others are yielded too, undecoded. Control
        records (key id ``CONTROL_KEY``) are included. ``progress`` is called now and then.
        """
        first, last = self.scan_bounds(partition, start, end)
        yield from self.scan_range(
            partition, first, last, ScanFilter(namespace, operator_uid, foreign), progress
        )

    @abstractmethod
    def scan_range(
        self, partition: int, start: int, end: int, wanted: ScanFilter, progress: Progress | None
    ) -> Iterator[ScannedRecord]:
        """:meth:`scan` of ``[start, end)``, which the caller clipped to what is retained."""


class Cleanable(Inspectable):
    """A journal ``actionjournal cleanup`` can shrink below a checkpoint-safe boundary."""

    shared_deletes: bool = False
    """True when :meth:`delete_below` removes the records of *every* namespace below the
    position (Kafka ``delete_records``), so a cleanup plan must stop at the first record
    of another namespace or operator. False when it removes only the given namespace's."""

    def append_control(self, record: JournalRecord, partition: int) -> Marker:
        """Append a control record (key id ``CONTROL_KEY``) into a chosen partition.

        A cleanup boundary of partition ``p`` must live in ``p`` itself, after the
        boundary, where every key of ``p`` reads it on recovery.
        """
        if partition not in self.partitions():
            raise ValueError(f"no partition {partition} in {self.identity.name}")
        return self.append(record)

    @abstractmethod
    def delete_below(
        self,
        namespace: str,
        operator_uid: str,
        partition: int,
        position: int,
        progress: Progress | None = None,
    ) -> int | None:
        """Delete the records of ``partition`` below ``position``; returns how many, if known.

        Removes only ``namespace``/``operator_uid``'s records unless ``shared_deletes``
        says the backend cannot (then every namespace's records below ``position`` go).
        Never touches ``position`` or anything above it, so writers may keep appending.
        """
