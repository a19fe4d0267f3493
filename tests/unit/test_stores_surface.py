"""The public surface of ``actionjournal.stores``: what users import, and what it costs."""

from __future__ import annotations

import subprocess
import sys

import actionjournal.stores as stores


def test_stores_all_is_pinned_and_every_name_resolves():
    assert stores.__all__ == [
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
    for name in stores.__all__:
        assert getattr(stores, name) is not None


def test_old_names_and_paths_are_the_new_ones():
    from actionjournal.stores.fluss.config import FlussStoreConfig
    from actionjournal.stores.kafka import KafkaActionStateStore
    from actionjournal.stores.kafka.config import KafkaStoreConfig

    assert KafkaActionStateStore is stores.KafkaStore
    assert stores.FlussActionStateStore is stores.FlussStore
    assert KafkaStoreConfig is stores.KafkaStoreConfig
    assert FlussStoreConfig is stores.FlussStoreConfig
    assert stores.ActionStateStore is stores.MaintenanceStore


def test_stores_and_their_configs_import_without_the_client_libraries():
    """A job's configuration is validated where confluent-kafka or pyfluss may be missing."""
    code = (
        "import sys\n"
        "from actionjournal.stores import KafkaStoreConfig, FlussStoreConfig, StoreConfig\n"
        "from actionjournal.stores.kafka.config import KafkaStoreConfig\n"
        "from actionjournal.stores.fluss import fluss_bucket\n"
        "print(sorted(m for m in ('confluent_kafka', 'fluss') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
