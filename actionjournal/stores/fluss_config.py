"""The old import path of :mod:`actionjournal.stores.fluss.config`, kept for users."""

from actionjournal.stores.fluss.config import (
    RESERVED_CLIENT_SETTINGS,
    RESERVED_TABLE_PROPERTIES,
    FlussStoreConfig,
)

__all__ = ["RESERVED_CLIENT_SETTINGS", "RESERVED_TABLE_PROPERTIES", "FlussStoreConfig"]
