"""The Kafka store on a real broker: failures surface, recovery reads are validated and cheap."""

from __future__ import annotations

import asyncio
import functools
import threading
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from pydantic import ValidationError

from actionjournal import (
    Agent,
    DataLossError,
    InputEvent,
    JournalWriteError,
    LocalRunner,
    MarkerMismatchError,
    OutputEvent,
    StoreRecreatedError,
    action,
)
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import StoreError
from actionjournal.operator.engine import AgentEngine, KeyState, PendingInput
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.stores.kafka import store as kafka_module
from tests.store_checks import check_one_pass_per_partition, rc, seqs

pytestmark = pytest.mark.kafka


class Noop(Agent):
    uid = "op"

    @action(InputEvent)
    def handle(self, event, ctx):
        pass


def pending_state(marker) -> KeyState:
    return KeyState(next_seq=1, pending=[PendingInput(0, b"\xc0")], marker=marker)


def create_topic(admin, topic: str, partitions: int, **config: str) -> None:
    new = NewTopic(topic, partitions, 1, config=config)
    admin.create_topics([new], operation_timeout=30)[topic].result()


def test_config_errors_name_the_setting_and_never_show_secrets():
    secret = {"sasl.password": "hunter2"}
    with pytest.raises(ValidationError) as caught:
        KafkaStoreConfig(bootstrap_servers="b:9092", client_config={**secret, "acks": "1"})
    assert "'acks'" in str(caught.value) and "acks=all" in str(caught.value)
    assert "hunter2" not in str(caught.value)
    assert "hunter2" not in repr(KafkaStoreConfig(bootstrap_servers="b:9092", client_config=secret))
    with pytest.raises(ValidationError, match="partitions"):
        KafkaStoreConfig(bootstrap_servers="b:9092", partitions=0)
    with pytest.raises(ValidationError, match="topic"):
        KafkaStoreConfig(bootstrap_servers="b:9092", topic="no spaces")
    with pytest.raises(ValidationError, match="linger"):
        KafkaStoreConfig(bootstrap_servers="b:9092", linger=5)  # unknown settings fail


# -- writes ------------------------------------------------------------------------------


