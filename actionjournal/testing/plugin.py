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
``aj_fluss_bootstrap`` (session), ``aj_fluss``
    the same for Apache Fluss (``FLUSS_BOOTSTRAP`` or a private cluster; pyfluss needed):
    a ``FlussStoreConfig`` of a new table (4 buckets), dropped after the test. Skipped, with
    the reason, when pyfluss, Java or Maven are missing.
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
