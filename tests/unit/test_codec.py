"""Bad journal bytes get clear errors; nothing is silently accepted."""

from __future__ import annotations

import threading

import pytest
from pydantic import BaseModel

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.error_records import capture_error, rebuild_error
from actionjournal.durable.errors import (
    CorruptRecordError,
    EncodingError,
    PayloadTooLargeError,
    PickleDisabledError,
    RecordedCallError,
    SignatureError,
    UnsupportedFormatError,
)
from actionjournal.durable.records import RunCompleted
from actionjournal.durable.values import ValueCodec

RECORD = RunCompleted("ns", "uid", 0, "k", 3, at=1.0, input_digest="d")


def test_round_trip_unsigned_and_signed():
    assert RecordCodec().decode(RecordCodec().encode(RECORD)) == RECORD
    signed = RecordCodec(b"secret")
    assert signed.decode(signed.encode(RECORD)) == RECORD


def test_wrong_magic_names_the_location():
    with pytest.raises(CorruptRecordError, match=r"not an actionjournal record.*at topic t"):
        RecordCodec().decode(b"XX\x01\x05\x00\x90", "topic t partition 0 offset 7")


def test_truncated_and_garbage_payload():
    data = RecordCodec().encode(RECORD)
    with pytest.raises(CorruptRecordError, match="does not decode"):
        RecordCodec().decode(data[:-3])
    with pytest.raises(CorruptRecordError):
        RecordCodec().decode(b"AJ")


def test_newer_format_version_is_refused():
    data = bytearray(RecordCodec().encode(RECORD))
    data[2] = 99
    with pytest.raises(UnsupportedFormatError, match="version 99 is newer"):
        RecordCodec().decode(bytes(data))


def test_tampered_signed_record():
    codec = RecordCodec(b"secret")
    data = bytearray(codec.encode(RECORD))
    data[10] ^= 0x01
    with pytest.raises(SignatureError, match="altered"):
        codec.decode(bytes(data))


def test_other_key_and_unsigned_records_rejected_when_signing():
    with pytest.raises(SignatureError):
        RecordCodec(b"other").decode(RecordCodec(b"secret").encode(RECORD))
    with pytest.raises(SignatureError, match="unsigned record"):
        RecordCodec(b"secret").decode(RecordCodec().encode(RECORD))


class Reply(BaseModel):
    text: str
    score: float


def test_values_none_pydantic_and_plain_data():
    codec = ValueCodec()
    assert codec.decode(codec.encode(None)) is None
    assert codec.decode(codec.encode(Reply(text="hi", score=0.5))) == Reply(text="hi", score=0.5)
    assert codec.decode(codec.encode({"a": [1, 2.5, "x", b"y", True]})) == {
        "a": [1, 2.5, "x", b"y", True]
    }


def test_unsupported_value_is_refused_without_pickle():
    with pytest.raises(EncodingError, match=r"cannot journal result of f.*object"):
        ValueCodec().encode(object(), "result of f")


def test_pickled_value_needs_opt_in_to_decode():
    data = ValueCodec(allow_pickle=True).encode(complex(1, 2))
    assert ValueCodec(allow_pickle=True).decode(data) == complex(1, 2)
    with pytest.raises(PickleDisabledError):
        ValueCodec().decode(data)


def test_payload_limit():
    with pytest.raises(PayloadTooLargeError, match=r"over journal\.max_payload_bytes=100"):
        ValueCodec(max_payload_bytes=100).encode("x" * 200, "result of f")


class NeedsTwoArgs(Exception):
    def __init__(self, code: int, detail: str) -> None:
        super().__init__(f"{code}: {detail}")


def test_error_that_cannot_be_rebuilt_replays_as_recorded_call_error():
    class Local(Exception):  # not reachable by its name in another process
        pass

    codec = ValueCodec()
    for exc in (Local("402: payment required"), NeedsTwoArgs(402, "payment required")):
        exc.lock = threading.Lock()  # an attribute that cannot be journaled
        rebuilt = rebuild_error(codec, capture_error(codec, exc))
        assert isinstance(rebuilt, RecordedCallError)
        assert rebuilt.original_type.endswith(type(exc).__qualname__)
        assert "402: payment required" in str(rebuilt)


def test_error_type_args_and_cause_chain_survive():
    codec = ValueCodec()
    try:
        try:
            raise KeyError("inner")
        except KeyError as inner:
            raise ValueError("outer", 7) from inner
    except ValueError as exc:
        rebuilt = rebuild_error(codec, capture_error(codec, exc))
    assert type(rebuilt) is ValueError and rebuilt.args == ("outer", 7)
    assert type(rebuilt.__cause__) is KeyError and rebuilt.__cause__.args == ("inner",)
