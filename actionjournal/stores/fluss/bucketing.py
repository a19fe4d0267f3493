"""Which bucket Fluss puts a key's rows in, computed here so a marker needs no round trip."""

from __future__ import annotations

import functools

_M32 = 0xFFFFFFFF


def _mix_k(k: int) -> int:
    k = (k * 0xCC9E2D51) & _M32
    k = ((k << 15) | (k >> 17)) & _M32
    return (k * 0x1B873593) & _M32


def _mix_h(h: int, k: int) -> int:
    h ^= k
    h = ((h << 13) | (h >> 19)) & _M32
    return (h * 5 + 0xE6546B64) & _M32


def _fmix(h: int) -> int:
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & _M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & _M32
    return h ^ (h >> 16)


def _signed(h: int) -> int:
    return h - (1 << 32) if h >= 1 << 31 else h


def _murmur_bytes(data: bytes) -> int:
    """Fluss's MurmurHash3 of bytes (seed 42, tail bytes mixed one by one)."""
    h = 42
    whole = len(data) // 4 * 4
    for i in range(0, whole, 4):
        h = _mix_h(h, _mix_k(int.from_bytes(data[i : i + 4], "little")))
    for byte in data[whole:]:
        h = _mix_h(h, _mix_k(byte))
    return _signed(_fmix(h ^ len(data)))


def _murmur_int(value: int) -> int:
    """Fluss's rehash of an int, made non-negative."""
    out = _signed(_fmix(_mix_h(0, _mix_k(value & _M32)) ^ 4))
    return 0 if out == -(1 << 31) else abs(out)


@functools.lru_cache(maxsize=1 << 16)
def fluss_bucket(key_id: str, buckets: int) -> int:
    """The bucket Fluss puts a row with bucket key ``key_id`` in (default bucketing).

    The key is encoded as Fluss's compacted key encoder writes a STRING (unsigned varint
    length, then UTF-8), hashed with Fluss's MurmurHash3 variant, rehashed as an int and
    taken modulo ``buckets``: what pyfluss 1.0 (and the Java client) compute for tables
    without a data lake format. Tests check it against where the server put rows.
    """
    raw = key_id.encode()
    length = len(raw)
    prefix = bytearray()
    while length >= 0x80:
        prefix.append((length & 0x7F) | 0x80)
        length >>= 7
    prefix.append(length)
    return _murmur_int(_murmur_bytes(bytes(prefix) + raw)) % buckets
