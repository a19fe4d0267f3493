"""The Kafka store on three real brokers (RF 3, min ISR 2): what it asks of a topic, and a
restore that starts while a partition's leader is being replaced after a SIGKILL.

The long scenarios (an agent appending through a leader kill, two of three brokers killed)
are in test_kafka_failover.py.
"""

from __future__ import annotations

import logging
import re
import subprocess
import sys
import uuid

import pytest

pytest.importorskip("confluent_kafka")

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from pydantic import ValidationError

from actionjournal.durable.errors import StoreError
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from tests.failover_checks import check_restore_after_a_kill
from tests.store_checks import rc

pytestmark = pytest.mark.kafka


def topic_settings(bootstrap: str, topic: str) -> dict[str, str]:
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    entries = admin.describe_configs([resource])[resource].result()
    return {name: entry.value for name, entry in entries.items()}


def make_topic(bootstrap: str, replicas: int, **config: str) -> str:
    topic = f"aj-handmade-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 4, replicas, config=config)])[topic].result()
    return topic


def test_min_insync_replicas_defaults_to_two_of_three_and_is_validated():
    def config(**fields) -> KafkaStoreConfig:
        return KafkaStoreConfig(bootstrap_servers="b:1", **fields)

    assert config(replication_factor=3).min_insync_replicas == 2
    assert config(replication_factor=2).min_insync_replicas == 2
    assert config().min_insync_replicas == 1
    assert config(replication_factor=5, min_insync_replicas=3).min_insync_replicas == 3
    with pytest.raises(ValidationError, match=r"min_insync_replicas=3 .* replication_factor=2"):
        config(replication_factor=2, min_insync_replicas=3)
    with pytest.raises(ValidationError, match="min_insync_replicas"):
        config(replication_factor=3, min_insync_replicas=0)
    with pytest.raises(ValidationError, match="weak_topic"):
        config(weak_topic="ignore")


def test_the_store_creates_its_topic_with_rf_3_and_min_isr_2(aj_kafka_replicated):
    store = KafkaStore(aj_kafka_replicated)
    try:
        settings = topic_settings(aj_kafka_replicated.bootstrap_servers, store.topic)
        assert settings["min.insync.replicas"] == "2"
        admin = AdminClient({"bootstrap.servers": aj_kafka_replicated.bootstrap_servers})
        topic = admin.list_topics(store.topic, timeout=10).topics[store.topic]
        assert {len(p.replicas) for p in topic.partitions.values()} == {3}
    finally:
        store.close()


@pytest.mark.parametrize(
    "replicas, settings, says",
    [
        (1, {}, r"replication factor 1, below the configured replication_factor=3"),
        (3, {"min.insync.replicas": "1"}, r"min\.insync\.replicas=1, below the configured "
         r"min_insync_replicas=2"),
    ],
)  # fmt: skip
def test_a_topic_below_the_configured_replication_is_refused_or_warned(
    aj_kafka_cluster, caplog, replicas, settings, says
):
    bootstrap = aj_kafka_cluster.bootstrap
    topic = make_topic(bootstrap, replicas, **settings)
    config = KafkaStoreConfig(
        bootstrap_servers=bootstrap, topic=topic, partitions=4, replication_factor=3
    )
    with pytest.raises(StoreError, match=says) as refused:
        KafkaStore(config)
    assert topic in str(refused.value)
    assert "weak_topic='warn'" in str(refused.value)  # and what to do
    caplog.set_level(logging.WARNING, "actionjournal")
    store = KafkaStore(config.model_copy(update={"weak_topic": "warn"}))
    store.close()
    assert any(r.levelno == logging.WARNING and topic in r.getMessage() for r in caplog.records)
    assert any(re.search(says, r.getMessage()) for r in caplog.records), caplog.text


def test_inspect_takes_an_rf_3_topic_as_it_is(aj_kafka_replicated):
    """`journal inspect` said "replication factor [3], configured 1" of every RF 3 topic."""
    store = KafkaStore(aj_kafka_replicated)
    store.append(rc("k", 0))
    store.close()
    argv = [sys.executable, "-m", "actionjournal.tools.cli", "journal", "inspect", "--store"]
    argv += ["kafka", "--bootstrap", aj_kafka_replicated.bootstrap_servers]
    argv += ["--topic", aj_kafka_replicated.topic, "--namespace", "ns"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "replication" not in done.stderr, done.stderr
    assert "configured" not in done.stderr, done.stderr


def test_a_restore_right_after_a_leader_kill_rides_through_the_failover(aj_kafka_cluster):
    """Opening the store and reading recovery in the seconds after a leader SIGKILL failed
    with _DESTROY_BROKER or _TIMED_OUT; it must wait for the new leader and succeed."""
    config = KafkaStoreConfig(
        bootstrap_servers=aj_kafka_cluster.bootstrap,
        topic=f"aj-failover-{uuid.uuid4().hex[:8]}",
        partitions=4,
        replication_factor=3,
    )

    def kill_the_leader() -> None:
        aj_kafka_cluster.kill_broker(aj_kafka_cluster.leader(config.topic, 0))

    took = check_restore_after_a_kill(lambda: KafkaStore(config), kill_the_leader)
    print(f"restore during failover: {took:.1f} s")
