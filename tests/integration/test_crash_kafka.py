"""The SIGKILL crash tests of test_crash_local, with the journal in a real Kafka topic.

Same child process, same windows, same assertions; only the store differs. The
uninterrupted baseline is the SQLite one: outputs and memory must not depend on
the store.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from pathlib import Path

import pytest
from test_crash_local import (  # the SQLite crash test's driver and its baseline fixture
    CALLS_PER_INPUT,
    N_INPUTS,
    WINDOWS,
    final_memory,
    outputs,
    run_child,
    uninterrupted,  # noqa: F401 - fixture
)

from actionjournal.durable.records import CallFinished
from actionjournal.operator.engine import AgentEngine
from actionjournal.stores.kafka import KafkaActionStateStore, KafkaStoreConfig
from actionjournal.testing.service import CountingService

pytestmark = [pytest.mark.slow, pytest.mark.kafka]

KAFKA_WINDOWS = ["after a call, before its record", "after the call's record", "between runs"]


def finished_call_ids(bootstrap: str, topic: str) -> set[str]:
    """Call ids whose outcome the topic holds, read back through the store like recovery does."""
    store = KafkaActionStateStore(KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic))
    try:
        keys = {f"user_{i % 3}" for i in range(N_INPUTS)}  # as crash_agent.inputs() keys them
        records = [
            r
            for key in keys
            for r in store.read_key("default", "triage", AgentEngine.key_id(key), None)
        ]
    finally:
        store.close()
    return {r.call_id for r in records if isinstance(r, CallFinished)}


@pytest.mark.parametrize("reconcile", [False, True], ids=["rerun", "reconciler"])
@pytest.mark.parametrize("window", KAFKA_WINDOWS)
def test_killed_in_window_then_restored(
    window,
    reconcile,
    tmp_path,
    uninterrupted,  # noqa: F811 - the fixture imported above
    kafka_bootstrap,
):
    topic = f"aj-crash-{uuid.uuid4().hex[:12]}"
    kafka = ["--kafka", kafka_bootstrap, "--topic", topic]
    flags = ["--reconcile"] if reconcile else []
    with CountingService() as service:
        crashed = run_child(tmp_path, service.url, "--crash", WINDOWS[window], *flags, *kafka)
        assert crashed.returncode == -9, crashed.stderr[-2000:]
        service.wait_idle()
        unrecorded = set(service.counts) - finished_call_ids(kafka_bootstrap, topic)
        restored = run_child(tmp_path, service.url, *flags, *kafka)
        assert restored.returncode == 0, restored.stderr[-2000:]
        counts = dict(service.counts)
    assert not (tmp_path / "journal.db").exists()  # the journal really was the topic
    assert len(counts) == N_INPUTS * CALLS_PER_INPUT
    if window == "after a call, before its record":
        assert unrecorded, "the crash did not hit the window"
    if reconcile:
        assert Counter(counts.values()) == {1: len(counts)}
    else:
        assert {c for c, n in counts.items() if n == 2} == unrecorded
        assert max(counts.values()) <= 2
    assert outputs(tmp_path) == outputs(uninterrupted)
    assert final_memory(tmp_path) == final_memory(uninterrupted)
    report = json.loads(restored.stdout.strip().splitlines()[-1])
    if reconcile:
        assert report["reconciled"] == len(unrecorded)


def test_child_journal_is_in_kafka(tmp_path: Path, kafka_bootstrap) -> None:
    """Guard for the tests above: an uninterrupted Kafka run journals every call once."""
    topic = f"aj-crash-{uuid.uuid4().hex[:12]}"
    with CountingService() as service:
        done = run_child(tmp_path, service.url, "--kafka", kafka_bootstrap, "--topic", topic)
        assert done.returncode == 0, done.stderr[-2000:]
    assert len(finished_call_ids(kafka_bootstrap, topic)) == N_INPUTS * CALLS_PER_INPUT
