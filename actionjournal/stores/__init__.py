"""Action state stores: sqlite (embedded default), kafka, fluss, memory (unit tests)."""

from actionjournal.stores.base import ActionStateStore
from actionjournal.stores.memory import MemoryStore
from actionjournal.stores.sqlite import SqliteStore

__all__ = ["ActionStateStore", "MemoryStore", "SqliteStore"]
