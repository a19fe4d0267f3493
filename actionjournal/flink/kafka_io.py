"""Kafka in and exactly-once Kafka out for agent jobs, on Flink's Kafka connector.

``kafka_source`` keys the agent by each record's Kafka key: one agent key then lives in
one partition, whose order Kafka keeps, so after a restore every key's inputs come back in
the order they were journaled. Records without a key would spread one agent key over
several partitions, and a restore could number its inputs differently (a call then runs
again under a new id): they are keyed by their partition instead, with a warning.

``kafka_sink`` writes the agent's outputs in Kafka transactions committed with Flink's
checkpoints (``EXACTLY_ONCE``): a ``read_committed`` consumer sees each output once, even
across TaskManager losses. Each record is keyed like its input and carries its output
event's id in the ``actionjournal-event-id`` header, for consumers that read uncommitted
data or must deduplicate for another reason.

The connector (``flink-sql-connector-kafka``, the shaded jar: with the thin one PyFlink's
``KafkaOffsetsInitializer`` fails) is resolved from Maven into the cache and shipped with
the job, like the two small Java classes these need (``KafkaMessages.java``).
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict
from pyflink.common import Row, Types, WatermarkStrategy
from pyflink.datastream import KeyedStream, KeySelector, StreamExecutionEnvironment
from pyflink.datastream.connectors import DeliveryGuarantee
from pyflink.datastream.connectors.kafka import (
    KafkaOffsetResetStrategy,
    KafkaOffsetsInitializer,
    KafkaSink,
    KafkaSource,
)
from pyflink.java_gateway import get_gateway

import actionjournal._maven as maven
from actionjournal.flink import javac
from actionjournal.flink.function import AgentJob, AgentOutput

__all__ = [
    "EVENT_ID_HEADER",
    "KAFKA_CONNECTOR",
    "KafkaMessage",
    "connector_jar",
    "kafka_sink",
    "kafka_source",
    "transaction_timeout_ms",
]

KAFKA_CONNECTOR = "org.apache.flink:flink-sql-connector-kafka:5.0.0-2.2"
EVENT_ID_HEADER = "actionjournal-event-id"
SOURCE = Path(__file__).with_name("KafkaMessages.java")
# What a broker allows when nobody changed it (transaction.max.timeout.ms).
BROKER_DEFAULT_MAX_TIMEOUT_MS = 900_000
KEYLESS_WARNING_EVERY_S = 60.0
log = logging.getLogger(__name__)
_BYTES = Types.PRIMITIVE_ARRAY(Types.BYTE())


class KafkaMessage(BaseModel):
    """An agent input read from Kafka (``event.input``); ``text`` is the value as UTF-8."""

    model_config = ConfigDict(frozen=True)

    key: bytes | None
    value: bytes | None
    topic: str
    partition: int
    offset: int
    timestamp: int

    @property
    def text(self) -> str:
        return (self.value or b"").decode()


def connector_jar() -> Path:
    """The shaded Kafka connector jar, resolved from Maven into the cache on first use."""
    name = KAFKA_CONNECTOR.split(":", 1)[1].replace(":", "-")
    return next(maven.resolve(name, [KAFKA_CONNECTOR]).glob("flink-sql-connector-kafka-*.jar"))


def _ship_classes(env: StreamExecutionEnvironment) -> Any:
    """Ship the connector and ``KafkaMessages``; returns the JVM to build them with."""
    connector = connector_jar()
    javac.ship(env, connector)
    javac.ship(env, javac.compiled_jar(SOURCE, [connector]))
    return get_gateway().jvm.io.actionjournal.flink.KafkaMessages


def kafka_source(
    env: StreamExecutionEnvironment,
    topic: str,
    *,
    bootstrap_servers: str,
    group_id: str | None = None,
    start: Literal["committed", "earliest", "latest"] = "committed",
    bounded: bool = False,
    properties: Mapping[str, str] | None = None,
    uid: str | None = None,
) -> KeyedStream:
    """``topic``'s records as :class:`KafkaMessage` inputs, keyed by their Kafka key.

    ``start`` applies when the job starts without state: ``committed`` resumes from the
    group's committed offsets (the earliest where there are none). ``bounded`` stops at the
    offsets that were the latest when the job started. Only committed records are read
    (``isolation.level=read_committed``) unless ``properties`` say otherwise.
    """
    messages = _ship_classes(env)
    uid = uid or f"kafka-source-{topic}"
    builder = (
        KafkaSource.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_topics(topic)
        .set_group_id(group_id or f"actionjournal-{topic}")
        .set_starting_offsets(_starting_offsets(start))
        .set_properties({"isolation.level": "read_committed", **(properties or {})})
    )
    if bounded:
        builder.set_bounded(KafkaOffsetsInitializer.latest())
    # PyFlink's builder offers value-only deserializers; the key is the point here.
    builder._j_builder.setDeserializer(messages.Reader())
    rows = env.from_source(
        builder.build(),
        WatermarkStrategy.no_watermarks(),
        f"kafka {topic}",
        type_info=Types.ROW_NAMED(
            ["key", "value", "topic", "partition", "offset", "timestamp"],
            [_BYTES, _BYTES, Types.STRING(), Types.INT(), Types.LONG(), Types.LONG()],
        ),
    ).uid(uid)
    return (
        rows.map(_message, output_type=Types.PICKLED_BYTE_ARRAY())
        .uid(f"{uid}-messages")
        .key_by(MessageKey())
    )


def _starting_offsets(start: str) -> KafkaOffsetsInitializer:
    if start == "committed":
        return KafkaOffsetsInitializer.committed_offsets(KafkaOffsetResetStrategy.EARLIEST)
    if start == "earliest":
        return KafkaOffsetsInitializer.earliest()
    if start == "latest":
        return KafkaOffsetsInitializer.latest()
    raise ValueError(f"start={start!r}: use 'committed', 'earliest' or 'latest'")


def _message(row: Any) -> KafkaMessage:
    key, value = row[0], row[1]
    return KafkaMessage(
        key=None if key is None else bytes(key),
        value=None if value is None else bytes(value),
        topic=row[2],
        partition=row[3],
        offset=row[4],
        timestamp=row[5],
    )


class MessageKey(KeySelector):
    """The record's Kafka key; for a record without one, its topic and partition (warned)."""

    def get_key(self, message: KafkaMessage) -> bytes | str:
        if message.key is not None:
            return message.key
        _warn_keyless(message)
        return f"{message.topic}/{message.partition}"


