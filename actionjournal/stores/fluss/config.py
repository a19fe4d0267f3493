"""Settings of the Fluss action state store, importable without pyfluss.

Kept apart from :mod:`actionjournal.stores.fluss.store` so a job's configuration can be validated
(and fail with the setting's name) where the Fluss client is not installed, e.g. where the
job is submitted from.
"""

from __future__ import annotations

import re
from typing import Literal, Self

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from actionjournal.stores.replication import insync_replicas

# Client properties the store owns: changing them would break its guarantees or its fields.
RESERVED_CLIENT_SETTINGS = {
    "bootstrap.servers": "set bootstrap_servers instead",
    "writer.acks": "the store needs acks=all (an append returns only once all replicas have it)",
    "writer.enable-idempotence": "the store needs the idempotent writer (no duplicates on retry)",
}
# Table properties the store owns.
RESERVED_TABLE_PROPERTIES = {
    "table.replication.factor": "set replication_factor instead",
    "table.datalake.enabled": "the store computes buckets with Fluss's own bucketing function",
    "table.datalake.format": "the store computes buckets with Fluss's own bucketing function",
}
_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,200}$")


class FlussStoreConfig(BaseModel):
    """Where and how the Fluss store journals. See :mod:`actionjournal.stores.fluss`."""

    # Errors must not echo client_config values (SASL passwords).
    model_config = ConfigDict(extra="forbid", frozen=True, hide_input_in_errors=True)

    backend: Literal["fluss"] = "fluss"
    """Selects this store in a job's configuration (``stores.config.StoreConfig``)."""
    bootstrap_servers: str = Field(min_length=1)
    """``host:port[,host:port...]`` of the CoordinatorServer(s)."""
    database: str = "actionjournal"
    """Database of the journal table; created when missing if ``create_table``."""
    table: str = "action_state"
    """Journal log table, shared by namespaces."""
    buckets: int = Field(64, gt=0)
    """Buckets of the table when the store creates it; an existing table must have as many."""
    replication_factor: int = Field(1, gt=0)
    """Replicas per bucket when the store creates the table; an existing table with fewer is
    refused (see ``weak_table``). Use 3 in production (see docs)."""
    min_insync_replicas: int | None = Field(None, gt=0)
    """Copies an append needs before it is acknowledged. Fluss 0.9.1 sets this on the tablet
    servers only (``log.replica.min-in-sync-replicas-number``; no table property, no client
    API reads it): the store checks at open what it can see, that the table has at least
    this many replicas and that as many tablet servers are registered. Default: 2, or 1 when
    ``replication_factor`` is 1; at most ``replication_factor``."""
    weak_table: Literal["refuse", "warn"] = "refuse"
    """An existing table with fewer replicas than configured, or a cluster with fewer tablet
    servers than ``min_insync_replicas``: ``refuse`` fails at open naming both numbers,
    ``warn`` logs that and goes on."""
    create_table: bool = True
    """Create the database and table when missing; when false a missing one is an error."""
    table_properties: dict[str, str] = Field(default_factory=dict)
    """Extra properties of a created table, e.g. ``{"table.log.ttl": "7d"}`` (retention)."""
    client_config: dict[str, str] = Field(default_factory=dict, repr=False)
    """pyfluss client properties (``security.sasl.*`` ...). Values are secrets: never logged."""
    ack_timeout_s: float = Field(30.0, gt=0)
    """An append not acknowledged within this time (for a run's last record: with its offset
    read) fails with JournalWriteError."""
    request_timeout_s: float = Field(30.0, gt=0)
    """Budget of connecting, admin requests and each read's progress, in seconds."""
    recovery_cache_bytes: int = Field(256 * 1024 * 1024, ge=0)
    """Bytes of records read during recovery kept for keys not yet recovered; 0 disables."""

    @model_validator(mode="after")
    def _insync_within_replicas(self) -> Self:
        # Frozen: the default depends on another field, so it is filled in here.
        wanted = insync_replicas(self.replication_factor, self.min_insync_replicas)
        object.__setattr__(self, "min_insync_replicas", wanted)
        return self

    @field_validator("database", "table")
    @classmethod
    def _legal_name(cls, name: str) -> str:
        if not _NAME.match(name):
            raise ValueError(
                "a Fluss database or table name is 1-200 ASCII letters, digits, '_' and '-'"
            )
        return name

    @field_validator("client_config")
    @classmethod
    def _client_not_reserved(cls, settings: dict[str, str]) -> dict[str, str]:
        for name in settings:
            if name in RESERVED_CLIENT_SETTINGS:
                raise ValueError(
                    f"client_config may not set {name!r}: {RESERVED_CLIENT_SETTINGS[name]}"
                )
        return settings

    @field_validator("table_properties")
    @classmethod
    def _table_not_reserved(cls, properties: dict[str, str]) -> dict[str, str]:
        for name in properties:
            if name in RESERVED_TABLE_PROPERTIES:
                raise ValueError(
                    f"table_properties may not set {name!r}: {RESERVED_TABLE_PROPERTIES[name]}"
                )
        return properties
