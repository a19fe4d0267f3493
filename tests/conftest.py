from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from actionjournal.durable.store import Store
from actionjournal.stores import MemoryStore, SqliteStore

STORE_KINDS = [
    "memory",
    "sqlite",
    pytest.param("kafka", marks=pytest.mark.kafka),
    pytest.param("fluss", marks=pytest.mark.fluss),
]


def make_store(kind: str, tmp_path: Path, **kwargs) -> Store:
    if kind == "memory":
        return MemoryStore(**kwargs)
    if kind == "sqlite":
        return SqliteStore(tmp_path / "journal.db", **kwargs)
    raise ValueError(kind)


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    if request.param == "kafka":
        from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

        bootstrap = request.getfixturevalue("aj_kafka_bootstrap")
        topic = f"contract-{uuid.uuid4().hex[:12]}"
        s = KafkaStore(KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic, partitions=4))
    elif request.param == "fluss":
        pytest.importorskip("fluss")  # pyfluss: the "fluss" extra
        from actionjournal.stores.fluss import FlussStore, FlussStoreConfig

        bootstrap = request.getfixturevalue("aj_fluss_bootstrap")
        table = f"contract_{uuid.uuid4().hex[:12]}"
        s = FlussStore(FlussStoreConfig(bootstrap_servers=bootstrap, table=table, buckets=4))
    else:
        s = make_store(request.param, tmp_path)
    yield s
    s.close()
