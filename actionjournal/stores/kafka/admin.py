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
        self._config: dict[str, Any] = {**settings, "error_cb": self._on_error}
        self.client = AdminClient(self._config)
        self._failures: list[tuple[float, KafkaError]] = []

    def renew(self, timeout: float = 0.0) -> None:
        """A new client for the next attempt: an AdminClient keeps sending requests that
        need the controller to the one it first learnt of, dead or not (30 s timeouts after
        a broker SIGKILL); a new one asks the live brokers."""
        self.close()
        self.client = AdminClient(self._config)
        self._failures = []

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
                # One broker of several down (a failover) is no reason to give up.
                any(e.code() == KafkaError._ALL_BROKERS_DOWN for _, e in failures)
                and len(failures) >= _FAILED_CONNECTIONS
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
        topic_settings = _topic_settings(admin, config)
        _check_replication(config, description, topic_settings)
        return str(description.topic_id), _topic_limit(config, topic_settings)
    finally:
        admin.close()


def topic_shape(settings: dict[str, Any], topic: str, timeout_s: float) -> tuple[int, int]:
    """Partitions and replication factor (the least of any partition) of an existing topic:
    for the tools, told a topic, not a config."""
    bootstrap_servers = settings["bootstrap.servers"]
    admin = Admin(settings)
    try:
        futures = admin.client.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)
        partitions = admin.result(futures[topic], f"describing topic {topic}").partitions
        return len(partitions), min(len(p.replicas) for p in partitions)
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
    def ask(timeout: float) -> Any:
        futures = admin.client.describe_topics(
            TopicCollection([config.topic]), request_timeout=timeout
        )
        try:
            return admin.result(futures[config.topic], f"describing topic {config.topic}")
        except KafkaException as exc:
            if exc.args[0].code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
                return None
            raise

    return retrying(ask, f"describing topic {config.topic}", config, admin.renew)


def _check_replication(
    config: KafkaStoreConfig, description: Any, topic_settings: dict[str, str]
) -> None:
    """An existing topic with fewer copies than configured, or that acknowledges appends
    with fewer in sync, is refused (``weak_topic='refuse'``) or logged (``'warn'``)."""
    replicas = min(len(p.replicas) for p in description.partitions)
    topic, wanted = config.topic, config.insync_replicas
    found: list[str] = []
    if replicas < config.replication_factor:
        found.append(
            f"replication factor {replicas}, below the configured replication_factor="
            f"{config.replication_factor} (raise it with kafka-reassign-partitions, or use a "
            f"new topic, or set replication_factor={replicas})"
        )
    try:
        in_sync = int(topic_settings["min.insync.replicas"])
    except (KeyError, ValueError):
        in_sync = None  # not readable (ACLs): said once below, not refused
        log.warning(
            "cannot read min.insync.replicas of Kafka journal topic %s; the store needs %d",
            topic, wanted,
        )  # fmt: skip
    if in_sync is not None and in_sync < wanted:
        found.append(
            f"min.insync.replicas={in_sync}, below the configured min_insync_replicas="
            f"{wanted}: an append would be acknowledged with {in_sync} "
            f"cop{'y' if in_sync == 1 else 'ies'} (raise it: kafka-configs.sh --alter "
            f"--entity-type topics --entity-name {topic} --add-config "
            f"min.insync.replicas={wanted}, or set min_insync_replicas={in_sync})"
        )
    if not found:
        return
    message = f"Kafka journal topic {topic!r} has {'; and '.join(found)}"
    if config.weak_topic == "warn":
        log.warning("%s; going on because weak_topic='warn'", message)
        return
    raise StoreError(
        f"{message}. A broker's loss could lose acknowledged journal records. Fix the topic, "
        "or set weak_topic='warn' to use it as it is"
    )


def _create_topic(admin: Admin, config: KafkaStoreConfig) -> None:
    new = NewTopic(
        config.topic,
        config.partitions,
        config.replication_factor,
        config={"min.insync.replicas": str(config.insync_replicas)},
    )
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
        "created Kafka journal topic %s: %d partitions, replication factor %d, "
        "min.insync.replicas %d",
        config.topic, config.partitions, config.replication_factor, config.insync_replicas,
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


def _topic_settings(admin: Admin, config: KafkaStoreConfig) -> dict[str, str]:
    """The topic's configuration (its own values and the brokers' defaults), or {} when it
    cannot be read (callers say what they assume instead)."""
    resource = ConfigResource(ConfigResource.Type.TOPIC, config.topic)

    def ask(timeout: float) -> dict[str, str]:
        futures = admin.client.describe_configs([resource], request_timeout=timeout)
        entries = admin.result(futures[resource], f"reading topic {config.topic}'s settings")
        return {name: entry.value for name, entry in entries.items()}

    try:
        return retrying(ask, f"reading topic {config.topic}'s settings", config, admin.renew)
    except StoreError as exc:
        log.warning("cannot read the settings of topic %s: %s", config.topic, exc)
        return {}


def _topic_limit(config: KafkaStoreConfig, topic_settings: dict[str, str]) -> int:
    try:
        return int(topic_settings["max.message.bytes"])
    except (KeyError, ValueError) as exc:
        log.warning(
            "cannot read max.message.bytes of topic %s (%s); assuming the default %d",
            config.topic, exc, _DEFAULT_TOPIC_LIMIT,
        )  # fmt: skip
        return _DEFAULT_TOPIC_LIMIT
