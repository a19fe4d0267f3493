"""Which keys' journals the engine has read since it started, in memory that idle keys do
not take.

A key's journal is read at its first run after a start (recovery), and never again: from
then on this engine writes every record of it. Kept as a set of key ids, that knowledge grew
with every key ever seen. A key whose run this engine journaled says so itself: its marker
is at or above the first position this engine wrote in its partition. Positions only grow,
and restored state was written before the engine started, so a restored marker is always
below. Only keys whose runs so far were replays of their journal are remembered by id.
"""

from __future__ import annotations

from actionjournal.durable.records import Marker, StoreIdentity


class Recovered:
    """Keys read since the start, for the journal ``store`` in ``epoch``."""

    def __init__(self, store: StoreIdentity, epoch: int) -> None:
        self._journal = (store, epoch)
        self._read: set[str] = set()  # read, and their state does not show it yet
        self._own_from: dict[int, int] = {}  # partition -> lowest marker position written

    def needs_read(self, key_id: str, marker: Marker | None) -> bool:
        """Whether the key's journal must be read before its next run (``marker``: its own)."""
        return key_id not in self._read and not self._written_here(marker)

    def read(self, key_id: str) -> None:
        self._read.add(key_id)

    def wrote(self, key_id: str, marker: Marker, replaying: bool) -> None:
        """A run of the key journaled up to ``marker``; ``replaying``: recorded runs of the key
        are still to replay (until they are, the key is remembered by id)."""
        low = self._own_from.get(marker.partition)
        if low is None or marker.position < low:
            self._own_from[marker.partition] = marker.position
        if not replaying:
            self._read.discard(key_id)

    def _written_here(self, marker: Marker | None) -> bool:
        if marker is None or (marker.store, marker.epoch) != self._journal:
            return False
        low = self._own_from.get(marker.partition)
        return low is not None and marker.position >= low
