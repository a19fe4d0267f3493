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
        head = read_head(data, codec, PLACE, offset)
        if (head.namespace, head.operator_uid) == ("ns", "op"):
            found.setdefault(head.key_id, []).append(offset)
    return found


def sort(datas: list[bytes], codec: RecordCodec, batch: int = 3) -> dict[str, list[int]]:
    sorter = Sorter("ns", "op", codec, PLACE)
    messages = [Message(topic="t", partition=0, offset=n, value=d) for n, d in enumerate(datas)]
    for n in range(0, len(messages), batch):
        sorter.add(messages[n : n + batch])
    found = sorter.found()
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


def test_a_foreign_or_cut_record_fails_naming_its_offset():
    codec = RecordCodec()
    good = codec.encode(rc("ns", "op", "short", 0))
    for bad in (b"hello, journal", good[:16]):
        with pytest.raises(CorruptRecordError, match=r"topic t partition 0 offset 1"):
            sort([good, bad], codec)
