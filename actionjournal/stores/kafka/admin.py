"""The journal topic: create or validate it, its size limit, its partition count, deletions."""

from __future__ import annotations

import logging
import time
from concurrent.futures import Future
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from actionjournal.durable.errors import StoreError
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.stores.kafka.errors import advice, describe, retrying

log = logging.getLogger(__name__)
T = TypeVar("T")

# Kafka's broker default for max.message.bytes; used when the topic's config cannot be read.
_DEFAULT_TOPIC_LIMIT = 1048588
# No broker reachable: this many failed connections, over at least this long, end a request.
_FAILED_CONNECTIONS = 3
_UNREACHABLE_FOR_S = 1.0
_UNREACHABLE = (KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._RESOLVE)


class Admin:
    """An AdminClient whose requests fail within seconds, with one line naming the brokers,
    when none of them can be reached (refused, unknown host), instead of waiting out their
    timeout while librdkafka retries."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.bootstrap = settings["bootstrap.servers"]
        config: dict[str, Any] = {**settings, "error_cb": self._on_error}
        self.client = AdminClient(config)
        self._failures: list[tuple[float, KafkaError]] = []

    def _on_error(self, error: KafkaError) -> None:
        if error.code() in _UNREACHABLE:
            self._failures.append((time.monotonic(), error))

    def result(self, future: Future[T], doing: str) -> T:
        """``future.result()``, or a StoreError naming what it was ``doing`` as soon as no
        broker answers."""
        while True:
            try:
                return future.result(timeout=0.1)
            except TimeoutError:
                pass
            self.client.poll(0)  # serves error_cb
            failures = self._failures
            if (
                len(failures) >= _FAILED_CONNECTIONS
                and failures[-1][0] - failures[0][0] >= _UNREACHABLE_FOR_S
            ):
                connect = next(
                    (e for _, e in reversed(failures) if e.code() != KafkaError._ALL_BROKERS_DOWN),
                    failures[-1][1],
                )
                raise StoreError(
                    f"cannot reach the Kafka brokers at {self.bootstrap} ({doing}): "
                    f"{connect.str()}. "
                    "Check bootstrap_servers (--bootstrap) and that the brokers are up"
                )

    def close(self) -> None:
        # Only needed briefly; left alive, its threads would keep reconnecting.
        self.client.poll(0)
        del self.client


def prepare_topic(settings: dict[str, Any], config: KafkaStoreConfig) -> tuple[str, int]:
    """Create or validate the topic; return its topic id and max.message.bytes."""
    admin = Admin(settings)
    try:
        description = _describe_topic(admin, config)
        if description is None:
            if not config.create_topic:
                raise StoreError(
                    f"Kafka journal topic {config.topic!r} does not exist on "
                    f"{config.bootstrap_servers} and create_topic is false; create it with "
                    f"{config.partitions} partitions, or set create_topic"
                )
            _create_topic(admin, config)
            description = _wait_for_leaders(admin, config)
        found = len(description.partitions)
        if found != config.partitions:
            raise StoreError(
                f"Kafka journal topic {config.topic!r} has {found} partitions but the store is "
                f"configured with partitions={config.partitions}. A key's records must stay in "
                f"one partition: set partitions={found} to use this topic, or use a new topic "
                "(restore in upgrade mode). Never add partitions to a journal topic"
            )
        replicas = {len(p.replicas) for p in description.partitions}
        if replicas != {config.replication_factor}:
            log.warning(
                "Kafka journal topic %s has replication factor %s, configured %d",
                config.topic, sorted(replicas), config.replication_factor,
            )  # fmt: skip
        return str(description.topic_id), _topic_limit(admin, config)
    finally:
        admin.close()


def partition_count(settings: dict[str, Any], topic: str, timeout_s: float) -> int:
    """The partition count of an existing topic (for the tools, told a topic, not a config)."""
    bootstrap_servers = settings["bootstrap.servers"]
    admin = Admin(settings)
    try:
        futures = admin.client.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)
        return len(admin.result(futures[topic], f"describing topic {topic}").partitions)
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
            raise StoreError(
                f"Kafka topic {topic!r} does not exist on {bootstrap_servers}"
            ) from None
        raise StoreError(
            f"cannot describe Kafka topic {topic!r} on {bootstrap_servers}: "
            f"{describe(error)}; check the address and client settings"
        ) from exc
    finally:
        admin.close()


def delete_records(
    settings: dict[str, Any], config: KafkaStoreConfig, partition: int, position: int
) -> None:
    """``delete_records`` of ``partition`` below ``position`` (every namespace's records)."""
    admin = Admin(settings)
    try:
        futures = admin.client.delete_records(
            [TopicPartition(config.topic, partition, position)],
            request_timeout=config.admin_timeout_s,
            operation_timeout=config.admin_timeout_s,
        )
        for future in futures.values():
            admin.result(future, f"deleting records of topic {config.topic} partition {partition}")
    except KafkaException as exc:
        error = exc.args[0]
        raise StoreError(
            f"deleting topic {config.topic} partition {partition} below offset {position} "
            f"failed: {describe(error)}. {advice(error, config)}"
        ) from exc
    finally:
        admin.close()


def _describe_topic(admin: Admin, config: KafkaStoreConfig) -> Any:
    def ask() -> Any:
        futures = admin.client.describe_topics(
            TopicCollection([config.topic]), request_timeout=config.admin_timeout_s
        )
        try:
            return admin.result(futures[config.topic], f"describing topic {config.topic}")
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise

    return retrying(ask, f"describing topic {config.topic}", config)


def _create_topic(admin: Admin, config: KafkaStoreConfig) -> None:
    new = NewTopic(config.topic, config.partitions, config.replication_factor)
    futures = admin.client.create_topics(
        [new],
        request_timeout=config.admin_timeout_s,
        operation_timeout=config.admin_timeout_s,
    )
    try:
        admin.result(futures[config.topic], f"creating topic {config.topic}")
    except KafkaException as exc:
        error = exc.args[0]
        if error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
            return  # created concurrently by another subtask: validated next
        raise StoreError(
            f"cannot create Kafka journal topic {config.topic!r} ({config.partitions} "
            f"partitions, replication factor {config.replication_factor}) on "
            f"{config.bootstrap_servers}: {describe(error)}. {advice(error, config)}"
        ) from exc
    log.info(
        "created Kafka journal topic %s: %d partitions, replication factor %d",
        config.topic, config.partitions, config.replication_factor,
    )  # fmt: skip


def _wait_for_leaders(admin: Admin, config: KafkaStoreConfig) -> Any:
    """A new topic's partitions get leaders shortly after creation; reads need them."""
    deadline = time.monotonic() + config.admin_timeout_s
    while True:
        description = _describe_topic(admin, config)
        if description is not None and all(p.leader for p in description.partitions):
            return description
        if time.monotonic() > deadline:
            raise StoreError(
                f"Kafka journal topic {config.topic!r} was created but its partitions have "
                f"no leader after {config.admin_timeout_s:g} s; check the brokers' health"
            )
        time.sleep(0.1)


def _topic_limit(admin: Admin, config: KafkaStoreConfig) -> int:
    resource = ConfigResource(ConfigResource.Type.TOPIC, config.topic)
    try:
        futures = admin.client.describe_configs([resource], request_timeout=config.admin_timeout_s)
        entry = admin.result(futures[resource], f"reading topic {config.topic}'s settings")[
            "max.message.bytes"
        ]
        return int(entry.value)
    except (KafkaException, KeyError, ValueError, TypeError) as exc:
        log.warning(
            "cannot read max.message.bytes of topic %s (%s); assuming the default %d",
            config.topic, exc, _DEFAULT_TOPIC_LIMIT,
        )  # fmt: skip
        return _DEFAULT_TOPIC_LIMIT
