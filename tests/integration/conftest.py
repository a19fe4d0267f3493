"""Kafka and Fluss fixtures: admin clients, unique topics/tables, stores, private clusters.

The broker and the cluster are the pytest plugin's (actionjournal/testing/plugin.py):
``aj_kafka_bootstrap`` and ``aj_fluss_bootstrap`` (``KAFKA_BOOTSTRAP``/``FLUSS_BOOTSTRAP``, or
a private one started for the session on first use).
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient  # noqa: E402

from actionjournal.dev.kafka import KafkaBroker  # noqa: E402
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig  # noqa: E402


@pytest.fixture(scope="session")
def kafka_admin(aj_kafka_bootstrap: str) -> AdminClient:
    """One admin client for the session's broker (topic setup, deletes, config changes)."""
    return AdminClient({"bootstrap.servers": aj_kafka_bootstrap})


def delete_topic(admin: AdminClient, topic: str) -> None:
    for future in admin.delete_topics([topic], operation_timeout=30).values():
        future.result()


@pytest.fixture
def topic(kafka_admin: AdminClient) -> Iterator[str]:
    """A fresh topic name per test; the topic is deleted afterwards (best effort)."""
    name = f"aj-test-{uuid.uuid4().hex[:12]}"
    yield name
    with contextlib.suppress(Exception):
        delete_topic(kafka_admin, name)


@pytest.fixture
def kafka_store(aj_kafka_bootstrap: str) -> Iterator[Callable[..., KafkaStore]]:
    """Factory of stores on the session broker (default 4 partitions); all closed at the end."""
    stores: list[KafkaStore] = []

    def make(topic: str, codec: Any = None, **settings: Any) -> KafkaStore:
        settings.setdefault("bootstrap_servers", aj_kafka_bootstrap)
        settings.setdefault("partitions", 4)
        store = KafkaStore(KafkaStoreConfig(topic=topic, **settings), codec)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


@pytest.fixture
def private_broker() -> Iterator[KafkaBroker]:
    """A broker of this test alone, to kill and restart."""
    with KafkaBroker() as broker:
        yield broker


# -- Fluss -------------------------------------------------------------------------------------
# pyfluss is imported inside the fixtures, so the Kafka tests run where it is not installed.


@pytest.fixture(scope="session")
def fluss_run(aj_fluss_bootstrap: str) -> Callable[[Callable[[Any], Any]], Any]:
    """``fluss_run(work)``: ``await work(connection)`` on a fresh pyfluss connection."""
    import fluss

    def run(work: Callable[[Any], Any]) -> Any:
        async def main() -> Any:
            config = fluss.Config({"bootstrap.servers": aj_fluss_bootstrap})
            conn = await fluss.FlussConnection.create(config)
            try:
                return await work(conn)
            finally:
                await conn.close()

        return asyncio.run(main())

    return run


def drop_fluss_table(fluss_run: Callable[..., Any], table: str) -> None:
    import fluss

    path = fluss.TablePath("actionjournal", table)
    fluss_run(lambda conn: conn.get_admin().drop_table(path, ignore_if_not_exists=True))


@pytest.fixture
def fluss_table(fluss_run: Callable[..., Any]) -> Iterator[str]:
    """A fresh table name per test; the table is dropped afterwards (best effort)."""
    name = f"aj_test_{uuid.uuid4().hex[:12]}"
    yield name
    with contextlib.suppress(Exception):
        drop_fluss_table(fluss_run, name)


@pytest.fixture
def fluss_store(aj_fluss_bootstrap: str) -> Iterator[Callable[..., Any]]:
    """Factory of Fluss stores on the session cluster (default 4 buckets); closed at the end."""
    from actionjournal.stores.fluss import FlussStore, FlussStoreConfig

    stores: list[FlussStore] = []

    def make(table: str, codec: Any = None, **settings: Any) -> FlussStore:
        settings.setdefault("bootstrap_servers", aj_fluss_bootstrap)
        settings.setdefault("buckets", 4)
        # A new table's bucket leaders took over the default 30 s once on this 2-core
        # machine with a Flink job beside the suite; users keep the documented default.
        settings.setdefault("request_timeout_s", 90)
        store = FlussStore(FlussStoreConfig(table=table, **settings), codec)
        stores.append(store)
        return store

    yield make
    for store in stores:
        store.close()


@pytest.fixture(scope="module")
def fault_cluster() -> Iterator[Any]:
    """A Fluss cluster of one test module alone, whose tablet server tests stop and kill.

    Small log segments tiered every second, so a table with a short ``table.log.ttl`` loses
    its old records within seconds; the high watermark checkpointed only hourly, so a killed
    tablet server deterministically loses the records acknowledged since it started.
    """
    from actionjournal.dev.fluss import FlussCluster

    options = {
        "log.segment.file-size": "64kb",
        "remote.log.task-interval-duration": "1s",
        "log.replica.high-watermark.checkpoint-interval": "1h",
    }
    with FlussCluster(server_options=options) as cluster:
        yield cluster
