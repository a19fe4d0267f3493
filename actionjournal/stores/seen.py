"""Which keys were seen, in memory that does not grow with them (a Bloom filter).

A job sees every key it ever had, for weeks: a set of their ids grows without end (about
180 bytes a key). Where the question is "was this key seen?" and a wrong "yes" only costs
time (a state read, a recovery read that skips a shortcut), this answers it in fixed
memory: never "no" for a key added, "yes" for a key never added with a small probability,
about 0.05% after 500,000 keys in the default 1 MiB, 2% after 1,000,000, rising past that.
"""

from __future__ import annotations

import hashlib
import struct
import threading

DEFAULT_BYTES = 1 << 20
_HASHES = 6
_WORDS = struct.Struct(f"<{_HASHES}I")  # one 32-bit word of the digest per hash


class SeenKeys:
    """Key ids added so far, as a Bloom filter of ``size_bytes``; thread-safe."""

    __slots__ = ("_bits", "_lock", "_size")

    def __init__(self, size_bytes: int = DEFAULT_BYTES) -> None:
        if not 0 < size_bytes <= 1 << 29:
            raise ValueError(f"size_bytes={size_bytes}: from 1 byte to 512 MiB")
        self._bits = bytearray()  # allocated by the first add: making one costs nothing
        self._size = size_bytes * 8
        self._lock = threading.Lock()  # two bits of one byte set at once: neither is lost

    def _positions(self, key: str) -> tuple[int, ...]:
        digest = hashlib.blake2b(key.encode(), digest_size=4 * _HASHES).digest()
        return tuple(word % self._size for word in _WORDS.unpack(digest))

    def add(self, key: str) -> None:
        positions = self._positions(key)
        with self._lock:
            if not self._bits:
                self._bits = bytearray(self._size // 8)
            bits = self._bits
            for position in positions:
                bits[position >> 3] |= 1 << (position & 7)

    def __contains__(self, key: object) -> bool:
        bits = self._bits
        if not bits or not isinstance(key, str):
            return False
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self._positions(key))

    @property
    def size_bytes(self) -> int:
        """The memory it holds: nothing until the first key, then its size, however many."""
        return len(self._bits)
