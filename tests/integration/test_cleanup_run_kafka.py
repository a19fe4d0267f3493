"""Continuous cleanup (``actionjournal cleanup run``) against a real Kafka broker.

The journal of tests/cleanup_scenario.py (finished, in-flight and idle keys, an older
snapshot and the retained one) on a four-partition topic; the SQLite cases, with a job
running beside the cleaner, are in tests/unit/test_cleanup_run.py.
"""

from __future__ import annotations

import re

import pytest

from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CleanupBoundary
from actionjournal.stores import KafkaStoreConfig
from actionjournal.tools.cleanup import CleanupLoop
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def test_cleanup_run_on_kafka(kafka_store, aj_kafka_bootstrap, topic, tmp_path, capsys):
    store = kafka_store(topic)
    scenario = sc.build(store, tmp_path)
    lows = {p: store.position_range(p)[0] for p in store.partitions()}
    kafka = ["--store", "kafka", "--bootstrap", aj_kafka_bootstrap, "--topic", topic]
    argv = [*kafka, "--snapshot", str(scenario.s), "--every", "10ms", "--max-rounds", "2"]
    assert cli(["cleanup", "run", *argv]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"Kafka topic {topic!r} on {aj_kafka_bootstrap}" in lines[0]
    assert re.search(r"round 1: deleted \d+ records .* runs\) of Kafka topic", lines[1]), lines
    assert re.search(r"round 2: nothing to delete for snapshot .*: partition \d+ ", lines[2])
    assert len(lines) == 3
    # Each partition with deletable records starts at its boundary, journaled in it first.
    busy = store.partition_of(key_id("busy"))
    low, _ = store.position_range(busy)
    assert low > lows[busy]
    boundaries = [
        (r.partition, r.position)
        for r in store.read_key("default", "worker", key_id("busy"), None)
        if isinstance(r, CleanupBoundary)
    ]
    assert boundaries == [(busy, low)]

    refused = rf"partition {busy} position \d+, but cleanup"
    runner = sc.check_restores(lambda: kafka_store(topic), scenario, refused)
    executed = len(sc.EXECUTED)

    # The library form, with the job's own store config, from the restored job's next
    # snapshot: the run that was in flight has completed since, so its first records may go.
    newer = tmp_path / "newer.snapshot"
    runner.snapshot(newer)
    loop = CleanupLoop(
        KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic), snapshot=newer
    )
    before = {p: store.position_range(p)[0] for p in store.partitions()}
    result = loop.run_round()
    assert result.result == "deleted", result.message
    assert loop.metrics.value("actionjournal_cleanup_records_deleted_total") > 0
    after = {p: store.position_range(p)[0] for p in store.partitions()}
    assert [p for p in before if after[p] != before[p]] and all(
        after[p] >= before[p] for p in before
    )
    assert len(sc.restore(kafka_store(topic), newer).outputs) == 0
    assert len(sc.EXECUTED) == executed