def test_oversized_record_fails_naming_the_limit_and_nothing_is_lost(
    kafka_store, kafka_admin, topic
):
    create_topic(kafka_admin, topic, 4, **{"max.message.bytes": "2000"})
    store = kafka_store(topic)
    kept = [store.append(rc("k", 0))]
    # Refused before sending: the store read the topic's limit when it opened.
    with pytest.raises(JournalWriteError, match=r"over the limit .*max\.message\.bytes=2000"):
        store.append(rc("k", 1, digest="x" * 3000))
    kept.append(store.append(rc("k", 2)))
    # The limit shrinks behind the store's back: the broker refuses, the append raises.
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("max.message.bytes", "1000", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    kafka_admin.incremental_alter_configs([resource])[resource].result()
    deadline = time.monotonic() + 15
    while True:  # the broker applies the new config asynchronously
        try:
            kept.append(store.append(rc("k", len(kept) + 10, digest="y" * 1500)))
        except JournalWriteError as exc:
            message = str(exc)
            break
        assert time.monotonic() < deadline, "the broker never applied max.message.bytes=1000"
        time.sleep(0.2)
    assert "MSG_SIZE_TOO_LARGE" in message and "max.message.bytes" in message
    assert f"topic {topic} partition {store.partition_of('k')}" in message
    kept.append(store.append(rc("k", 99)))  # the store keeps working
    # Exactly the acknowledged records are in the journal, nothing else.
    records = store.read_key("ns", "op", "k", None)
    assert [r.seq for r in records][:2] == [0, 2] and 1 not in [r.seq for r in records]
    assert len(records) == len(kept) and records[-1].seq == 99


def test_broker_killed_appends_fail_within_the_delivery_timeout_then_recover(private_broker):
    config = KafkaStoreConfig(
        bootstrap_servers=private_broker.bootstrap,
        topic="killed",
        partitions=4,
        delivery_timeout_s=5,
        admin_timeout_s=20,
    )
    store = KafkaStore(config)
    try:
        store.append(rc("k", 0))
        private_broker.kill()
        errors: list[tuple[float, Exception]] = []

        def append(seq: int) -> None:
            start = time.monotonic()
            try:
                store.append(rc(f"key-{seq}", seq))
            except JournalWriteError as exc:
                errors.append((time.monotonic() - start, exc))

        threads = [threading.Thread(target=append, args=(n,)) for n in range(1, 9)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(30)
        assert not any(t.is_alive() for t in threads), "an append hung on a dead broker"
        assert len(errors) == 8
        for elapsed, exc in errors:
            assert elapsed < config.delivery_timeout_s + 3
            assert "_MSG_TIMED_OUT" in str(exc) and private_broker.bootstrap in str(exc)
            assert "may or may not have reached the broker" in str(exc)

        private_broker.restart()
        deadline = time.monotonic() + 60
        while True:  # the client reconnects with backoff
            try:
                store.append(rc("k", 100))
                break
            except JournalWriteError:
                assert time.monotonic() < deadline, "appends did not work again after restart"
        store.append(rc("k", 101))
        assert seqs(store, "k") == [0, 100, 101]
        assert all(seqs(store, f"key-{n}") == [] for n in range(1, 9))
    finally:
        store.close()


def test_unreachable_broker_fails_at_start_not_hangs():
    start = time.monotonic()
    config = KafkaStoreConfig(bootstrap_servers="127.0.0.1:9", topic="t", admin_timeout_s=3)
    with pytest.raises(
        StoreError, match=r"cannot reach the Kafka brokers at 127\.0\.0\.1:9 \(describing topic t\)"
    ):
        KafkaStore(config)
    assert time.monotonic() - start < 15


# -- topic validation ----------------------------------------------------------------------


def test_existing_topic_with_another_partition_count_is_refused(kafka_store, kafka_admin, topic):
    create_topic(kafka_admin, topic, 3)
    with pytest.raises(StoreError, match=r"has 3 partitions .* partitions=4.*set partitions=3"):
        kafka_store(topic, partitions=4)
    assert kafka_store(topic, partitions=3).partition_of("k") in range(3)


def test_missing_topic_without_create_topic_is_refused(kafka_store, topic):
    with pytest.raises(StoreError, match=r"does not exist .* create_topic is false"):
        kafka_store(topic, create_topic=False)


def test_store_identity_is_the_topic_id(kafka_store, kafka_admin, topic):
    store = kafka_store(topic, partitions=64)  # the default, as a job gets it
    description = kafka_admin.list_topics(topic, timeout=10).topics[topic]
    assert len(description.partitions) == 64
    assert store.identity.backend == "kafka" and store.identity.name == topic
    assert store.identity == kafka_store(topic, partitions=64).identity  # stable across opens


# -- recovery validation ---------------------------------------------------------------------


def test_recreated_topic_is_detected(kafka_store, kafka_admin, topic):
    first = kafka_store(topic)
    marker = first.append(rc("k", 0))
    first.close()
    kafka_admin.delete_topics([topic], operation_timeout=30)[topic].result()
    deadline = time.monotonic() + 30
    while topic in kafka_admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline
        time.sleep(0.2)
    second = kafka_store(topic)
    assert second.identity.uid != marker.store.uid
    engine = AgentEngine(Noop(), second)
    with pytest.raises(StoreRecreatedError, match=f"{topic}.*deleted and recreated"):
        engine.restore.validate_marker("k", pending_state(marker).marker)


def test_marker_of_another_topic_is_refused(kafka_store, topic):
    other = kafka_store(f"{topic}-other")
    marker = other.append(rc("k", 0))
    engine = AgentEngine(Noop(), kafka_store(topic))
    with pytest.raises(MarkerMismatchError, match=f"{topic}-other.*configured store is kafka"):
        engine.restore.validate_marker("k", pending_state(marker).marker)


def test_deleted_records_below_a_pending_marker_are_data_loss(kafka_store, kafka_admin, topic):
    store = kafka_store(topic)
    markers = [store.append(rc("k", n)) for n in range(5)]
    partition = store.partition_of("k")
    cut = TopicPartition(topic, partition, markers[3].position)
    kafka_admin.delete_records([cut], operation_timeout=30)[cut].result()
    assert store.earliest_position("k") == markers[3].position
    engine = AgentEngine(Noop(), store)
    with pytest.raises(DataLossError, match=f"partition {partition} now starts at position"):
        engine.recover("k", pending_state(markers[1]))
    # A marker still inside the retained range is fine; an idle key reads what is left.
    assert engine.restore.validate_marker("k", pending_state(markers[2]).marker) == markers[2]
    engine.recover("k", pending_state(markers[2]))
    engine.recover("k", KeyState(next_seq=3, marker=markers[1]))  # idle: no error
    assert seqs(store, "k") == [3, 4]


def test_records_deleted_during_a_recovery_wave_are_never_skipped(
    kafka_store, kafka_admin, topic, monkeypatch
):
    # A wave reuses the first retained offset it captured; retention moving meanwhile
    # must fail the read, not hand out a journal with a hole in it.
    monkeypatch.setattr(kafka_module, "_WAVE_S", 3600.0)
    store = kafka_store(topic)
    markers = [store.append(rc("k", n)) for n in range(5)]
    assert store.earliest_position("k") == markers[0].position  # the wave begins
    cut = TopicPartition(topic, markers[0].partition, markers[3].position)
    kafka_admin.delete_records([cut], operation_timeout=30)[cut].result()
    engine = AgentEngine(Noop(), store)
    with pytest.raises(StoreError, match="offsets 2..4 failed.*Offset out of range"):
        engine.recover("k", pending_state(markers[1]))
    # With the current first offset, a marker below it is data loss, never a silent skip.
    monkeypatch.setattr(kafka_module, "_WAVE_S", 0.0)
    with pytest.raises(DataLossError, match="from offset 2, but the partition now starts at"):
        store.read_key("ns", "op", "k", markers[1])


# -- reads -----------------------------------------------------------------------------------


class CountingCodec(RecordCodec):
    decoded = 0

    def decode(self, data: bytes, where: str = ""):
        CountingCodec.decoded += 1
        return super().decode(data, where)


def test_namespaces_sharing_a_topic_do_not_interfere(kafka_store, topic):
    # Two jobs, each signing with its own key: reading ours never touches theirs.
    ours = kafka_store(topic, codec=CountingCodec(b"our key"))
    theirs = kafka_store(topic, codec=RecordCodec(b"their key"))
    for n in range(5):
        ours.append(rc("k", n, namespace="a"))
        theirs.append(rc("k", 100 + n, namespace="b"))
        theirs.append(rc("k2", n, namespace="b"))
    CountingCodec.decoded = 0
    assert seqs(ours, "k", namespace="a") == [0, 1, 2, 3, 4]
    assert CountingCodec.decoded == 5  # only our records were decoded
    assert seqs(theirs, "k", namespace="b") == [100, 101, 102, 103, 104]
    assert seqs(ours, "k2", namespace="a") == []


def test_many_keys_recover_with_one_pass_per_partition(kafka_store, topic, monkeypatch):
    writer = kafka_store(topic, partitions=2)
    reader = functools.partial(kafka_store, topic, partitions=2)
    check_one_pass_per_partition(writer, reader, kafka_module, "_watermarks", monkeypatch)


@pytest.mark.parametrize("budget", [0, 1], ids=["cache off", "always over budget"])
def test_reads_stay_correct_without_the_recovery_cache(kafka_store, topic, budget):
    writer = kafka_store(topic, partitions=2)
    markers = {(k, n): writer.append(rc(f"key-{k}", n)) for n in range(3) for k in range(6)}
    reader = kafka_store(topic, partitions=2, recovery_cache_bytes=budget)
    assert seqs(reader, "key-0", after=markers[0, 0]) == [1, 2]
    for k in range(1, 6):
        assert seqs(reader, f"key-{k}") == [0, 1, 2]
    assert seqs(reader, "key-0") == [0, 1, 2]


def test_read_is_bounded_by_the_end_captured_at_its_start(kafka_store, topic):
    store = kafka_store(topic)
    for n in range(200):
        store.append(rc("k", n))
    stop = threading.Event()

    def keep_writing() -> None:
        n = 1000
        while not stop.is_set():
            store.append(rc("k", n))
            n += 1

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        got = seqs(store, "k")
    finally:
        stop.set()
        writer.join()
    assert got[:200] == list(range(200))
    assert got[200:] == list(range(1000, 1000 + len(got) - 200))


# -- end to end ------------------------------------------------------------------------------

CALLS: list[str] = []


def lookup(ticket: str) -> str:
    CALLS.append(ticket)
    return ticket.upper()


class Lookup(Agent):
    uid = "lookup"

    @action(InputEvent)
    def handle(self, event, ctx):
        found = ctx.durable_execute(lookup, event.input)
        ctx.short_term_memory.set("last", found)
        ctx.send_event(OutputEvent(found))


def test_second_run_over_the_same_topic_replays_everything(kafka_store, topic):
    inputs = [(f"user-{n % 4}", f"ticket-{n}") for n in range(12)]
    CALLS.clear()
    first = LocalRunner(Lookup(), kafka_store(topic))
    asyncio.run(first.run(inputs))
    assert first.counts["executed"] == 12 and len(CALLS) == 12
    second = LocalRunner(Lookup(), kafka_store(topic))  # as a new process would
    asyncio.run(second.run(inputs))
    assert second.counts["executed"] == 0 and second.counts["actions_replayed"] == 12
    assert len(CALLS) == 12
    assert sorted(e.output for _, e in second.outputs) == sorted(e.output for _, e in first.outputs)
