"""Which store a job journals to, validated before anything starts."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from actionjournal.durable.codec import RecordCodec
from actionjournal.stores.base import JournalStore
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig


class SqliteStoreConfig(BaseModel):
    """The embedded default: one SQLite file on the machine that runs the job."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["sqlite"] = "sqlite"
    path: str = "actionjournal.db"


class NoStoreConfig(BaseModel):
    """No journal at all: durability off, every action re-runs after a failure (stores/none.py)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: Literal["none"] = "none"


StoreConfig = Annotated[
    SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig | NoStoreConfig,
    Field(discriminator="backend"),
]


def open_store(
    config: SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig | NoStoreConfig,
    codec: RecordCodec,
) -> JournalStore:
    """Open the configured store; client libraries are imported only for the chosen backend."""
    if isinstance(config, NoStoreConfig):
        from actionjournal.stores.none import NoStore

        return NoStore(codec)
    if isinstance(config, SqliteStoreConfig):
        from actionjournal.stores.sqlite import SqliteStore

        return SqliteStore(config.path, codec)
    if isinstance(config, FlussStoreConfig):
        from actionjournal.stores.fluss.store import FlussStore

        return FlussStore(config, codec)
    from actionjournal.stores.kafka.store import KafkaStore

    return KafkaStore(config, codec)
