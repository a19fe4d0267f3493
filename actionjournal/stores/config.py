"""Which store a job journals to, validated before anything starts (the Kafka and Fluss
configs live with their stores, in stores/kafka and stores/fluss)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig


class SqliteStoreConfig(BaseModel):
    """The embedded default: one SQLite file on the machine that runs the job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["sqlite"] = "sqlite"
    path: str = "actionjournal.db"
    """The journal file (created with its folder when missing, unless opened as existing)."""


class NoStoreConfig(BaseModel):
    """No journal at all: durability off, every action re-runs after a failure (stores/none.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["none"] = "none"


class MemoryStoreConfig(BaseModel):
    """A journal in this process's memory, for unit tests: never for a job (not durable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["memory"] = "memory"
    name: str = "memory"
    """Its name in the store identity (two memory journals of one name are still two)."""


StoreConfig = Annotated[
    SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig | NoStoreConfig,
    Field(discriminator="backend"),
]
"""The store of a job, picked by ``backend``."""

AnyStoreConfig = (
    SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig | NoStoreConfig | MemoryStoreConfig
)
