"""The Fluss store decodes a key's records straight from the bytes of the Arrow batches it
read: what recovery gets must be what decoding each record on its own gives, the errors
and quarantine decisions of unreadable records included."""

from __future__ import annotations

import pyarrow as pa
import pytest

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import CorruptRecordError
from actionjournal.durable.records import Quarantined, RunCompleted
from actionjournal.stores.fluss.read import Spans, collect, decode_runs, entries
from actionjournal.stores.quarantine import KeyRead, decode_range

KEYS = [f"key-{n}" for n in range(5)]
BASE = 1000  # the batch's first offset


def run_completed(key: str, seq: int) -> RunCompleted:
    return RunCompleted("ns", "op", 0, key, seq, at=1.0, input_digest="d" * seq)


def batch(rows: list[tuple[str, str, bytes]]) -> pa.RecordBatch:
    """A batch as the store's table holds rows: key, namespace, operator, record bytes."""
    keys, namespaces, data = zip(*rows, strict=True)
    return pa.record_batch(
        {
            "key_id": pa.array(keys),
            "namespace": pa.array(namespaces),
            "operator_uid": pa.array(["op"] * len(rows)),
            "record": pa.array(data, pa.binary()),
        }
    )


def rows_of(codec: RecordCodec, n: int = 40) -> list[tuple[str, str, bytes]]:
    """``n`` rows, keys interleaved; every fourth row another namespace's."""
    return [
        (KEYS[i % 5], "other" if i % 4 == 3 else "ns", codec.encode(run_completed(KEYS[i % 5], i)))
        for i in range(n)
    ]


def read(found: Spans, codec: RecordCodec, key: str, start: int = 0, end: int = 10**6) -> object:
    """The key's records both ways (or the error each raised): they must be the same."""
    where = KeyRead("table t bucket 0", "offset", 0, "ns", "op", key, lambda: "--store fluss")

    def outcome(decode) -> object:
        try:
            return decode()
        except CorruptRecordError as exc:
            return type(exc), str(exc)

    runs = found.get(key, [])
    fast = outcome(lambda: decode_runs(codec, runs, start, end, where))
    one_by_one = outcome(lambda: decode_range(codec, entries(runs), start, end, where))
    assert fast == one_by_one
    return fast


@pytest.mark.parametrize("signing_key", [None, b"k" * 32])
def test_records_of_each_key_in_offset_order(signing_key):
    codec = RecordCodec(signing_key)
    rows = rows_of(codec)
    found: Spans = {}
    collect(batch(rows[:17]), BASE, "ns", "op", "", found)  # two batches, one key's runs in both
    collect(batch(rows[17:]), BASE + 17, "ns", "op", "", found)
    for key in KEYS:
        got = read(found, codec, key)
        assert got == [
            run_completed(key, i) for i, row in enumerate(rows) if row[:2] == (key, "ns")
        ]
    # The run's offsets: a read from offset BASE + 20 on gets only what lies there.
    assert read(found, codec, KEYS[0], start=BASE + 20) == [
        run_completed(KEYS[0], i) for i in (20, 25, 30, 35) if rows[i][1] == "ns"
    ]


def test_one_key_of_a_batch():
    codec = RecordCodec()
    found: Spans = {}
    collect(batch(rows_of(codec)), BASE, "ns", "op", KEYS[2], found)
    assert list(found) == [KEYS[2]]
    assert read(found, codec, KEYS[2]) == [
        run_completed(KEYS[2], i) for i in (2, 12, 17, 22, 32, 37)
    ]


def test_an_unreadable_record_stops_its_key_until_quarantined():
    codec = RecordCodec()
    rows = rows_of(codec, 20)
    rows[6] = (KEYS[1], "ns", b"not a record")
    found: Spans = {}
    collect(batch(rows), BASE, "ns", "op", "", found)
    error = read(found, codec, KEYS[1])
    assert isinstance(error, tuple) and f"offset {BASE + 6}" in error[1]
    assert read(found, codec, KEYS[2])  # other keys recover

    decision = Quarantined("ns", "op", 0, KEYS[1], 9, partition=0, position=BASE + 6, size=12,
                           reason="unreadable", at=2.0)  # fmt: skip
    found = {}
    collect(batch([*rows, (KEYS[1], "ns", codec.encode(decision))]), BASE, "ns", "op", "", found)
    # The decision takes the unreadable record's place; row 11 is another namespace's.
    assert read(found, codec, KEYS[1]) == [
        run_completed(KEYS[1], 1),
        decision,
        run_completed(KEYS[1], 16),
    ]


def test_a_decision_about_a_record_no_longer_read_is_dropped():
    codec = RecordCodec()
    decision = Quarantined("ns", "op", 0, KEYS[1], 9, partition=0, position=BASE - 5, size=12,
                           reason="unreadable", at=2.0)  # fmt: skip
    rows = [*rows_of(codec, 20), (KEYS[1], "ns", codec.encode(decision))]
    found: Spans = {}
    collect(batch(rows), BASE, "ns", "op", "", found)
    assert read(found, codec, KEYS[1]) == [run_completed(KEYS[1], i) for i in (1, 6, 16)]
