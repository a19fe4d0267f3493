"""The public surface of ``actionjournal.stores``: what users import, and what it costs."""

from __future__ import annotations

import subprocess
import sys

import pytest

import actionjournal.stores as stores
from actionjournal import StoreError


def test_stores_all_is_pinned_and_every_name_resolves():
    assert stores.__all__ == [
        "Cleanable",
        "FlussStore",
        "FlussStoreConfig",
        "Inspectable",
        "KafkaStore",
        "KafkaStoreConfig",
        "MemoryStore",
        "MemoryStoreConfig",
        "NoStore",
        "NoStoreConfig",
        "Progress",
        "ScanFilter",
        "ScannedRecord",
        "SqliteStore",
        "SqliteStoreConfig",
        "Store",
        "StoreConfig",
        "StoreObserver",
        "open_store",
    ]
    for name in stores.__all__:
        assert getattr(stores, name) is not None


def test_every_backend_is_built_the_same_way_and_declares_what_it_can_do(tmp_path):
    """``Backend(config, codec, observer=...)`` for each; ``open_store`` opens any; the
    contract level says what the tools may do with it (Fluss is not Cleanable)."""
    from actionjournal.durable.codec import RecordCodec

    seen: list[tuple[str, int]] = []

    class Observer:
        def appended(self, backend: str, nbytes: int, seconds: float) -> None:
            seen.append((backend, nbytes))

        def foreign(self, n: int) -> None:
            pass

    codec = RecordCodec(b"key")
    for config in (
        stores.SqliteStoreConfig(path=str(tmp_path / "j.db")),
        stores.MemoryStoreConfig(name="m"),
        stores.NoStoreConfig(),
    ):
        store = stores.open_store(config, codec, observer=Observer())
        assert store.codec is codec and isinstance(store, stores.Store)
        assert store.durable == (config.backend != "none")
        assert isinstance(store, stores.Cleanable) == (config.backend != "none")
        store.close()
    assert issubclass(stores.FlussStore, stores.Inspectable)
    assert not issubclass(stores.FlussStore, stores.Cleanable)
    assert issubclass(stores.KafkaStore, stores.Cleanable)
    sqlite = stores.SqliteStore(stores.SqliteStoreConfig(path=str(tmp_path / "k.db")))
    assert sqlite.path == stores.SqliteStore(tmp_path / "k.db").path  # a path for short
    with pytest.raises(StoreError, match="does not exist"):
        stores.open_store(
            stores.SqliteStoreConfig(path=str(tmp_path / "missing.db")), existing=True
        )
    assert not (tmp_path / "missing.db").exists()


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
