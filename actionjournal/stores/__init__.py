"""Journal stores: sqlite (embedded default), kafka, fluss, none (durability off), memory (tests).

The contracts they implement are :class:`JournalStore` (what a job needs) and
:class:`MaintenanceStore` (what the operator tools need on top); their settings are the
pydantic configs here (:data:`StoreConfig` picks one by ``backend``). Each name is
imported on first use (why: actionjournal._lazy), so the Kafka and Fluss stores need
their client libraries only when used; their configs never do.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.stores.base import (
        ActionStateStore as ActionStateStore,
    )
    from actionjournal.stores.base import (
        JournalStore as JournalStore,
    )
    from actionjournal.stores.base import (
        MaintenanceStore as MaintenanceStore,
    )
    from actionjournal.stores.base import (
        Progress as Progress,
    )
    from actionjournal.stores.base import (
        ScannedRecord as ScannedRecord,
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
    from actionjournal.stores.config import (
        open_store as open_store,
    )
    from actionjournal.stores.fluss.config import (
        FlussStoreConfig as FlussStoreConfig,
    )
    from actionjournal.stores.fluss.store import (
        FlussActionStateStore as FlussActionStateStore,
    )
    from actionjournal.stores.fluss.store import (
        FlussStore as FlussStore,
    )
    from actionjournal.stores.kafka.config import (
        KafkaStoreConfig as KafkaStoreConfig,
    )
    from actionjournal.stores.kafka.store import (
        KafkaActionStateStore as KafkaActionStateStore,
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
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
