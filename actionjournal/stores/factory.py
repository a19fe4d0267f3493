"""The one factory that opens any store from its config: for jobs, the tools, the test
harness and the journal explorer."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import overload

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.store import Cleanable, Inspectable, Store, StoreObserver
from actionjournal.stores.config import (
    AnyStoreConfig,
    MemoryStoreConfig,
    SqliteStoreConfig,
)
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig

_EXTRAS = {"kafka": "confluent-kafka", "fluss": "pyfluss"}


@overload
def open_store(
    config: SqliteStoreConfig | KafkaStoreConfig | MemoryStoreConfig,
    codec: RecordCodec | None = None,
    *,
    observer: StoreObserver | None = None,
    existing: bool = False,
    read_only: bool = False,
) -> Cleanable: ...


@overload
def open_store(
    config: FlussStoreConfig | SqliteStoreConfig | KafkaStoreConfig | MemoryStoreConfig,
    codec: RecordCodec | None = None,
    *,
    observer: StoreObserver | None = None,
    existing: bool = False,
    read_only: bool = False,
) -> Inspectable: ...


@overload
def open_store(
    config: AnyStoreConfig,
    codec: RecordCodec | None = None,
    *,
    observer: StoreObserver | None = None,
    existing: bool = False,
    read_only: bool = False,
) -> Store: ...


def open_store(
    config: AnyStoreConfig,
    codec: RecordCodec | None = None,
    *,
    observer: StoreObserver | None = None,
    existing: bool = False,
    read_only: bool = False,
) -> Store:
    """Open the store ``config`` names, with ``codec`` (default: unsigned records) and
    ``observer`` (who counts its appends; a runner attaches its metrics otherwise).

    ``existing=True`` (the tools): the journal must exist already and is taken as it is (its
    partition or bucket count as found), never created; ``read_only=True`` also promises
    never to write to it (SQLite opens the file read-only). Client libraries are imported
    only for the backend chosen.
    """
    with _client_library(config.backend):
        if isinstance(config, SqliteStoreConfig):
            from actionjournal.stores.sqlite import SqliteStore

            if existing:
                return SqliteStore.open_existing(
                    config, codec, observer=observer, read_only=read_only
                )
            return SqliteStore(config, codec, observer=observer)
        if isinstance(config, KafkaStoreConfig):
            from actionjournal.stores.kafka.store import KafkaStore

            if existing:
                return KafkaStore.open_existing(config, codec, observer=observer)
            return KafkaStore(config, codec, observer=observer)
        if isinstance(config, FlussStoreConfig):
            from actionjournal.stores.fluss.store import FlussStore

            if existing:
                return FlussStore.open_existing(config, codec, observer=observer)
            return FlussStore(config, codec, observer=observer)
    if isinstance(config, MemoryStoreConfig):
        from actionjournal.stores.memory import MemoryStore

        return MemoryStore(config, codec, observer=observer)
    from actionjournal.stores.none import NoStore

    return NoStore(config, codec, observer=observer)


@contextmanager
def _client_library(backend: str) -> Iterator[None]:
    """A backend's client library that is not installed: say which extra brings it."""
    try:
        yield
    except ImportError as exc:
        if backend not in _EXTRAS:
            raise
        raise ConfigurationError(
            f"the {backend} store needs {_EXTRAS[backend]}, which is not installed ({exc}): "
            f"pip install 'actionjournal[{backend}]'"
        ) from None
