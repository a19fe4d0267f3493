"""pytest plugin: journal fixtures and the restore-scenario harness for users' and our own tests.

Loaded automatically (entry point ``pytest11``) when actionjournal is installed.
Fixtures (prefixed ``aj_`` so they do not clash with a suite's own ``store`` or
``kafka_bootstrap``):

``sqlite_store``
    a fresh :class:`~actionjournal.stores.sqlite.SqliteStore` in the test's tmp dir.
``aj_sqlite``
    a ``SqliteStoreConfig``: a SQLite journal file in the test's tmp dir.
``aj_kafka_bootstrap`` (session)
    ``KAFKA_BOOTSTRAP`` if set, else a private broker started on first use (Java 17+ and
    Maven needed; the test is skipped, with the reason, when they or confluent-kafka are
    missing). Nothing starts unless a test asks for it.
``aj_kafka``
    a ``KafkaStoreConfig`` of a new topic (4 partitions) on that broker, deleted after the
    test.
``aj_kafka_cluster``
    a private :class:`~actionjournal.dev.kafka_cluster.KafkaCluster` of three brokers, started
    on first use and shared by the session; before each test that asks for it, a broker an
    earlier test killed is started again. Its handles: ``kill_broker(node)`` (SIGKILL),
    ``start_broker(node)``, ``leader(topic, partition)``, ``wait_in_sync(topic)``.
``aj_kafka_replicated``
    a ``KafkaStoreConfig`` of a new topic on ``aj_kafka_cluster``: 4 partitions, replication
    factor 3, ``min.insync.replicas`` 2 (what docs/kafka.md recommends); deleted after the test.
``aj_fluss_bootstrap`` (session), ``aj_fluss``
    the same for Apache Fluss (``FLUSS_BOOTSTRAP`` or a private cluster; pyfluss needed):
    a ``FlussStoreConfig`` of a new table (4 buckets), dropped after the test. Skipped, with
    the reason, when pyfluss, Java or Maven are missing.
``aj_fluss_cluster``, ``aj_fluss_replicated``
    the same for Fluss: a private :class:`~actionjournal.dev.fluss.FlussCluster` of three
    tablet servers (ids 0-2, started on first use; one an earlier test killed is started
    again; ``kill_tablet_server(n)``, ``start_tablet_server(n)``), and a
    ``FlussStoreConfig`` of a new table on it (4 buckets, replication 3, 2 in sync),
    dropped after the test.
``restore_scenario``
    a factory ``restore_scenario(agent, store=None, config=None)`` of
    :class:`~actionjournal.testing.harness.RestoreScenario` in the test's tmp dir, closed
    after the test. See docs/testing.md.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.stores.sqlite import SqliteStore

if TYPE_CHECKING:
    from actionjournal.dev.fluss import FlussCluster
    from actionjournal.dev.kafka_cluster import KafkaCluster
    from actionjournal.testing.harness import Journal, RestoreScenario


def _has_java() -> bool:
    home = os.environ.get("JAVA_HOME")
    return bool(home and os.access(os.path.join(home, "bin", "java"), os.X_OK)) or bool(
        shutil.which("java")
    )


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    """A fresh SQLite journal in the test's temporary directory."""
    store = SqliteStore(tmp_path / "journal.db")
    yield store
    store.close()


@pytest.fixture
def aj_sqlite(tmp_path: Path) -> SqliteStoreConfig:
    """A SQLite journal file in the test's temporary directory."""
    return SqliteStoreConfig(path=str(tmp_path / "aj-journals" / "journal.db"))


@pytest.fixture(scope="session")
def aj_kafka_bootstrap() -> Iterator[str]:
    """A Kafka bootstrap address: ``KAFKA_BOOTSTRAP``, or a private broker for the session."""
    pytest.importorskip("confluent_kafka", reason="the Kafka store needs confluent-kafka")
    if os.environ.get("KAFKA_BOOTSTRAP"):
        yield os.environ["KAFKA_BOOTSTRAP"]
        return
    if not _has_java():
        pytest.skip("no Kafka broker: set KAFKA_BOOTSTRAP, or install a JDK 17+ and Maven")
    from actionjournal._maven import MavenError
    from actionjournal.dev.kafka import running_broker

    try:
        broker = running_broker()
        bootstrap = broker.__enter__()
    except MavenError as exc:
        pytest.skip(f"no Kafka broker: set KAFKA_BOOTSTRAP, or make Maven work ({exc})")
    try:
        yield bootstrap
    finally:
        broker.__exit__(None, None, None)


@pytest.fixture
def aj_kafka(aj_kafka_bootstrap: str) -> Iterator[KafkaStoreConfig]:
    """A new topic (4 partitions) on ``aj_kafka_bootstrap``; deleted after the test."""
    config = KafkaStoreConfig(
        bootstrap_servers=aj_kafka_bootstrap,
        topic=f"aj-scenario-{uuid.uuid4().hex[:8]}",
        partitions=4,
    )
    yield config
    _delete(config)


