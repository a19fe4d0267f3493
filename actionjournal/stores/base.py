"""The store contracts: what a job needs of a journal, and what the operator tools need.

Two protocols instead of one base class: a job (the engine, a run, the local runner, the
PyFlink binding) needs only :class:`JournalStore`; ``actionjournal journal inspect`` and
``actionjournal cleanup`` need :class:`MaintenanceStore` on top of it. A backend declares
which it implements by subclassing it (and inherits the shared defaults), so a backend
without the tools' half (Fluss, ``none``) is refused by the type checker, not at run time.

Also here: what the recovery reads of the partitioned stores (Kafka, Fluss) share.
"""

from __future__ import annotations

import time
from abc import abstractmethod
from collections.abc import Callable, Container, Iterator, Sequence
from dataclasses import dataclass
from operator import attrgetter, itemgetter
from typing import Generic, Protocol, TypeVar, cast

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import RecordError
from actionjournal.durable.records import (
    CONTROL_KEY,
    JournalRecord,
    Marker,
    Quarantined,
    StoreIdentity,
)
from actionjournal.stores.quarantine import KeyRead, decode_past_quarantined

_identity = attrgetter("namespace", "operator_uid", "key_id")
Progress = Callable[[int, int], None]
"""``progress(done, total)``: positions (or rows) handled so far of a scan or a deletion."""


