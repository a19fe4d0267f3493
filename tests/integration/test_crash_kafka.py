"""The SIGKILL crash tests of test_crash_local, with the journal in a real Kafka topic.

Same child process, same windows, same assertions; only the store differs. The
uninterrupted baseline is the SQLite one: outputs and memory must not depend on
the store.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
from test_crash_local import (  # the SQLite crash test's driver and its baseline fixture
    CALLS_PER_INPUT,
    N_INPUTS,
    check_kill_and_restore,
    journaled_call_ids,
    run_child,
    uninterrupted,  # noqa: F401 - fixture
)

from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.testing.service import CountingService

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

KAFKA_WINDOWS = ["after a call, before its record", "after the call's record", "between runs"]


def open_topic(bootstrap: str, topic: str) -> KafkaStore:
    return KafkaStore(KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic))


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", KAFKA_WINDOWS)
def test_killed_in_window_then_restored(
    window,
    reconcile,
    tmp_path,
    uninterrupted,  # noqa: F811 - the fixture imported above
    aj_kafka_bootstrap,
):
    topic = f"aj-crash-{uuid.uuid4().hex[:12]}"
    journal = ["--kafka", aj_kafka_bootstrap, "--topic", topic]
    check_kill_and_restore(
        tmp_path,
        uninterrupted,
        window,
        reconcile,
        lambda: open_topic(aj_kafka_bootstrap, topic),
        journal,
    )
    assert not (tmp_path / "journal.db").exists()  # the journal really was the topic


def test_child_journal_is_in_kafka(tmp_path: Path, aj_kafka_bootstrap) -> None:
    """Guard for the tests above: an uninterrupted Kafka run journals every call once."""
    topic = f"aj-crash-{uuid.uuid4().hex[:12]}"
    with CountingService() as service:
        done = run_child(tmp_path, service.url, "--kafka", aj_kafka_bootstrap, "--topic", topic)
        assert done.returncode == 0, done.stderr[-2000:]
    journaled = journaled_call_ids(open_topic(aj_kafka_bootstrap, topic))
    assert len(journaled) == N_INPUTS * CALLS_PER_INPUT
