"""Journal stores: sqlite (embedded default), kafka, fluss, none (durability off), memory (tests).

The contracts they implement are :class:`JournalStore` (what a job needs) and
:class:`MaintenanceStore` (what the operator tools need on top); their settings are the
pydantic configs here (:data:`StoreConfig` picks one by ``backend``). Each name is
imported on first use (why: actionjournal._lazy), so the Kafka and Fluss stores need
their client libraries only when used; their configs never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.stores.base import (
        ActionStateStore,
        JournalStore,
        MaintenanceStore,
        Progress,
        ScannedRecord,
    )
    from actionjournal.stores.config import (
        NoStoreConfig,
        SqliteStoreConfig,
        StoreConfig,
        open_store,
    )
    from actionjournal.stores.fluss.config import FlussStoreConfig
    from actionjournal.stores.fluss.store import FlussActionStateStore, FlussStore
    from actionjournal.stores.kafka.config import KafkaStoreConfig
    from actionjournal.stores.kafka.store import KafkaActionStateStore, KafkaStore
    from actionjournal.stores.memory import MemoryStore
    from actionjournal.stores.none import NoStore
    from actionjournal.stores.sqlite import SqliteStore

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
    "actionjournal.stores.base": (
        "ActionStateStore",
        "JournalStore",
        "MaintenanceStore",
        "Progress",
        "ScannedRecord",
    ),
    "actionjournal.stores.config": (
        "NoStoreConfig",
        "SqliteStoreConfig",
        "StoreConfig",
        "open_store",
    ),
    "actionjournal.stores.fluss.config": ("FlussStoreConfig",),
    "actionjournal.stores.fluss.store": ("FlussActionStateStore", "FlussStore"),
    "actionjournal.stores.kafka.config": ("KafkaStoreConfig",),
    "actionjournal.stores.kafka.store": ("KafkaActionStateStore", "KafkaStore"),
    "actionjournal.stores.memory": ("MemoryStore",),
    "actionjournal.stores.none": ("NoStore",),
    "actionjournal.stores.sqlite": ("SqliteStore",),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