_keyless_lock = threading.Lock()
_keyless = {"count": 0, "warned": 0.0}


def _warn_keyless(message: KafkaMessage) -> None:
    with _keyless_lock:
        _keyless["count"] += 1
        now = time.monotonic()
        if _keyless["warned"] and now - _keyless["warned"] < KEYLESS_WARNING_EVERY_S:
            return
        count, _keyless["count"], _keyless["warned"] = _keyless["count"], 0, now
    log.warning(
        "%d Kafka record(s) without a key in %s (latest: partition %d, offset %d): each is "
        "keyed by its partition, so all keyless records of a partition run one after another. "
        "Give records a key (the agent key) when producing them: keyless records spread one "
        "agent key over several partitions, whose relative order a restore does not keep",
        count, message.topic, message.partition, message.offset,
    )  # fmt: skip


def kafka_sink(
    job: AgentJob,
    topic: str,
    *,
    bootstrap_servers: str,
    serialize: Callable[[Any], bytes] | None = None,
    transactional_id_prefix: str | None = None,
    transaction_timeout: int | None = None,
    properties: Mapping[str, str] | None = None,
) -> Any:
    """Write ``job``'s outputs to ``topic`` exactly once; returns the sink (a DataStreamSink).

    ``serialize`` turns an output into the record value (default: bytes and str as they
    are, anything else as JSON). Records are keyed like the input that produced them and
    carry the output event's id in the ``actionjournal-event-id`` header. Transactions
    commit with checkpoints, so enable checkpointing; their ids start with
    ``transactional_id_prefix`` (default ``actionjournal-<agent uid>-<topic>``: keep it
    stable across restores). ``transaction_timeout`` (ms) defaults to the most the broker
    allows (its ``transaction.max.timeout.ms``): a job down longer than that loses the
    outputs of the transactions it had not committed yet.
    """
    stream = job.to_datastream(with_ids=True)
    messages = _ship_classes(stream.get_execution_environment())
    timeout = transaction_timeout or transaction_timeout_ms(bootstrap_servers)
    builder = (
        KafkaSink.builder()
        .set_bootstrap_servers(bootstrap_servers)
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(transactional_id_prefix or f"actionjournal-{job.uid}-{topic}")
        .set_property("transaction.timeout.ms", str(timeout))
    )
    for name, value in (properties or {}).items():
        builder.set_property(name, value)
    # PyFlink's record serializer builder cannot put one field in the key and set headers.
    builder._j_builder.setRecordSerializer(messages.Writer(topic))
    records = stream.map(
        OutputRecord(serialize or _default_serialize),
        output_type=Types.ROW_NAMED(["key", "value", "event_id"], [_BYTES, _BYTES, Types.STRING()]),
    ).uid(f"{job.uid}-kafka-records-{topic}")
    return records.sink_to(builder.build()).uid(f"{job.uid}-kafka-sink-{topic}")


class OutputRecord:
    """An agent output as the Row(key, value, event id) the Java writer takes."""

    def __init__(self, serialize: Callable[[Any], bytes]) -> None:
        self.serialize = serialize

    def __call__(self, out: AgentOutput) -> Row:
        return Row(_key_bytes(out.key), self.serialize(out.output), out.event_id)


def _key_bytes(key: Any) -> bytes:
    if isinstance(key, bytes):
        return key
    return (key if isinstance(key, str) else json.dumps(key)).encode()


def _default_serialize(output: Any) -> bytes:
    if isinstance(output, bytes):
        return output
    if isinstance(output, str):
        return output.encode()
    if isinstance(output, BaseModel):
        return output.model_dump_json().encode()
    return json.dumps(output).encode()


def transaction_timeout_ms(bootstrap_servers: str) -> int:
    """The broker's ``transaction.max.timeout.ms`` (the broker default where unreadable).

    A producer asking for more is refused by the broker; Flink's own default (1 hour) is
    more than a default broker allows (15 minutes).
    """
    try:
        from confluent_kafka.admin import AdminClient, ConfigResource

        from actionjournal.stores.kafka.logs import client_logging

        # librdkafka's own lines (a BGQUEUE line when the client goes) would reach stderr,
        # in the middle of `flink run`'s output
        admin = AdminClient({"bootstrap.servers": bootstrap_servers, **client_logging()})
        broker = next(iter(admin.list_topics(timeout=10).brokers))
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker))
        configs = admin.describe_configs([resource])[resource].result(timeout=10)
        return int(configs["transaction.max.timeout.ms"].value)
    except Exception as exc:  # no client library, broker unreachable, config hidden by ACLs
        log.warning(
            "could not read transaction.max.timeout.ms from the broker at %s (%s): using the "
            "broker default, %d ms; pass transaction_timeout= to choose",
            bootstrap_servers, exc, BROKER_DEFAULT_MAX_TIMEOUT_MS,
        )  # fmt: skip
        return BROKER_DEFAULT_MAX_TIMEOUT_MS
