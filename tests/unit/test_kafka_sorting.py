"""Recovery sorts a Kafka partition's records by key from their header bytes: the same result
as decoding each record's head, for every shape of header the codec writes."""

from __future__ import annotations

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka import Message  # noqa: E402

from actionjournal.durable.codec import RecordCodec  # noqa: E402
from actionjournal.durable.errors import CorruptRecordError  # noqa: E402
from actionjournal.durable.identity import key_id  # noqa: E402
from actionjournal.durable.records import CONTROL_KEY, RunCompleted  # noqa: E402
from actionjournal.stores.kafka.read import Sorter, read_head  # noqa: E402

PLACE = "topic t partition 0"


def rc(namespace: str, uid: str, key: str, seq: int, epoch: int = 0) -> RunCompleted:
    return RunCompleted(namespace, uid, epoch, key, seq, at=1.0, input_digest="d" * 40)


def by_head_decoding(datas: list[bytes], codec: RecordCodec) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for offset, data in enumerate(datas):
        head = read_head(Message(topic="t", partition=0, offset=offset, value=data))
        assert head is not None
        if (head.namespace, head.operator_uid) == ("ns", "op"):
            found.setdefault(head.key_id, []).append(offset)
    return found


def sorter_of(messages: list[Message], codec: RecordCodec, batch: int = 3) -> Sorter:
    sorter = Sorter("ns", "op", codec, PLACE)
    for n in range(0, len(messages), batch):
        sorter.add(messages[n : n + batch])
    return sorter


def sort(datas: list[bytes], codec: RecordCodec, batch: int = 3) -> dict[str, list[int]]:
    messages = [Message(topic="t", partition=0, offset=n, value=d) for n, d in enumerate(datas)]
    found = sorter_of(messages, codec, batch).found()
    assert all(data == datas[offset] for e in found.values() for offset, data in e)
    return {key: [offset for offset, _ in e] for key, e in found.items()}


@pytest.mark.parametrize("signed", [False, True], ids=["unsigned", "signed"])
def test_sorting_by_header_bytes_matches_head_decoding(signed):
    codec = RecordCodec(b"k" * 32 if signed else None)
    records = [
        rc("ns", "op", "short", 0),
        rc("ns", "op", key_id("user-1"), 0),  # a real key id: 32 characters, str 8
        rc("ns", "op", "x" * 31, 0),  # the longest fixstr
        rc("ns", "op", CONTROL_KEY, 0),  # control records: the empty key
        rc("ns", "op", "short", 1, epoch=300),  # an epoch past a fixint: the slow path
        rc("ns", "other", "short", 2),  # another operator
        rc("other", "op", "short", 3),  # another namespace
        rc("n", "sop", "short", 4),  # same bytes run, other split: not ours
        rc("ns", "op", "ü" * 20, 5),  # non-ASCII key, str 8
        rc("ns", "op", "short", 6),
    ]
    datas = [codec.encode(r) for r in records]
    assert sort(datas, codec) == by_head_decoding(datas, codec)
    assert sort(datas, codec)["short"] == [0, 4, 9]


def test_foreign_records_are_set_aside_and_headers_say_whose_a_record_is():
    codec = RecordCodec()
    good = codec.encode(rc("ns", "op", "short", 0))
    ours = [("aj.namespace", b"ns"), ("aj.operator_uid", b"op")]
    theirs = [("aj.namespace", b"other"), ("aj.operator_uid", b"op")]
    values = [
        (good, None, None),
        (b"hello, journal", None, None),  # a console producer's line
        (good[:16], None, None),  # our magic, but neither headers nor a whole identity
        (b"AJ\x01\x02\x00garbage", b"short", ours),  # ours by its headers: its key's to judge
        (b"AJ\x01\x02\x00garbage", b"short", theirs),  # another namespace's: never decoded
        (None, None, None),  # a tombstone
    ]
    messages = [
        Message(topic="t", partition=0, offset=n, value=v, key=k, headers=h)
        for n, (v, k, h) in enumerate(values)
    ]
    sorter = sorter_of(messages, codec)
    assert [offset for offset, _ in sorter.foreign] == [1, 2, 5]
    found = sorter.found()
    assert [offset for offset, _ in found["short"]] == [0, 3]
    with pytest.raises(CorruptRecordError, match=r"payload does not decode"):
        codec.decode(found["short"][1][1])
