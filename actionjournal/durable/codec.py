"""The record envelope: magic, format version, record type, flags, payload, optional HMAC.

Layout (big-endian)::

    b"AJ" | version:u8 | type:u8 | flags:u8 | payload (MessagePack) | [HMAC-SHA256, 32 bytes]

The header is readable without decoding the payload, so a reader can reject
foreign bytes, newer formats and unsigned records before touching the body.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from typing import Any

import msgspec

from actionjournal.durable.errors import (
    CorruptRecordError,
    SignatureError,
    UnsupportedFormatError,
)
from actionjournal.durable.records import (
    FORMAT_VERSION,
    ActionCompleted,
    CallAttemptFailed,
    CallFinished,
    CallsDropped,
    CallStarted,
    CleanupBoundary,
    JournalRecord,
    Quarantined,
    RunCompleted,
    RunFailed,
    RunInput,
    UpgradeSkipped,
)

MAGIC = b"AJ"
FLAG_SIGNED = 0x01
_MAC_SIZE = 32
_HEADER_SIZE = 5

RECORD_TYPES: dict[type, int] = {
    CallStarted: 1,
    CallFinished: 2,
    CallsDropped: 3,
    ActionCompleted: 4,
    RunCompleted: 5,
    UpgradeSkipped: 6,
    CleanupBoundary: 7,
    RunFailed: 8,
    CallAttemptFailed: 9,
    Quarantined: 10,
    RunInput: 11,
}
_TYPES_BY_CODE = {code: cls for cls, code in RECORD_TYPES.items()}
# An unsigned record's five header bytes read as MessagePack are five positive fixints (while
# version and type code stay below 128), so unsigned records laid end to end are one stream
# of MessagePack values: six per record, the sixth the payload. decode_many decodes that.
_FIELDS = 6
_STREAM_FITS = FORMAT_VERSION < 0x80 and max(_TYPES_BY_CODE) < 0x80


class RecordCodec:
    """Encodes and decodes enveloped records; signs and verifies when given a key.

    With a ``signing_key`` every record is signed and every record read must carry
    a valid signature: an unsigned record in a signed journal is as suspect as a
    tampered one.
    """

    def __init__(self, signing_key: bytes | None = None) -> None:
        self._key = signing_key
        self._encoder = msgspec.msgpack.Encoder()
        self._decoder = msgspec.msgpack.Decoder(JournalRecord)
        self._stream = msgspec.msgpack.Decoder(list[int | JournalRecord])
        flags = FLAG_SIGNED if signing_key is not None else 0
        self._headers = {  # each record type's envelope header, made once
            cls: MAGIC + bytes((FORMAT_VERSION, code, flags)) for cls, code in RECORD_TYPES.items()
        }

    @property
    def signed(self) -> bool:
        return self._key is not None

    def same_key(self, other: RecordCodec) -> bool:
        """Whether both sign with the same key (or both do not sign)."""
        return hmac.compare_digest(self._key or b"", other._key or b"") and (
            self.signed == other.signed
        )

    def encode(self, record: JournalRecord) -> bytes:
        data = self._headers[type(record)] + self._encoder.encode(record)
        if self._key is not None:
            data += hmac.digest(self._key, data, hashlib.sha256)
        return data

    def decode(self, data: bytes, where: str = "") -> JournalRecord:
        """Decode one record; ``where`` (e.g. ``topic t partition 3 offset 17``) is for errors."""
        if len(data) < _HEADER_SIZE or data[:2] != MAGIC:
            raise CorruptRecordError(
                f"not an actionjournal record (starts with {bytes(data[:4])!r}); the journal holds "
                "foreign or corrupted bytes: inspect it with `actionjournal journal inspect`",
                where,
            )
        version, type_code, flags = data[2], data[3], data[4]
        if version > FORMAT_VERSION:
            raise UnsupportedFormatError(
                f"record format version {version} is newer than this code's {FORMAT_VERSION}; "
                "run the actionjournal release that wrote it, or restore in upgrade mode",
                where,
            )
        body_end = len(data)
        if flags & FLAG_SIGNED:
            body_end -= _MAC_SIZE
            if body_end < _HEADER_SIZE:
                raise CorruptRecordError("signed record is shorter than its signature", where)
        if self._key is not None:
            if not flags & FLAG_SIGNED:
                raise SignatureError(
                    "unsigned record in a journal configured with a signing key; "
                    "someone else wrote to this journal, or signing was turned on later",
                    where,
                )
            expected = hmac.digest(self._key, data[:body_end], hashlib.sha256)
            if not hmac.compare_digest(expected, data[body_end:]):
                raise SignatureError(
                    "record signature does not match: the record was altered or signed with "
                    "another key; check journal.signing_key",
                    where,
                )
        try:
            record = self._decoder.decode(data[_HEADER_SIZE:body_end])
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(f"record payload does not decode: {exc}", where) from None
        if _TYPES_BY_CODE.get(type_code) is not type(record):
            raise CorruptRecordError(
                f"record type code {type_code} does not match its payload "
                f"({type(record).__name__})",
                where,
            )
        return record

    def decode_many(self, datas: list[bytes], where: Callable[[int], str]) -> list[JournalRecord]:
        """Decode records in one MessagePack call (recovery reads thousands): the same checks
        and results as :meth:`decode` on each, whose precise error is raised for a bad one
        (``where(i)`` names the place of ``datas[i]``).

        Per record, the Python work of :meth:`decode` cost about as much as the decoding
        itself. A signed journal verifies each record's HMAC and takes that path.
        """
        if len(datas) > 1:
            records = self.decode_joined(b"".join(datas), len(datas))
            if records is not None:
                return records
        return [self.decode(data, where(i)) for i, data in enumerate(datas)]

    def decode_joined(self, data: bytes, n: int) -> list[JournalRecord] | None:
        """``n`` records laid end to end in ``data``, decoded in one MessagePack call, as
        :meth:`decode` gives them; ``None`` unless all are unsigned records this codec reads
        that way (then decode them one by one, which says what is wrong with which).

        For readers that hold records already joined (the Fluss store, from Arrow buffers).
        """
        if self._key is not None or not _STREAM_FITS:
            return None
        try:
            values = self._stream.decode(_array_header(_FIELDS * n) + data)
        except msgspec.DecodeError:
            return None
        records: list[Any] = values[5::_FIELDS]
        if len(values) == _FIELDS * n and _stream_checks(values, records, n):
            return records
        return None


def _stream_checks(values: list[Any], records: list[Any], n: int) -> bool:
    """What :meth:`RecordCodec.decode` checks, for every record of a decoded stream."""
    try:
        return (
            values[0::_FIELDS] == [MAGIC[0]] * n
            and values[1::_FIELDS] == [MAGIC[1]] * n
            and max(values[2::_FIELDS]) <= FORMAT_VERSION
            and not any(values[4::_FIELDS])  # no flags: unsigned
            and list(map(type, records)) == list(map(_TYPES_BY_CODE.get, values[3::_FIELDS]))
        )
    except TypeError:  # not a header where one belongs: the slow path says which record
        return False


def _array_header(length: int) -> bytes:
    return b"\xdd" + length.to_bytes(4, "big")
