"""Journal stores: sqlite (embedded default), kafka, fluss, none (durability off), memory (tests).

The contract they implement is :class:`Store` (what a job needs), :class:`Inspectable` (what
the tools read) and :class:`Cleanable` (what cleanup needs), defined in
:mod:`actionjournal.durable.store`; their settings are the pydantic configs here
(:data:`StoreConfig` picks one by ``backend``) and :func:`open_store` opens any of them.
Each name is imported on first use (why: actionjournal._lazy), so the Kafka and Fluss
stores need their client libraries only when used; their configs never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.durable.store import (
        Cleanable as Cleanable,
    )
    from actionjournal.durable.store import (
        Inspectable as Inspectable,
    )
    from actionjournal.durable.store import (
        Progress as Progress,
    )
    from actionjournal.durable.store import (
        ScanFilter as ScanFilter,
    )
    from actionjournal.durable.store import (
        ScannedRecord as ScannedRecord,
    )
    from actionjournal.durable.store import (
        Store as Store,
    )
    from actionjournal.durable.store import (
        StoreObserver as StoreObserver,
    )
    from actionjournal.stores.config import (
        MemoryStoreConfig as MemoryStoreConfig,
    )
    from actionjournal.stores.config import (
        NoStoreConfig as NoStoreConfig,
    )
    from actionjournal.stores.config import (
        SqliteStoreConfig as SqliteStoreConfig,
    )
    from actionjournal.stores.config import (
        StoreConfig as StoreConfig,
    )
    from actionjournal.stores.factory import (
        open_store as open_store,
    )
    from actionjournal.stores.fluss.config import (
        FlussStoreConfig as FlussStoreConfig,
    )
    from actionjournal.stores.fluss.store import (
        FlussStore as FlussStore,
    )
    from actionjournal.stores.kafka.config import (
        KafkaStoreConfig as KafkaStoreConfig,
    )
    from actionjournal.stores.kafka.store import (
        KafkaStore as KafkaStore,
    )
    from actionjournal.stores.memory import (
        MemoryStore as MemoryStore,
    )
    from actionjournal.stores.none import (
        NoStore as NoStore,
    )
    from actionjournal.stores.sqlite import (
        SqliteStore as SqliteStore,
    )

_LAZY = {
    "actionjournal.durable.store": (
        "Cleanable",
        "Inspectable",
        "Progress",
        "ScanFilter",
        "ScannedRecord",
        "Store",
        "StoreObserver",
    ),
    "actionjournal.stores.config": (
        "MemoryStoreConfig",
        "NoStoreConfig",
        "SqliteStoreConfig",
        "StoreConfig",
    ),
    "actionjournal.stores.factory": ("open_store",),
    "actionjournal.stores.fluss.config": ("FlussStoreConfig",),
    "actionjournal.stores.fluss.store": ("FlussStore",),
    "actionjournal.stores.kafka.config": ("KafkaStoreConfig",),
    "actionjournal.stores.kafka.store": ("KafkaStore",),
    "actionjournal.stores.memory": ("MemoryStore",),
    "actionjournal.stores.none": ("NoStore",),
    "actionjournal.stores.sqlite": ("SqliteStore",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
