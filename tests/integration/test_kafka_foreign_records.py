"""Records someone else wrote into a journal topic, on a real broker: foreign bytes and other
namespaces' records never stop a job; a corrupt record of a key stops that key until an
operator quarantines it; the tools list them all and go on."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
import shlex
import time
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, action
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import CorruptRecordError
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import Quarantined
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.tools.cli import main as cli

pytestmark = pytest.mark.kafka

CALLS: Counter[str] = Counter()
HEADERS = ("aj.namespace", "aj.operator_uid")


def charge(item: str) -> str:
    CALLS[item] += 1
    return f"charged {item}"


class Charger(Agent):
    uid = "charger"

    @action(InputEvent)
    async def handle(self, event, ctx):
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(charge, event.input)))


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()


@pytest.fixture
def topic(aj_kafka_bootstrap):
    name = f"foreign-{uuid.uuid4().hex[:8]}"
    yield name
    AdminClient({"bootstrap.servers": aj_kafka_bootstrap}).delete_topics([name])


def produce(bootstrap: str, topic: str, value: bytes, key=None, headers=None) -> int:
    """Write one message into partition 0 as a console producer would; its offset."""
    offsets = []
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        topic, value, key, 0, headers=headers, on_delivery=lambda e, m: offsets.append(m.offset())
    )
    assert producer.flush(30) == 0
    return offsets[0]


def run(config, inputs, namespace: str) -> LocalRunner:
    """A job of ``namespace`` on its own store (a store shares offsets queries for a second)."""
    store = KafkaStore(config)
    try:
        runner = LocalRunner(Charger(), store, JournalConfig(namespace=namespace))
        asyncio.run(runner.run(inputs))
    finally:
        store.close()
    return runner


def random_bytes() -> bytes:
    data = os.urandom(64)
    return data if data[:2] != b"AJ" else b"x" + data


def store_options(bootstrap: str, topic: str) -> list[str]:
    return ["--store", "kafka", "--bootstrap", bootstrap, "--topic", topic]


def test_foreign_records_and_other_namespaces_never_stop_a_job(
    aj_kafka_bootstrap, topic, caplog, capsys
):
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=1)
    run(config, [("k", "o1"), ("j", "o2")], namespace="other")
    # A console producer's line, random bytes, our magic with a garbage body (no headers):
    # foreign. Another namespace's record whose body is garbage: never decoded.
    foreign = [
        produce(aj_kafka_bootstrap, topic, b"order 17 shipped"),
        produce(aj_kafka_bootstrap, topic, random_bytes()),
        produce(aj_kafka_bootstrap, topic, b"AJ\x01\x05\x00garbage"),
    ]
    other = [(HEADERS[0], b"other"), (HEADERS[1], b"charger")]
    produce(aj_kafka_bootstrap, topic, b"AJ\x01\x05\x00garbage", key_id("k").encode(), other)
    caplog.set_level(logging.WARNING, "actionjournal.stores.kafka")

    runner = run(config, [("k", "a"), ("j", "b")], namespace="ns")

    assert sorted(event.output for _, event in runner.outputs) == ["charged a", "charged b"]
    assert CALLS == {"o1": 1, "o2": 1, "a": 1, "b": 1}
    assert runner.metrics.value("actionjournal_foreign_records_total") == 3
    warnings = [r.getMessage() for r in caplog.records if "foreign" in r.getMessage()]
    assert len(warnings) == 1 and "skipped 3 foreign records" in warnings[0], warnings
    assert f"offset {foreign[0]}: 16 bytes starting b'order 17 shipped'" in warnings[0]

    # The tools list them with their positions and go on (exit 0).
    argv = [*store_options(aj_kafka_bootstrap, topic), "--namespace", "ns", "--json"]
    assert cli(["journal", "inspect", *argv]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert [(u["position"], u["kind"]) for u in doc["unreadable"]] == [
        (at, "foreign") for at in foreign
    ]
    assert f"skipped a foreign record at partition 0 position {foreign[0]}" in captured.err
    assert doc["totals"]["records"] == 6 and doc["other_namespaces"] == {"other/charger": 7}
    plan = capsys_plan(aj_kafka_bootstrap, topic, capsys)
    assert [u["position"] for u in plan["unreadable"]] == foreign
    # Kafka deletes every record below a boundary: a foreign one (or another namespace's)
    # stops cleanup there.
    assert plan["partitions"][0]["blocker"]["kind"] in ("other_namespace", "foreign")


def capsys_plan(bootstrap: str, topic: str, capsys) -> dict:
    out = f"/tmp/plan-{uuid.uuid4().hex[:8]}.json"
    argv = [*store_options(bootstrap, topic), "--namespace", "ns"]
    assert cli(["cleanup", "plan", *argv, "--before", str(time.time()), "--out", out]) == 0
    capsys.readouterr()
    with open(out) as f:
        plan = json.load(f)
    os.unlink(out)
    return plan


def test_a_corrupt_record_stops_only_its_key_until_quarantined(aj_kafka_bootstrap, topic, capsys):
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=1)
    run(config, [("k", "a1"), ("j", "b1")], namespace="ns")
    store = KafkaStore(config)
    # A record filed under key k of our namespace and operator (headers, message key) whose
    # body does not decode: it may be k's data, so k stops; j does not.
    ours = [(HEADERS[0], b"ns"), (HEADERS[1], b"charger")]
    bad = produce(aj_kafka_bootstrap, topic, b"AJ\x01\x02\x00garbage", key_id("k").encode(), ours)
    with pytest.raises(CorruptRecordError) as info:
        store.read_key("ns", "charger", key_id("k"), None)
    of_j = store.read_key("ns", "charger", key_id("j"), None)
    assert [type(r).__name__ for r in of_j] == ["CallFinished", "ActionCompleted", "RunCompleted"]
    message = str(info.value)
    assert f"topic {topic} partition 0 offset {bad}" in message
    assert f"belongs to key {key_id('k')}, which stops here" in message
    command = re.search(r"`(actionjournal journal quarantine [^`]*)`", message).group(1)
    assert f"--bootstrap {aj_kafka_bootstrap} --topic {topic}" in command
    assert f"--namespace ns --operator-uid charger --partition 0 --position {bad}" in command

    with pytest.raises(CorruptRecordError, match="journal quarantine"):
        run(config, [("k", "a2"), ("j", "b2")], namespace="ns")

    argv = [*store_options(aj_kafka_bootstrap, topic), "--namespace", "ns", "--json"]
    assert cli(["journal", "inspect", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(u["position"], u["kind"], u["key_id"]) for u in doc["unreadable"]] == [
        (bad, "corrupt", key_id("k"))
    ]
    plan = capsys_plan(aj_kafka_bootstrap, topic, capsys)
    assert plan["unreadable"][0]["position"] == bad
    assert plan["partitions"][0]["blocker"]["position"] <= bad

    assert cli(shlex.split(command)[1:]) == 0
    assert f"quarantined partition 0 position {bad}" in capsys.readouterr().out
    store.close()
    store = KafkaStore(config)
    records = store.read_key("ns", "charger", key_id("k"), None)
    assert [type(r).__name__ for r in records] == [
        "CallFinished",
        "ActionCompleted",
        "RunCompleted",
        "Quarantined",
    ]
    assert isinstance(records[3], Quarantined) and records[3].position == bad

    CALLS.clear()
    runner = run(config, [("k", "a2"), ("j", "b2")], namespace="ns")
    assert sorted(event.output for _, event in runner.outputs) == ["charged a2", "charged b2"]
    assert CALLS == {"a2": 1, "b2": 1}
    assert cli(["journal", "inspect", *argv]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [u["kind"] for u in doc["unreadable"]] == ["quarantined"]
    store.close()


def test_records_without_headers_stay_readable(aj_kafka_bootstrap, topic):
    """Records written before the headers existed: identity from the body's prefix."""
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=1)
    run(config, [("k", "a1")], namespace="ns")
    store = KafkaStore(config)
    records = store.read_key("ns", "charger", key_id("k"), None)
    store.close()
    producer = Producer({"bootstrap.servers": aj_kafka_bootstrap})
    for record in records:  # the same records again, as the store wrote them before
        producer.produce(topic, store.codec.encode(record), record.key_id.encode(), 0)
    assert producer.flush(30) == 0
    other = KafkaStore(config)
    again = other.read_key("ns", "charger", key_id("k"), None)
    assert again == records + records
    assert other.read_key("other", "charger", key_id("k"), None) == []
    other.close()


def test_a_signed_record_copied_under_another_key_is_refused(aj_kafka_bootstrap, topic):
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=1)
    codec = RecordCodec(b"s" * 32)
    store = KafkaStore(config, codec)
    runner = LocalRunner(Charger(), store, JournalConfig(namespace="ns", signing_key="s" * 32))
    asyncio.run(runner.run([("j", "b1")]))
    (finished, *_) = store.read_key("ns", "charger", key_id("j"), None)
    store.close()
    ours = [(HEADERS[0], b"ns"), (HEADERS[1], b"charger")]
    copy = produce(aj_kafka_bootstrap, topic, codec.encode(finished), key_id("k").encode(), ours)
    other = KafkaStore(config, codec)
    with pytest.raises(CorruptRecordError, match=rf"offset {copy}") as info:
        other.read_key("ns", "charger", key_id("k"), None)
    assert f"is a CallFinished of namespace 'ns', operator 'charger', key {key_id('j')}" in str(
        info.value
    )
    assert len(other.read_key("ns", "charger", key_id("j"), None)) == 3  # j is not affected
    other.close()