@pytest.fixture(scope="session")
def _aj_kafka_cluster() -> Iterator[KafkaCluster]:
    pytest.importorskip("confluent_kafka", reason="the Kafka store needs confluent-kafka")
    if not _has_java():
        pytest.skip("no Kafka cluster: install a JDK 17+ and Maven")
    from actionjournal._maven import MavenError
    from actionjournal.dev.kafka_cluster import KafkaCluster

    cluster = KafkaCluster(brokers=3)
    try:
        cluster.__enter__()
    except MavenError as exc:
        pytest.skip(f"no Kafka cluster: make Maven work ({exc})")
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture
def aj_kafka_cluster(_aj_kafka_cluster: KafkaCluster) -> KafkaCluster:
    """Three local brokers, all running (one a previous test killed is started again)."""
    _aj_kafka_cluster.start()
    return _aj_kafka_cluster


@pytest.fixture
def aj_kafka_replicated(aj_kafka_cluster: KafkaCluster) -> Iterator[KafkaStoreConfig]:
    """A new topic (4 partitions, RF 3, min ISR 2) on ``aj_kafka_cluster``; deleted after."""
    config = KafkaStoreConfig(
        bootstrap_servers=aj_kafka_cluster.bootstrap,
        topic=f"aj-replicated-{uuid.uuid4().hex[:8]}",
        partitions=4,
        replication_factor=3,
        min_insync_replicas=2,
    )
    yield config
    aj_kafka_cluster.start()  # a test that killed brokers: the topic is deleted with all up
    _delete(config)


@pytest.fixture(scope="session")
def aj_fluss_bootstrap() -> Iterator[str]:
    """A Fluss bootstrap address: ``FLUSS_BOOTSTRAP``, or a private cluster for the session."""
    try:
        import actionjournal.stores.fluss  # noqa: F401 - needs pyfluss
    except ImportError as exc:
        if (exc.name or "").startswith("actionjournal"):
            pytest.skip(f"this version of actionjournal has no Fluss store ({exc})")
        pytest.skip(f"the Fluss store needs pyfluss ({exc}): pip install 'actionjournal[fluss]'")
    if os.environ.get("FLUSS_BOOTSTRAP"):
        yield os.environ["FLUSS_BOOTSTRAP"]
        return
    if not _has_java():
        pytest.skip("no Fluss cluster: set FLUSS_BOOTSTRAP, or install a JDK 17+ and Maven")
    from actionjournal._maven import MavenError
    from actionjournal.dev.fluss import running_cluster

    cluster = running_cluster()
    try:
        bootstrap = cluster.__enter__()
    except MavenError as exc:
        pytest.skip(f"no Fluss cluster: set FLUSS_BOOTSTRAP, or make Maven work ({exc})")
    try:
        yield bootstrap
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture
def aj_fluss(aj_fluss_bootstrap: str) -> Iterator[FlussStoreConfig]:
    """A new log table (4 buckets) on ``aj_fluss_bootstrap``; dropped after the test."""
    config = FlussStoreConfig(
        bootstrap_servers=aj_fluss_bootstrap, table=f"aj_scenario_{uuid.uuid4().hex[:8]}", buckets=4
    )
    yield config
    _delete(config)


@pytest.fixture(scope="session")
def _aj_fluss_cluster() -> Iterator[FlussCluster]:
    pytest.importorskip("fluss", reason="the Fluss store needs pyfluss")
    if not _has_java():
        pytest.skip("no Fluss cluster: install a JDK 17+ and Maven")
    from actionjournal._maven import MavenError
    from actionjournal.dev.fluss import FlussCluster

    cluster = FlussCluster(tablet_servers=3)
    try:
        cluster.__enter__()
    except MavenError as exc:
        pytest.skip(f"no Fluss cluster: make Maven work ({exc})")
    try:
        yield cluster
    finally:
        cluster.__exit__(None, None, None)


@pytest.fixture
def aj_fluss_cluster(_aj_fluss_cluster: FlussCluster) -> FlussCluster:
    """Three local tablet servers, all running (one a previous test killed starts again)."""
    _aj_fluss_cluster.start()
    return _aj_fluss_cluster


@pytest.fixture
def aj_fluss_replicated(aj_fluss_cluster: FlussCluster) -> Iterator[FlussStoreConfig]:
    """A new table (4 buckets, replication 3, 2 in sync) on ``aj_fluss_cluster``."""
    config = FlussStoreConfig(
        bootstrap_servers=aj_fluss_cluster.bootstrap,
        table=f"aj_replicated_{uuid.uuid4().hex[:8]}",
        buckets=4,
        replication_factor=3,
        min_insync_replicas=2,
    )
    yield config
    aj_fluss_cluster.start()
    _delete(config)


def _delete(journal: Journal) -> None:
    from actionjournal.testing.harness import journals

    with contextlib.suppress(Exception):  # best effort: the broker may be gone already
        journals.delete([journal])


@pytest.fixture
def restore_scenario(tmp_path: Path) -> Iterator[Callable[..., RestoreScenario]]:
    """``restore_scenario(agent, store=None, config=None, **kwargs)``: a started scenario.

    ``store`` (a store config, e.g. ``aj_kafka``) defaults to a SQLite file in the test's
    tmp dir. Every scenario made is closed after the test (its service stopped, the topics
    and tables it made deleted).
    """
    from actionjournal.testing.harness import RestoreScenario

    made: list[RestoreScenario] = []

    def make(agent: Any, store: Journal | None = None, **kwargs: Any) -> RestoreScenario:
        directory = tmp_path / f"scenario-{len(made) + 1}"
        scenario = RestoreScenario(agent, store, directory=directory, **kwargs)
        made.append(scenario)
        return scenario.start()

    yield make
    for scenario in made:
        scenario.close()
