"""Settings of the Kafka action state store, importable without confluent-kafka.

Kept apart from :mod:`actionjournal.stores.kafka.store` so a job's configuration can be
validated (and fail with the setting's name) on a machine that does not have the
Kafka client installed, e.g. where the job is submitted from.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actionjournal.stores.replication import insync_replicas

# Settings the store owns: changing them would break its guarantees or its config fields.
RESERVED_CLIENT_SETTINGS = {
    "bootstrap.servers": "set bootstrap_servers instead",
    "metadata.broker.list": "set bootstrap_servers instead",
    "enable.idempotence": "the store needs the idempotent producer (no duplicates on retry)",
    "acks": "the store needs acks=all (an append returns only once all replicas have it)",
    "request.required.acks": "the store needs acks=all",
    "message.timeout.ms": "set delivery_timeout_s instead",
    "delivery.timeout.ms": "set delivery_timeout_s instead",
    "enable.auto.commit": "the store reads by offset and never commits",
    "group.id": "the store reads by offset without a consumer group",
}
_TOPIC_NAME = re.compile(r"^[a-zA-Z0-9._-]{1,249}$")


class KafkaStoreConfig(BaseModel):
    """Where and how the Kafka store journals. See :mod:`actionjournal.stores.kafka`."""

    # Errors must not echo client_config values (SASL passwords, key passphrases).
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    backend: Literal["kafka"] = "kafka"
    bootstrap_servers: str = Field(min_length=1)
    """``host:port[,host:port...]`` of the cluster (Flink Agents: ``kafkaBootstrapServers``)."""
    topic: str = "actionjournal"
    """Journal topic, shared by namespaces (Flink Agents: ``kafkaActionStateTopic``)."""
    partitions: int = Field(64, gt=0)
    """Partitions of the topic when the store creates it; an existing topic must have as many."""
    replication_factor: int = Field(1, gt=0)
    """Replicas per partition when the store creates the topic; an existing topic with fewer
    is refused (see ``weak_topic``). Use 3 in production (docs/kafka.md)."""
    min_insync_replicas: int | None = Field(None, gt=0)
    """The topic's ``min.insync.replicas``: copies an append needs before it is acknowledged
    (acks=all); with fewer in sync, appends fail instead of resting on one copy. Set when the
    store creates the topic; an existing topic with a lower value is refused (see
    ``weak_topic``). Default: 2, or 1 when ``replication_factor`` is 1; at most
    ``replication_factor``."""
    weak_topic: Literal["refuse", "warn"] = "refuse"
    """An existing topic with fewer replicas or a lower ``min.insync.replicas`` than
    configured: ``refuse`` fails at open naming both numbers, ``warn`` logs that and goes on."""
    create_topic: bool = True
    """Create the topic when missing; when false a missing topic is an error at start."""
    client_config: dict[str, str] = Field(default_factory=dict, repr=False)
    """librdkafka settings for every client (SASL/SSL...). Values are secrets: never logged."""
    delivery_timeout_s: float = Field(30.0, gt=0)
    """An append not acknowledged within this time fails with JournalWriteError."""
    admin_timeout_s: float = Field(30.0, gt=0)
    """Budget of admin requests (describe, create) and of each read's progress, in seconds;
    also how long opening the store and recovery reads wait through a leader change (a
    broker lost, a partition without a leader for seconds) before they fail."""
    max_record_bytes: int | None = Field(None, gt=0)
    """Refuse larger encoded records before sending; default: the topic's max.message.bytes."""
    recovery_cache_bytes: int = Field(256 * 1024 * 1024, ge=0)
    """Bytes of records read during recovery kept for keys not yet recovered; 0 disables."""

    @field_validator("topic")
    @classmethod
    def _legal_topic(cls, topic: str) -> str:
        if topic in (".", "..") or not _TOPIC_NAME.match(topic):
            raise ValueError(
                "a Kafka topic name is 1-249 characters of ASCII letters, digits, '.', '_' and '-'"
            )
        return topic

    @model_validator(mode="after")
    def _insync_within_replicas(self) -> Self:
        # Frozen: the default depends on another field, so it is filled in here.
        wanted = insync_replicas(self.replication_factor, self.min_insync_replicas)
        object.__setattr__(self, "min_insync_replicas", wanted)
        return self

    @property
    def insync_replicas(self) -> int:
        """``min_insync_replicas`` as filled in at validation (never None)."""
        return insync_replicas(self.replication_factor, self.min_insync_replicas)

    @field_validator("client_config")
    @classmethod
    def _not_reserved(cls, settings: dict[str, str]) -> dict[str, str]:
        for name in settings:
            if name in RESERVED_CLIENT_SETTINGS:
                raise ValueError(
                    f"client_config may not set {name!r}: {RESERVED_CLIENT_SETTINGS[name]}"
                )
        return settings
