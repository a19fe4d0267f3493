"""pytest plugin: journal fixtures and the restore-scenario harness for users' and our own tests.

Loaded automatically (entry point ``pytest11``) when actionjournal is installed.
Fixtures (prefixed ``aj_`` so they do not clash with a suite's own ``store`` or
``kafka_bootstrap``):

``sqlite_store``
    a fresh :class:`~actionjournal.stores.sqlite.SqliteStore` in the test's tmp dir.
``aj_sqlite``
    a :class:`~actionjournal.testing.harness.SqliteBackend`: SQLite journal files in the
    test's tmp dir.
``aj_kafka_bootstrap`` (session)
    ``KAFKA_BOOTSTRAP`` if set, else a private broker started on first use (Java 17+ and
    Maven needed; the test is skipped, with the reason, when they or confluent-kafka are
    missing). Nothing starts unless a test asks for it.
``aj_kafka``
    a :class:`~actionjournal.testing.harness.KafkaBackend` on that broker; its topics are
    deleted after the test.
``aj_fluss_bootstrap`` (session), ``aj_fluss``
    the same for Apache Fluss (``FLUSS_BOOTSTRAP`` or a private cluster; pyfluss needed):
    a :class:`~actionjournal.testing.harness.FlussBackend` whose tables are dropped after
    the test. Skipped, with the reason, when pyfluss, Java or Maven are missing.
``restore_scenario``
    a factory ``restore_scenario(agent, backend=None, config=None)`` of
    :class:`~actionjournal.testing.harness.RestoreScenario` in the test's tmp dir, closed
    after the test. See docs/testing.md.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from actionjournal.stores.sqlite import SqliteStore

if TYPE_CHECKING:
    from actionjournal.testing.harness import JournalBackend, RestoreScenario


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
def aj_sqlite(tmp_path: Path) -> JournalBackend:
    """Journals as SQLite files in the test's temporary directory."""
    from actionjournal.testing.harness import SqliteBackend

    return SqliteBackend(tmp_path / "aj-journals")


@pytest.fixture(scope="session")
def aj_kafka_bootstrap() -> Iterator[str]:
    """A Kafka bootstrap address: ``KAFKA_BOOTSTRAP``, or a private broker for the session."""
    pytest.importorskip("confluent_kafka", reason="the Kafka store needs confluent-kafka")
    if os.environ.get("KAFKA_BOOTSTRAP"):
        yield os.environ["KAFKA_BOOTSTRAP"]
        return
    if not _has_java():
        pytest.skip("no Kafka broker: set KAFKA_BOOTSTRAP, or install a JDK 17+ and Maven")
    from actionjournal.dev.kafka import running_broker
    from actionjournal.dev.maven import MavenError

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
def aj_kafka(aj_kafka_bootstrap: str) -> Iterator[JournalBackend]:
    """Journals as Kafka topics (4 partitions) on ``aj_kafka_bootstrap``; deleted afterwards."""
    from actionjournal.testing.harness import KafkaBackend

    backend = KafkaBackend(aj_kafka_bootstrap)
    yield backend
    backend.close()


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
    from actionjournal.dev.fluss import running_cluster
    from actionjournal.dev.maven import MavenError

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
def aj_fluss(aj_fluss_bootstrap: str) -> Iterator[JournalBackend]:
    """Journals as Fluss log tables (4 buckets) on ``aj_fluss_bootstrap``; dropped afterwards."""
    from actionjournal.testing.harness import FlussBackend

    backend = FlussBackend(aj_fluss_bootstrap)
    yield backend
    backend.close()


@pytest.fixture
def restore_scenario(tmp_path: Path) -> Iterator[Callable[..., RestoreScenario]]:
    """``restore_scenario(agent, backend=None, config=None, **kwargs)``: a started scenario.

    ``backend`` defaults to SQLite files in the test's tmp dir. Every scenario made
    is closed after the test (its service stopped, its Kafka topics deleted).
    """
    from actionjournal.testing.harness import RestoreScenario

    made: list[RestoreScenario] = []

    def make(agent: Any, backend: JournalBackend | None = None, **kwargs: Any) -> RestoreScenario:
        directory = tmp_path / f"scenario-{len(made) + 1}"
        scenario = RestoreScenario(agent, backend, directory=directory, **kwargs)
        made.append(scenario)
        return scenario.start()

    yield make
    for scenario in made:
        scenario.close()
