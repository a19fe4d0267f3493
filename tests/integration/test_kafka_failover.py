"""An agent journaling to three real brokers (RF 3, min ISR 2, acks=all, idempotence) while two
of three are SIGKILLed: appends fail within the delivery timeout, the runner stops, and a
restore once they are back finishes the work. Durable calls go to a counting HTTP service, so
"ran twice" is the service's word. A partition leader's SIGKILL: tests/e2e/
test_flink_kafka_failover.py (a Flink job), tests/cluster/test_failover_more.py (this agent).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

pytest.importorskip("confluent_kafka")

from actionjournal import ActionJournalError, JournalWriteError, LocalRunner
from actionjournal.durable.records import JournalRecord
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.testing.service import CountingService
from tests.e2e.agents import Orders
from tests.failover_checks import KEYS, PER_KEY, Witnessing, calls_after, run_until, source

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


class Witness(Witnessing, KafkaStore):
    """The Kafka store, remembering what it acknowledged and refused."""


def all_acknowledged_are_journaled(store: Witness, config: KafkaStoreConfig) -> None:
    keys = {record.key_id for record, _, _ in store.acknowledged}
    reader = KafkaStore(config)
    try:
        read: dict[str, list[JournalRecord]] = {
            key: reader.read_key("default", "orders", key, None) for key in keys
        }
    finally:
        reader.close()
    missing = [
        (record, marker)
        for record, marker, _ in store.acknowledged
        if record not in read[record.key_id]
    ]
    assert not missing, f"{len(missing)} acknowledged records are not in the journal: {missing[:3]}"


@pytest.fixture
def service() -> Iterator[CountingService]:
    with CountingService(delay=0.005) as counting:
        yield counting


def test_two_of_three_brokers_sigkilled_appends_fail_promptly_then_a_restore_finishes(
    tmp_path, aj_kafka_cluster, aj_kafka_replicated, service
):
    timeout = 6.0
    config = aj_kafka_replicated.model_copy(update={"delivery_timeout_s": timeout})
    store = Witness(config)
    snapshot = tmp_path / "snapshot"
    runner = LocalRunner(Orders(service.url), store)
    killed: list[int] = []
    killed_at: list[float] = []

    def kill_two() -> None:
        leader = aj_kafka_cluster.leader(config.topic, 0)
        other = next(node for node in aj_kafka_cluster.running() if node != leader)
        for node in (leader, other):
            aj_kafka_cluster.kill_broker(node)
            killed.append(node)
        killed_at.append(time.time())

    with pytest.raises(ActionJournalError) as failed:
        asyncio.run(
            run_until(runner, lambda: service.executions() >= KEYS * PER_KEY // 2, kill_two,
                      pace=0.01, snapshot_path=snapshot, snapshot_every=5)
        )  # fmt: skip
    stopped_at = time.time()
    store.close()
    assert killed, f"the run ended before the kill: {failed.value!r}"
    first_error, first_at = min(store.refused, key=lambda refused: refused[1])
    # Named: the topic, the partition and the cause; within the configured timeout (no hang).
    assert isinstance(failed.value, JournalWriteError) or isinstance(
        failed.value.__cause__, JournalWriteError
    ), repr(failed.value)
    message = str(failed.value)
    assert config.topic in message and "partition" in message, message
    assert "acknowledge" in message or "delivery" in message, message
    assert first_at - killed_at[0] <= timeout + 6, f"first refusal {first_at - killed_at[0]:.0f} s"
    # Once the journal refuses a write, no new durable call starts, and the runner stops
    # within seconds (the calls already running are the only ones in the window).
    # (the journal's fail-fast, issue 32: before it, 44 calls started after the first
    # refusal and the runner raised minutes later)
    late = calls_after(service, first_at)
    assert not late, f"{len(late)} durable calls started after the first JournalWriteError"
    assert stopped_at - first_at <= 10, f"the runner went on {stopped_at - first_at:.0f} s"

    for node in killed:
        aj_kafka_cluster.start_broker(node)
    before = dict(service.counts)
    restored = Witness(aj_kafka_replicated)
    try:
        again = LocalRunner.restore(snapshot, Orders(service.url), restored)
        asyncio.run(again.run_source(source()))
    finally:
        restored.close()
    outputs = {event.output["i"] for _, event in runner.outputs + again.outputs}
    assert outputs == set(range(KEYS * PER_KEY))  # nothing lost
    twice = {call: n for call, n in service.counts.items() if n > 1}
    assert not twice, f"calls run twice: {twice} (before the restore: {len(before)} calls)"
    assert sorted(service.calls_by_name().items()) == [
        ("first", KEYS * PER_KEY), ("second", KEYS * PER_KEY)
    ]  # fmt: skip
    all_acknowledged_are_journaled(store, aj_kafka_replicated)
    all_acknowledged_are_journaled(restored, aj_kafka_replicated)
    print(
        f"brokers {killed} killed: first JournalWriteError after {first_at - killed_at[0]:.1f} s, "
        f"runner stopped {stopped_at - first_at:.1f} s later, "
        f"{len(late)} calls started after it; {first_error}"
    )
