"""The old import path of :mod:`actionjournal.stores.kafka.config`, kept for users."""

from actionjournal.stores.kafka.config import RESERVED_CLIENT_SETTINGS, KafkaStoreConfig

__all__ = ["RESERVED_CLIENT_SETTINGS", "KafkaStoreConfig"]
