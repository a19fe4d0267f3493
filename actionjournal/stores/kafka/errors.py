"""What a Kafka error means for the journal: its name, what to do, whether to retry."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from typing import TypeVar

from confluent_kafka import KafkaError, KafkaException

from actionjournal.durable.errors import StoreError
from actionjournal.stores.kafka.config import KafkaStoreConfig

T = TypeVar("T")

# Seen for a few hundred ms after a topic is created or a broker restarts, and for seconds
# while a partition's leader is replaced (a broker died: requests to it are cut off or time
# out until the controller fences it and elects a new leader). Worth retrying until
# admin_timeout_s is spent.
TRANSIENT = {
    KafkaError.NOT_LEADER_FOR_PARTITION,
    KafkaError.LEADER_NOT_AVAILABLE,
    KafkaError.COORDINATOR_LOAD_IN_PROGRESS,
    KafkaError.REPLICA_NOT_AVAILABLE,
    KafkaError.BROKER_NOT_AVAILABLE,
    KafkaError.FENCED_LEADER_EPOCH,
    KafkaError.UNKNOWN_LEADER_EPOCH,
    KafkaError.OFFSET_NOT_AVAILABLE,  # a new leader whose high watermark is not caught up
    KafkaError.REQUEST_TIMED_OUT,
    KafkaError.NETWORK_EXCEPTION,
    KafkaError._DESTROY_BROKER,  # the connection to a dead broker was torn down under it
    KafkaError._TIMED_OUT,  # the request waited on a dead broker
    KafkaError._TRANSPORT,
    KafkaError._WAIT_COORD,
    KafkaError._NODE_UPDATE,
}
# A topic a moment old is unknown to the brokers that have not caught up with the
# controller yet (a subtask created it; another asks its partition's leader): retried this
# long, so that a topic really deleted still says so within seconds.
NEW_TOPIC = {KafkaError.UNKNOWN_TOPIC_OR_PART}
_NEW_TOPIC_S = 5.0
# One attempt waits this long at most, so that a request stuck on a dead leader is asked
# again (of the new leader, once the metadata names it) instead of waiting out the budget.
_ATTEMPT_S = 3.0


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


def retrying(
    fn: Callable[[float], T],
    what: str,
    config: KafkaStoreConfig,
    refresh: Callable[[float], object] | None = None,
) -> T:
    """Run an admin/metadata request, retrying transient errors (new leaders, startup) for
    up to ``admin_timeout_s``; ``fn`` takes the seconds one attempt may wait. ``refresh``
    runs before each retry: a client that asks a partition's leader must learn of a new one
    (librdkafka refreshes a consumer's metadata only every 5 minutes when it is not
    assigned the partition)."""
    began = time.monotonic()
    deadline = began + config.admin_timeout_s
    while True:
        remaining = deadline - time.monotonic()
        try:
            return fn(max(0.5, min(_ATTEMPT_S, remaining)))
        except KafkaException as exc:
            error = exc.args[0]
            transient = error.retriable() or error.code() in TRANSIENT
            if error.code() in NEW_TOPIC and time.monotonic() - began < _NEW_TOPIC_S:
                time.sleep(0.2)
                continue
            if transient and time.monotonic() < deadline:
                time.sleep(0.2)
                if refresh is not None:
                    with contextlib.suppress(KafkaException):
                        refresh(max(0.5, min(_ATTEMPT_S, deadline - time.monotonic())))
                continue
            if transient:
                raise StoreError(
                    f"{what} on {config.bootstrap_servers} failed for {config.admin_timeout_s:g} "
                    f"s (admin_timeout_s): {describe(error)}. A leader change takes seconds; "
                    "this took longer: check that most brokers are up (a partition needs a "
                    "live in-sync replica to get a leader), then restart the job, or raise "
                    "admin_timeout_s to wait longer"
                ) from exc
            raise StoreError(
                f"{what} on {config.bootstrap_servers} failed: {describe(error)}. "
                f"{advice(error, config)}"
            ) from exc
