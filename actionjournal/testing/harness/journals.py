"""What a scenario does to journals, named by the job's own store configs.

A *journal* is what a recovery marker points into: a SQLite file, a Kafka topic, a Fluss
table. A scenario derives new journals from its store config (another file, topic or
table next to it: ``journal-2.db``, ``<topic>-2``, ``<table>_2``), deletes and recreates
them; nothing here holds a connection, so configs travel to crash steps' child processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from actionjournal.durable.codec import RecordCodec
from actionjournal.stores.config import NoStoreConfig, SqliteStoreConfig
from actionjournal.stores.factory import open_store
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.testing.harness.errors import HarnessError

Journal = SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig
"""A store config that names a journal (``NoStoreConfig`` names none)."""


def name_of(journal: Journal) -> str:
    """The journal's name as errors and markers say it: file path, topic, ``db.table``."""
    if isinstance(journal, SqliteStoreConfig):
        return str(Path(journal.path).resolve())
    if isinstance(journal, KafkaStoreConfig):
        return journal.topic
    return f"{journal.database}.{journal.table}"


def derive(journal: Journal, n: int) -> Journal:
    """The ``n``-th journal made from ``journal``'s settings (``n`` = 1 is ``journal`` itself)."""
    if n == 1:
        return journal
    if isinstance(journal, SqliteStoreConfig):
        path = Path(journal.path)
        return journal.model_copy(update={"path": str(path.with_stem(f"{path.stem}-{n}"))})
    if isinstance(journal, KafkaStoreConfig):
        return journal.model_copy(update={"topic": f"{journal.topic}-{n}"})
    return journal.model_copy(update={"table": f"{journal.table}_{n}"})


def open_journal(journal: Journal | None, codec: RecordCodec) -> Any:
    """A store on ``journal`` (created when missing); ``None``: no store (durability off)."""
    return open_store(journal if journal is not None else NoStoreConfig(), codec)


def delete(journals: Sequence[Journal], timeout: float = 60.0) -> None:
    """Delete the journals and everything in them (stores on them must be closed)."""
    sqlite = [j for j in journals if isinstance(j, SqliteStoreConfig)]
    kafka = [j for j in journals if isinstance(j, KafkaStoreConfig)]
    fluss = [j for j in journals if isinstance(j, FlussStoreConfig)]
    for journal in sqlite:
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{journal.path}{suffix}")
    if kafka:
        _delete_topics(kafka, timeout)
    if fluss:
        _drop_tables(fluss)


def recreate(journal: Journal) -> None:
    """Delete ``journal`` and create an empty one with the same name (a new identity)."""
    delete([journal])
    open_journal(journal, RecordCodec()).close()


def _delete_topics(journals: Sequence[KafkaStoreConfig], timeout: float) -> None:
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient

    first = journals[0]
    admin = AdminClient({"bootstrap.servers": first.bootstrap_servers, **first.client_config})
    names = [j.topic for j in journals]
    for future in admin.delete_topics(names, operation_timeout=30).values():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise
    deadline = time.monotonic() + timeout
    while set(names) & set(admin.list_topics(timeout=10).topics):  # deletion is asynchronous
        if time.monotonic() > deadline:
            raise HarnessError(f"Kafka topics {names} still exist {timeout:.0f} s after delete")
        time.sleep(0.2)


def _drop_tables(journals: Sequence[FlussStoreConfig]) -> None:
    import fluss

    async def drop() -> None:
        first = journals[0]
        settings = {**first.client_config, "bootstrap.servers": first.bootstrap_servers}
        conn = await fluss.FlussConnection.create(fluss.Config(settings))
        try:
            admin = conn.get_admin()
            for journal in journals:
                path = fluss.TablePath(journal.database, journal.table)
                await admin.drop_table(path, ignore_if_not_exists=True)
        finally:
            await conn.close()

    asyncio.run(drop())
