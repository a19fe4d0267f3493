"""The action state store contract every backend implements."""

from __future__ import annotations

from abc import ABC, abstractmethod

from actionjournal.durable.records import JournalRecord, Marker, StoreIdentity


class ActionStateStore(ABC):
    """An append-only journal of records, readable per key.

    ``append`` returns only once the record is durable (committed, acknowledged)
    and raises :class:`~actionjournal.durable.errors.JournalWriteError` otherwise:
    a caller never believes a record is kept when it is not. Stores are used from
    several threads at once.
    """

    identity: StoreIdentity

    @abstractmethod
    def append(self, record: JournalRecord) -> Marker:
        """Make ``record`` durable; return the marker of its position."""

    @abstractmethod
    def read_key(
        self, namespace: str, operator_uid: str, key_id: str, after: Marker | None
    ) -> list[JournalRecord]:
        """Records of one key written after ``after`` (all retained ones if ``None``), in order,
        with the control records (key id ``CONTROL_KEY``) of the key's partition among them.

        The read is bounded by the end position captured when it began, so it
        ends even while other writers keep appending.
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