@dataclass(frozen=True, slots=True)
class ScannedRecord:
    """One record met by :meth:`MaintenanceStore.scan`, with its position and encoded size.

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


class JournalStore(Protocol):
    """What a job needs: an append-only journal of records, readable per key.

    ``append`` returns only once the record is durable (committed, acknowledged)
    and raises :class:`~actionjournal.durable.errors.JournalWriteError` otherwise:
    a caller never believes a record is kept when it is not. Stores are used from
    several threads at once.
    """

    identity: StoreIdentity
    max_record_bytes: int | None = None
    """The largest encoded record the store takes (Kafka: the topic's max.message.bytes);
    ``None``: no limit of its own. Larger ones fail with ``RecordTooLargeError``."""

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

    def close(self) -> None:
        """Release connections; the journal stays."""
        return None  # nothing to release by default (not an abstract method)


class MaintenanceStore(JournalStore, Protocol):
    """A journal the operator tools can inspect and clean up (docs/operations.md says what
    each method must guarantee)."""

    shared_deletes: bool = False
    """True when :meth:`delete_below` removes the records of *every* namespace below the
    position (Kafka ``delete_records``), so a cleanup plan must stop at the first record
    of another namespace or operator. False when it removes only the given namespace's."""

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


ActionStateStore = MaintenanceStore
"""The name of the whole contract before it was split in two (both halves): kept for users."""


# -- recovery reads of the partitioned stores ---------------------------------------------------

Entries = list[tuple[int, bytes]]
"""``(position, encoded record)`` pairs, in position order."""
Found = dict[str, Entries]
"""Entries of one namespace/operator in one partition, by key id."""
R = TypeVar("R")
"""What a recovery window keeps of a key's records: a list of these, in position order
(Kafka: ``(position, bytes)`` entries; Fluss: runs of records as Arrow gave them)."""
Scan = Callable[[int, int, bool], dict[str, list[R]]]
"""``scan(start, end, earlier)``: the records at positions ``[start, end)`` by key; ``earlier``
when the range lies before what a window read so far (it may begin below retention)."""

ENTRY_OVERHEAD = 100  # rough Python cost of one cached record besides its bytes
_data = itemgetter(1)


def entries_cost(entries: Entries) -> int:
    """Roughly the memory ``entries`` hold (what a recovery window counts against its budget)."""
    return sum(map(len, map(_data, entries))) + ENTRY_OVERHEAD * len(entries)


def with_control(entries: Entries, found: Found, key_id: str) -> Entries:
    """A key's entries with its partition's control records (in ``found``) among them, in
    position order."""
    control = found.get(CONTROL_KEY)
    if not control:
        return entries
    if key_id == CONTROL_KEY:
        return list(control)
    return sorted(entries + control, key=lambda entry: entry[0])


class RecoveryWindow(Generic[R]):
    """Records of one namespace/operator in one partition, positions ``[start, end)``, by key.

    Recovering many keys of a partition reads it once: a read keeps the other keys' records
    here until they ask. A key's entries are handed out once and dropped, so memory holds
    only keys that have not recovered yet. With ``control`` the partition's control records
    are handed out with every key and never dropped.
    """

    __slots__ = ("control", "cost", "costs", "end", "keys", "size", "start")

    def __init__(self, start: int, control: bool, cost: Callable[[list[R]], int]) -> None:
        self.start = self.end = start
        self.control = control  # then it keeps (position, bytes) entries
        self.cost = cost
        self.keys: dict[str, list[R]] = {}
        self.size = 0  # bytes held, roughly
        self.costs: dict[str, int] = {}  # each key's part of it, not summed again when taken

    def cover(self, start: int, end: int, scan: Scan[R], served: Container[str]) -> None:
        """Read what ``[start, end)`` adds to the window, leaving out keys in ``served``."""
        if start < self.start:  # a marker older than what was read so far
            self._add(scan(start, self.start, True), served, earlier=True)
            self.start = start
        if end > self.end:  # written since the last read
            self._add(scan(self.end, end, False), served, earlier=False)
            self.end = end

    def _add(self, found: dict[str, list[R]], served: Container[str], earlier: bool) -> None:
        for key_id, entries in found.items():
            if key_id in served:
                continue
            cost = self.cost(entries)
            self.size += cost
            self.costs[key_id] = self.costs.get(key_id, 0) + cost
            have = self.keys.get(key_id)
            if have is None:
                self.keys[key_id] = entries
            else:
                self.keys[key_id] = entries + have if earlier else have + entries

    def take(self, key_id: str) -> list[R]:
        """The key's records, dropped from the window (with the control records if ``control``)."""
        if self.control and key_id == CONTROL_KEY:  # for every key: never handed out alone
            entries: list[R] = []
        else:
            entries = self.keys.pop(key_id, [])
            self.size -= self.costs.pop(key_id, 0)
        if not self.control:
            return entries
        merged = with_control(cast(Entries, entries), cast(Found, self.keys), key_id)
        return cast(list[R], merged)


class RecoveryCache(Generic[R]):
    """A store's recovery windows, by partition and namespace/operator, within a byte budget
    (``cost``: roughly the memory a key's records take in a window)."""

    def __init__(self, budget: int, control: bool, cost: Callable[[list[R]], int]) -> None:
        self.budget = budget
        self.control = control
        self.cost = cost
        self._windows: dict[tuple[int, str, str], RecoveryWindow[R]] = {}

    def read(
        self,
        partition: int,
        namespace: str,
        operator_uid: str,
        key_id: str,
        start: int,
        end: int,
        scan: Scan[R],
        served: Container[str],
    ) -> list[R]:
        """The key's records at ``[start, end)``, read through its partition's window.

        ``served``: keys of the namespace/operator handed out before, whose records the
        window does not keep (a key asked again is read from the store afresh).
        """
        slot = (partition, namespace, operator_uid)
        window = self._windows.get(slot)
        if window is None:
            window = self._windows[slot] = RecoveryWindow(start, self.control, self.cost)
        window.cover(start, end, scan, served)
        entries = window.take(key_id)
        if sum(w.size for w in self._windows.values()) > self.budget:
            # Over budget: drop everything; keys not yet recovered read their partition
            # again (correct, only slower).
            self._windows.clear()
        return entries


V = TypeVar("V")


class RecentProbes(Generic[V]):
    """Answers of a broker probe per partition, reused while younger than a caller's limit.

    Keys recovering together (a recovery wave) share one probe per partition instead of one
    each; why that is safe depends on what is probed (see the Kafka and Fluss stores).
    """

    def __init__(self) -> None:
        self._seen: dict[int, tuple[float, V]] = {}

    def get(self, partition: int, max_age: float, probe: Callable[[], V]) -> V:
        seen = self._seen.get(partition)
        if seen is not None and time.monotonic() - seen[0] <= max_age:
            return seen[1]
        asked = time.monotonic()  # before the probe: the answer is at least this old
        answer = probe()
        self._seen[partition] = (asked, answer)
        return answer

    def forget(self, partition: int) -> None:
        self._seen.pop(partition, None)


def decode_range(
    codec: RecordCodec, entries: Entries, start: int, end: int, read: KeyRead
) -> list[JournalRecord]:
    """Decode the entries (in position order) at positions ``[start, end)``, all in one
    :meth:`~RecordCodec.decode_many` call. A bad one, records an operator quarantined, or (in
    a signed journal) a record that is not what its place says it is, take the slow path
    of :mod:`actionjournal.stores.quarantine`, which skips the quarantined and says which
    other record stops the key, where."""
    if entries and not (start <= entries[0][0] and entries[-1][0] < end):
        entries = [entry for entry in entries if start <= entry[0] < end]
    try:
        records = codec.decode_many(list(map(_data, entries)), lambda i: read.at(entries[i][0]))
    except RecordError:
        return decode_past_quarantined(codec, entries, read)
    if Quarantined in set(map(type, records)):
        return decode_past_quarantined(codec, entries, read)
    # In a signed journal a record must also be the key's by what it says itself: a signed
    # record of another key filed under this one (message key, headers, key column) would
    # replay as this key's. Unsigned, anyone who can write can forge the record itself.
    if codec.signed and not set(map(_identity, records)) <= {
        (read.namespace, read.operator_uid, read.key_id),
        (read.namespace, read.operator_uid, CONTROL_KEY),
    }:
        return decode_past_quarantined(codec, entries, read)
    return records
