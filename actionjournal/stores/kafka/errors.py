"""What a Kafka error means for the journal: its name, what to do, whether to retry."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from actionjournal.durable.errors import StoreError
from actionjournal.stores.kafka.config import KafkaStoreConfig

T = TypeVar("T")

# Seen for a few hundred ms after a topic is created or a broker restarts; worth a retry.
TRANSIENT = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
}


def describe(error: KafkaError) -> str:
    return f"{error.name()} ({error.str()})"


def advice(error: KafkaError, config: KafkaStoreConfig) -> str:
    """What to do about a Kafka error, in the user's terms."""
    code = error.code()
    if code in (KafkaError.MSG_SIZE_TOO_LARGE, KafkaError.RECORD_LIST_TOO_LARGE):
        return (
            "The record is larger than the topic's max.message.bytes (or the producer's "
            "message.max.bytes): lower journal.max_payload_bytes, or raise max.message.bytes"
        )
    if code in (KafkaError._MSG_TIMED_OUT, KafkaError._TIMED_OUT, KafkaError._TRANSPORT,
                KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE):  # fmt: skip
        return (
            f"The brokers at {config.bootstrap_servers} did not answer in time "
            f"(delivery_timeout_s={config.delivery_timeout_s:g}, "
            f"admin_timeout_s={config.admin_timeout_s:g}): check that they are up and "
            "reachable, and the client_config security settings"
        )
    if code in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC,
                KafkaError._UNKNOWN_PARTITION):  # fmt: skip
        return (
            f"The topic {config.topic!r} or its partition is gone (deleted?). A recreated topic "
            "is a new journal: restore in upgrade mode"
        )
    if code in (KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
                KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._AUTHENTICATION,
                KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED):  # fmt: skip
        return (
            "Check the credentials in client_config and the ACLs: the store needs Describe, "
            "Create (if create_topic), Write, Read and DescribeConfigs on the topic and "
            "IdempotentWrite on the cluster"
        )
    if code in (KafkaError.NOT_ENOUGH_REPLICAS, KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND):
        return "Too few in-sync replicas for acks=all: bring the brokers back"
    if code in (KafkaError.INVALID_REPLICATION_FACTOR, KafkaError.INVALID_PARTITIONS):
        return (
            f"partitions={config.partitions}, replication_factor={config.replication_factor}: "
            "the replication factor cannot exceed the number of brokers"
        )
    if code == KafkaError.OFFSET_OUT_OF_RANGE or code == KafkaError._AUTO_OFFSET_RESET:
        return "Records were deleted while being read (retention or cleanup): restart the job"
    return "Check the broker logs and the client_config settings"


def retrying(fn: Callable[[], T], what: str, config: KafkaStoreConfig) -> T:
    """Run an admin/metadata request, retrying transient errors (new leaders, startup)."""
    deadline = time.monotonic() + config.admin_timeout_s
    while True:
        try:
            return fn()
        except KafkaException as exc:
            error = exc.args[0]
            transient = error.retriable() or error.code() in TRANSIENT
            if transient and time.monotonic() < deadline:
                time.sleep(0.2)
                continue
            raise StoreError(
                f"{what} on {config.bootstrap_servers} failed: {describe(error)}. "
                f"{advice(error, config)}"
            ) from exc
