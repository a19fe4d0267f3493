"""RecordCodec.decode_many decodes a run of records in one call: same records, same errors."""

from __future__ import annotations

import pytest

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import CorruptRecordError, SignatureError, UnsupportedFormatError
from actionjournal.durable.records import CallFinished, RunCompleted


def records() -> list:
    return [
        RunCompleted("ns", "op", 0, "k", 0, at=1.0, input_digest="d"),
        CallFinished("ns", "op", 0, "k", 0, "a", 0, "c", "f", None, "g", b"\x01", None, 1.0, 0.1),
        RunCompleted("ns", "op", 7, "k", 1, at=2.0, input_digest="e" * 300),
    ]


def where(i: int) -> str:
    return f"place {i}"


@pytest.mark.parametrize("key", [None, b"s" * 32], ids=["unsigned", "signed"])
def test_same_records_as_one_by_one(key):
    codec = RecordCodec(key)
    datas = [codec.encode(r) for r in records()]
    assert codec.decode_many(datas, where) == [codec.decode(d) for d in datas] == records()


@pytest.mark.parametrize(
    "spoil, error, match",
    [
        (lambda d: d[:-4], CorruptRecordError, "place 1"),  # cut short
        (lambda d: b"XX" + d[2:], CorruptRecordError, "not an actionjournal record.*place 1"),
        (lambda d: d[:2] + b"\x09" + d[3:], UnsupportedFormatError, "place 1"),  # newer version
        (lambda d: d[:3] + b"\x05" + d[4:], CorruptRecordError, "type code 5.*place 1"),
        (lambda d: d[:4] + b"\x01" + d[5:], CorruptRecordError, "place 1"),  # flagged signed
        (lambda d: d + b"\xc0", CorruptRecordError, "place 1"),  # a trailing extra value
    ],
)
def test_a_bad_record_gets_the_error_decode_gives_it(spoil, error, match):
    codec = RecordCodec()
    datas = [codec.encode(r) for r in records()]
    datas[1] = spoil(datas[1])
    with pytest.raises(error, match=match):
        codec.decode_many(datas, where)


def test_a_signed_journal_checks_every_signature():
    codec = RecordCodec(b"s" * 32)
    datas = [codec.encode(r) for r in records()]
    datas[2] = RecordCodec(b"t" * 32).encode(records()[2])
    with pytest.raises(SignatureError, match="place 2"):
        codec.decode_many(datas, where)
