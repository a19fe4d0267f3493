"""Recovery markers as a key's state keeps them: a reference to the journal, not its name.

A marker written out in full names its store (backend, topic / table / path, id) and
epoch: 71 of the 86 bytes of an idle key's state, in every key, so a checkpoint's size per
key depended on the length of the journal's path. Where the job keeps its journal binding
once (the agent operator's state in Flink, a ``LocalRunner`` snapshot), a key keeps a
:class:`KeyMarker` instead: a 32-bit reference to the store and epoch, the partition and
the position. The job keeps the journals those references may name, the current one and
older ones (:class:`Journals`), so a marker of another journal is still refused naming it.
"""

from __future__ import annotations

import hashlib

import msgspec

from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.records import Marker, StoreIdentity

UNKNOWN = "unknown"
"""The backend a reference resolves to when the job does not know its journal."""


class KeyMarker(msgspec.Struct, frozen=True, array_like=True):
    """A key's recovery marker in keyed state: ``journal`` is :func:`journal_ref` of the
    store and epoch it points into."""

    journal: int
    partition: int
    position: int


def journal_ref(store: StoreIdentity, epoch: int) -> int:
    """A store and epoch as 32 bits: the same in any process and release."""
    data = msgspec.msgpack.encode((store.backend, store.name, store.uid, epoch))
    return int.from_bytes(hashlib.blake2b(data, digest_size=4).digest(), "big")


class Journals:
    """The journals (store and epoch) a job's markers may reference, by reference."""

    def __init__(self) -> None:
        self._by_ref: dict[int, tuple[StoreIdentity, int]] = {}

    def add(self, store: StoreIdentity, epoch: int) -> None:
        ref = journal_ref(store, epoch)
        known = self._by_ref.setdefault(ref, (store, epoch))
        if known != (store, epoch):  # about one in 4 billion pairs: refuse, never guess
            raise ConfigurationError(
                f"{store.backend} journal {store.name!r} (id {store.uid}) in epoch {epoch} and "
                f"{known[0].backend} journal {known[0].name!r} (id {known[0].uid}) in epoch "
                f"{known[1]} have the same marker reference {ref:08x}, so keys' markers of the "
                "two cannot be told apart; set another journal.epoch"
            )

    def compact(self, marker: Marker) -> KeyMarker:
        self.add(marker.store, marker.epoch)
        return KeyMarker(journal_ref(marker.store, marker.epoch), marker.partition, marker.position)

    def marker_of(self, marker: Marker | None, at: KeyMarker | None) -> Marker | None:
        """A key's recovery marker from its state's two fields (``KeyState``): a whole
        ``marker``, or ``at``, a reference to one of these journals."""
        return marker if at is None else self.full(at)

    def full(self, marker: KeyMarker) -> Marker:
        """The marker with the journal it references; a reference the job does not know (its
        binding was not kept) names an ``unknown`` journal, which is never the configured
        one: the key's state is refused as another journal's, or skipped in upgrade mode."""
        known = self._by_ref.get(marker.journal)
        if known is None:
            store, epoch = StoreIdentity(UNKNOWN, f"journal #{marker.journal:08x}", ""), 0
        else:
            store, epoch = known
        return Marker(store, epoch, marker.partition, marker.position)
