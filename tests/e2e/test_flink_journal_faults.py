"""A PyFlink job on a Kafka journal topic that holds records it did not write: foreign bytes
and another namespace's records never stop it; a corrupt record of one of its keys stops
the job with the command that quarantines it, after which the job runs to the end.

Until the run failure policy can set a key aside, a key stopped by a corrupt record fails
the task (and so the job once its restarts are used up), as any failed run does.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import uuid
from collections import Counter

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient

from actionjournal import JournalConfig, LocalRunner
from actionjournal.durable.identity import key_id
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from actionjournal.tools.cli import main as cli
from tests.e2e.agents import TwoSteps, inputs, kafka, key_of

pytestmark = [pytest.mark.flink, pytest.mark.slow, pytest.mark.kafka]

N, KEYS = 12, 4


@pytest.fixture
def topic(aj_kafka_bootstrap):
    name = f"e2e-faults-{uuid.uuid4().hex[:8]}"
    KafkaStore(KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=name, partitions=4))
    yield name
    AdminClient({"bootstrap.servers": aj_kafka_bootstrap}).delete_topics([name])


def run_job(tmp_path, name, url, factory, restarts=3):
    env = local_env(tmp_path / f"checkpoints-{name}", restarts=restarts)
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig())
    source = paced_source(env, inputs(N, KEYS), 40)
    job = agents.from_datastream(source, key_selector=key_of)
    sink = JsonLines(tmp_path / f"outputs-{name}.jsonl")
    job.apply(TwoSteps(url), store_factory=factory).to_datastream().map(sink)
    env.execute(name)
    return sink.read()


def produce(bootstrap, topic, partition, value, key=None, headers=None):
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(topic, value, key, partition, headers=headers)
    assert producer.flush(30) == 0


def test_foreign_records_and_other_namespaces_do_not_stop_a_job(
    tmp_path, aj_kafka_bootstrap, topic
):
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=4)
    store = KafkaStore(config)
    with CountingService() as service:
        # Another namespace on the same topic, with the same keys (so the same partitions).
        other = LocalRunner(TwoSteps(service.url), store, JournalConfig(namespace="other"))
        asyncio.run(other.run([(key_of(i), i) for i in inputs(KEYS, KEYS)]))
        theirs = len(service.counts)
        for partition in range(4):
            produce(aj_kafka_bootstrap, topic, partition, b"order 17 shipped\n")
            produce(aj_kafka_bootstrap, topic, partition, os.urandom(48).replace(b"AJ", b"aj"))
        # Another namespace's record whose value is garbage: read by its headers only.
        headers = [("aj.namespace", b"other"), ("aj.operator_uid", b"two-steps")]
        k0 = key_id(0)
        produce(aj_kafka_bootstrap, topic, store.partition_of(k0), b"AJ\x01\x02\x00?", k0, headers)
        store.close()

        outputs = run_job(tmp_path, "with-strangers", service.url, kafka(aj_kafka_bootstrap, topic))
        counts = dict(service.counts)
    assert sorted(o["i"] for o in outputs) == list(range(N))
    assert len(counts) == theirs + 2 * N
    assert Counter(counts.values()) == {1: theirs + 2 * N}, "a call ran twice"


def test_a_corrupt_record_of_a_key_stops_the_job_until_quarantined(
    tmp_path, aj_kafka_bootstrap, topic, capsys
):
    config = KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=4)
    store = KafkaStore(config)
    k0 = key_id(0)
    headers = [("aj.namespace", b"default"), ("aj.operator_uid", b"two-steps")]
    produce(aj_kafka_bootstrap, topic, store.partition_of(k0), b"AJ\x01\x02\x00?", k0, headers)
    store.close()
    factory = kafka(aj_kafka_bootstrap, topic)
    with CountingService() as service:
        with pytest.raises(Exception) as failed:
            run_job(tmp_path, "stopped", service.url, factory, restarts=1)
        text = str(failed.value)
        assert f"belongs to key {k0}, which stops here" in text
        command = re.search(r"`(actionjournal journal quarantine [^`]*)`", text).group(1)

        assert cli(shlex.split(command)[1:]) == 0
        assert "quarantined partition" in capsys.readouterr().out

        outputs = run_job(tmp_path, "after-quarantine", service.url, factory)
        counts = dict(service.counts)
    assert sorted(o["i"] for o in outputs) == list(range(N))
    assert Counter(counts.values()) == {1: 2 * N}, "a call ran twice"
