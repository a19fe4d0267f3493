"""Journal stores: sqlite (embedded default), kafka, fluss, none (durability off), memory (tests).

The contracts they implement are :class:`JournalStore` (what a job needs) and
:class:`MaintenanceStore` (what the operator tools need on top); their settings are the
pydantic configs here (:data:`StoreConfig` picks one by ``backend``). The Kafka and Fluss
stores are imported on first use: they need their client libraries, their configs do not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal.durable.lazy import lazy_attributes
from actionjournal.stores.base import (
    ActionStateStore,
    JournalStore,
    MaintenanceStore,
    Progress,
    ScannedRecord,
)
from actionjournal.stores.config import NoStoreConfig, SqliteStoreConfig, StoreConfig, open_store
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.stores.memory import MemoryStore
from actionjournal.stores.none import NoStore
from actionjournal.stores.sqlite import SqliteStore

if TYPE_CHECKING:
    from actionjournal.stores.fluss.store import FlussActionStateStore, FlussStore
    from actionjournal.stores.kafka.store import KafkaActionStateStore, KafkaStore

__all__ = [
    "ActionStateStore",
    "FlussActionStateStore",
    "FlussStore",
    "FlussStoreConfig",
    "JournalStore",
    "KafkaActionStateStore",
    "KafkaStore",
    "KafkaStoreConfig",
    "MaintenanceStore",
    "MemoryStore",
    "NoStore",
    "NoStoreConfig",
    "Progress",
    "ScannedRecord",
    "SqliteStore",
    "SqliteStoreConfig",
    "StoreConfig",
    "open_store",
]

_LAZY = {
    "KafkaStore": "actionjournal.stores.kafka.store",
    "KafkaActionStateStore": "actionjournal.stores.kafka.store",
    "FlussStore": "actionjournal.stores.fluss.store",
    "FlussActionStateStore": "actionjournal.stores.fluss.store",
}

# The Kafka and Fluss stores need their client libraries.
__getattr__ = lazy_attributes(__name__, _LAZY)
