"""The Kafka helpers' Python side: how records are keyed, what a keyless record costs, how
outputs become record values. The real round trip is in tests/cluster."""

from __future__ import annotations

import logging

import pytest
from pydantic import BaseModel

from actionjournal.flink import kafka_io as kafka
from actionjournal.flink.kafka_io import KafkaMessage, MessageKey


def message(key: bytes | None, partition: int = 2, offset: int = 7) -> KafkaMessage:
    return KafkaMessage(
        key=key, value=b'{"a": 1}', topic="orders", partition=partition, offset=offset, timestamp=0
    )


@pytest.fixture(autouse=True)
def fresh_warning_state(monkeypatch):
    monkeypatch.setattr(kafka, "_keyless", {"count": 0, "warned": 0.0})


def test_records_are_keyed_by_their_kafka_key():
    assert MessageKey().get_key(message(b"customer-1")) == b"customer-1"


def test_keyless_records_are_keyed_by_partition_with_one_warning_a_minute(caplog, monkeypatch):
    clock = iter([100.0, 101.0, 102.0, 100.0 + kafka.KEYLESS_WARNING_EVERY_S + 1])
    monkeypatch.setattr(kafka.time, "monotonic", lambda: next(clock))
    with caplog.at_level(logging.WARNING, logger="actionjournal.flink.kafka_io"):
        keys = [MessageKey().get_key(message(None, offset=i)) for i in range(4)]
    assert keys == ["orders/2"] * 4
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("1 Kafka record(s) without a key in orders")
    assert warnings[1].startswith(
        "3 Kafka record(s) without a key in orders (latest: partition 2, offset 3)"
    )
    assert "Give records a key" in warnings[1]


class Reply(BaseModel):
    text: str


@pytest.mark.parametrize(
    ("output", "value"),
    [
        (b"raw", b"raw"),
        ("text", b"text"),
        ({"n": 1}, b'{"n": 1}'),
        (Reply(text="hi"), b'{"text":"hi"}'),
    ],
)
def test_outputs_become_record_values(output, value):
    assert kafka._default_serialize(output) == value


def test_message_text_is_the_value_as_utf8():
    assert message(b"k").text == '{"a": 1}'
