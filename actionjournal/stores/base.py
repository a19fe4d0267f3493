"""The action state store contract every backend implements."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import RecordError
from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity

Progress = Callable[[int, int], None]
"""``progress(done, total)``: positions (or rows) handled so far of a scan or a deletion."""


@dataclass(frozen=True, slots=True)
class ScannedRecord:
    """One record met by :meth:`ActionStateStore.scan`, with its position and encoded size.

    ``record`` is ``None`` for a record of another namespace or operator (asked for with
    ``foreign=True``): it is recognised from its header and never decoded.
    """

    position: int
    size: int
    namespace: str
    operator_uid: str
    record: JournalRecord | None
    signed: bool = False  # the record carries an HMAC (the journal is signed)


class ActionStateStore(ABC):
    """An append-only journal of records, readable per key.

    ``append`` returns only once the record is durable (committed, acknowledged)
    and raises :class:`~actionjournal.durable.errors.JournalWriteError` otherwise:
    a caller never believes a record is kept when it is not. Stores are used from
    several threads at once.

    The second half of the contract (``partitions`` .. ``delete_below``) serves the
    operator tools (``actionjournal journal inspect``, ``actionjournal cleanup``), not
    jobs. A backend without it raises :class:`NotImplementedError` and the tools say
    so; see docs/operations.md for what each method must guarantee.
    """

    identity: StoreIdentity

    shared_deletes: bool = False
    """True when :meth:`delete_below` removes the records of *every* namespace below the
    position (Kafka ``delete_records``), so a cleanup plan must stop at the first record
    of another namespace or operator. False when it removes only the given namespace's."""

    @abstractmethod
    def append(self, record: JournalRecord) -> Marker:
        """Make ``record`` durable; return the marker of its position."""

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

    def marker(self, key_id: str, position: int, epoch: int) -> Marker:
        return Marker(self.identity, epoch, self.partition_of(key_id), position)

    def partition_of(self, key_id: str) -> int:
        return 0

    def close(self) -> None:  # noqa: B027 - optional for stores without resources
        """Release connections; the journal stays."""

    # -- operator tools: inspect and cleanup ------------------------------------------------

    def partitions(self) -> list[int]:
        """The partitions (buckets) of the journal; a single-range store has ``[0]``."""
        return [0]

    def position_range(self, partition: int) -> tuple[int, int]:
        """``(low, high)``: the first retained position of ``partition`` and the end
        (exclusive) of what was written so far. Positions in between may be gaps."""
        raise NotImplementedError(f"{type(self).__name__} does not support the operator tools")

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
        raise NotImplementedError(f"{type(self).__name__} does not support the operator tools")

    def append_control(self, record: JournalRecord, partition: int) -> Marker:
        """Append a control record (key id ``CONTROL_KEY``) into a chosen partition.

        A cleanup boundary of partition ``p`` must live in ``p`` itself, after the
        boundary, where every key of ``p`` reads it on recovery.
        """
        if partition not in self.partitions():
            raise ValueError(f"no partition {partition} in {self.identity.name}")
        return self.append(record)

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
        raise NotImplementedError(f"{type(self).__name__} does not support cleanup")


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
    codec: RecordCodec, entries: Iterable[tuple[int, bytes]], start: int, end: int, where: str
) -> list[JournalRecord]:
    """Decode the entries at positions ``[start, end)``; a bad one is reported with its place
    (``where`` plus its position, built only then)."""
    decode = codec.decode
    records = []
    for position, data in entries:
        if start <= position < end:
            try:
                records.append(decode(data))
            except RecordError:
                decode(data, f"{where} offset {position}")
    return records
