"""The explorer's one door to the journal: store options, opening, and the read side.

Everything the explorer needs of the store contract and of the tools' store options goes
through this module, so a rename of either is an edit here only. Reads go through the same
scan ``journal inspect`` and ``cleanup`` use (:func:`actionjournal.tools.reading.scan`):
a record that cannot be read is reported and passed, never raised.
"""

from __future__ import annotations

import argparse
import contextlib
import shlex
from collections.abc import Iterator
from dataclasses import dataclass

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import StoreIdentity
from actionjournal.durable.store import Inspectable, ScannedRecord
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.tools import reading
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.store_options import (
    ToolStoreConfig,
    add_store_args,
    cleanable,
    describe,
    open_journal,
    opened,
    record_codec,
    store_config,
)

Store = Inspectable
StoreConfig = ToolStoreConfig
Scanned = ScannedRecord

__all__ = [
    "Journal",
    "Scanned",
    "Store",
    "StoreConfig",
    "Unreadable",
    "add_store_args",
    "cleanable",
    "describe",
    "journal_from_args",
]


@dataclass(frozen=True)
class Journal:
    """Which journal the explorer reads and how to open it (again, from any thread)."""

    config: StoreConfig
    codec: RecordCodec
    namespace: str
    operator_uid: str | None

    def describe(self) -> str:
        return describe(self.config)

    def open(self) -> Store:
        """A new connection to the journal (never creates one); the caller closes it."""
        return open_journal(self.config, self.codec)

    @contextlib.contextmanager
    def opened(self) -> Iterator[Store]:
        """:meth:`open` for a ``with`` block; a damaged SQLite file is a clear ToolError."""
        with opened(self.config, self.codec) as store:
            yield store


def journal_from_args(args: argparse.Namespace) -> Journal:
    config = store_config(args)
    assert config is not None  # --store is required
    return Journal(config, record_codec(args), args.namespace, args.operator_uid)


def is_kafka(config: StoreConfig) -> bool:
    return isinstance(config, KafkaStoreConfig)


def identity_of(store: Store) -> StoreIdentity:
    return store.identity


def partitions(store: Store) -> list[int]:
    return store.partitions()


def position_range(store: Store, partition: int) -> tuple[int, int]:
    return store.position_range(partition)


def scan(
    store: Store,
    partition: int,
    journal: Journal,
    skipped: list[Unreadable],
    start: int | None = None,
    end: int | None = None,
) -> Iterator[Scanned]:
    """Records of ``[start, end)`` of the partition: the namespace's decoded, the others
    undecoded (``record is None``); unreadable ones appended to ``skipped``."""
    return reading.scan(
        store, partition, journal.namespace, journal.operator_uid, skipped, start=start, end=end
    )


def at_positions(
    store: Store, partition: int, positions: list[int], journal: Journal, gap: int = 512
) -> tuple[list[Scanned], list[Unreadable]]:
    """The records at ``positions`` (sorted), read as a few short scans: positions closer
    than ``gap`` share one scan, so a run's records cost about their own number to read."""
    wanted = set(positions)
    found: list[Scanned] = []
    skipped: list[Unreadable] = []
    i = 0
    while i < len(positions):
        j = i
        while j + 1 < len(positions) and positions[j + 1] - positions[j] <= gap:
            j += 1
        start, end = positions[i], positions[j] + 1
        for item in scan(store, partition, journal, skipped, start, end):
            if item.position in wanted:
                found.append(item)
        i = j + 1
    skipped = [bad for bad in skipped if bad.position in wanted]
    return found, skipped


def store_args(config: StoreConfig) -> list[str]:
    """The store options that name ``config`` on another command's line (no secrets)."""
    doc = config.model_dump()
    if "path" in doc:
        return ["--store", "sqlite", "--path", str(doc["path"])]
    if "topic" in doc:
        return [
            "--store",
            "kafka",
            "--bootstrap",
            doc["bootstrap_servers"],
            "--topic",
            doc["topic"],
        ]
    return [
        "--store",
        "fluss",
        "--bootstrap",
        doc["bootstrap_servers"],
        "--table",
        doc["table"],
        "--database",
        doc["database"],
    ]


def quote(text: str) -> str:
    return shlex.quote(text)


def describe_unreadable(bad: Unreadable) -> str:
    return reading.describe(bad)
