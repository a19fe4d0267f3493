"""Kafka fixtures: admin client, unique topics, stores, a private broker to kill.

``kafka_bootstrap`` (session: ``KAFKA_BOOTSTRAP`` or a private broker) lives in
tests/conftest.py so the store contract suite in tests/unit can use it too.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient  # noqa: E402

from actionjournal.stores.kafka import KafkaActionStateStore, KafkaStoreConfig  # noqa: E402
from actionjournal.tools.dev_kafka import KafkaBroker  # noqa: E402


@pytest.fixture(scope="session")
def kafka_admin(kafka_bootstrap: str) -> AdminClient:
    """One admin client for the session's broker (topic setup, deletes, config changes)."""
    return AdminClient({"bootstrap.servers": kafka_bootstrap})


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
def kafka_store(kafka_bootstrap: str) -> Iterator[Callable[..., KafkaActionStateStore]]:
    """Factory of stores on the session broker (default 4 partitions); all closed at the end."""
    stores: list[KafkaActionStateStore] = []

    def make(topic: str, codec: Any = None, **settings: Any) -> KafkaActionStateStore:
        settings.setdefault("bootstrap_servers", kafka_bootstrap)
        settings.setdefault("partitions", 4)
        store = KafkaActionStateStore(KafkaStoreConfig(topic=topic, **settings), codec)
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


@pytest.fixture(scope="session")
def aj_kafka_bootstrap(kafka_bootstrap: str) -> str:
    """The harness plugin's broker (``aj_kafka``) is this suite's broker: one per session."""
    return kafka_bootstrap


@pytest.fixture(scope="session")
def aj_fluss_bootstrap(request: pytest.FixtureRequest) -> str:
    """The harness plugin's Fluss cluster (``aj_fluss``) is this suite's cluster, if it has one."""
    try:
        return request.getfixturevalue("fluss_bootstrap")
    except pytest.FixtureLookupError:
        pytest.skip("this suite has no fluss_bootstrap fixture")
