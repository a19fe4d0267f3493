"""A result too large for the journal, in a PyFlink job on a real Kafka broker (issue 15.3).

The topic takes records of about 1 MB (the broker's default max.message.bytes, and the
producer's message.max.bytes); one input's call returns 1.5 MB. Its call runs once: the
oversized result is journaled as the call's final failure (PayloadTooLargeError), so each of
the three task restarts of ``retry-then-dead-letter`` replays the failure instead of running
the call again, and the run is then dead-lettered. Every other key's output arrives.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter

import pytest
from pyflink.common import Types

from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CallFinished, RunFailed
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from tests.e2e.agents import Orders, kafka, key_of

pytestmark = [pytest.mark.flink, pytest.mark.kafka, pytest.mark.slow]

N, KEYS, BIG = 20, 5, 7  # the big input is key 2, seq 1
SIZE = 1_500_000


def test_an_oversized_result_runs_once_across_three_restarts_and_other_keys_finish(
    tmp_path, aj_kafka_bootstrap
):
    topic = f"e2e-big-{uuid.uuid4().hex[:8]}"
    items = [{"k": i % KEYS, "i": i} for i in range(N)]
    items[BIG]["step"] = "big"
    config = AgentsConfig(on_run_failure="retry-then-dead-letter", run_failure_restarts=3)
    with CountingService() as service:
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300, restarts=6)
        agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
        source = paced_source(env, [json.dumps(item) for item in items], 20)
        job = agents.from_datastream(source, key_selector=key_of)
        job.apply(Orders(service.url, big=SIZE), store_factory=kafka(aj_kafka_bootstrap, topic))
        job.to_datastream().map(JsonLines(tmp_path / "outputs.jsonl"))
        letters = job.dead_letters().map(lambda d: d.to_json(), output_type=Types.STRING())
        letters.map(JsonLines(tmp_path / "dead.jsonl"))
        env.execute("oversized-result")
        big = service.attempts("big")
        counts = dict(service.counts)
    assert list(big.values()) == [[None]], "the oversized call ran more than once"
    done = {o["i"] for o in JsonLines(tmp_path / "outputs.jsonl").read()}
    assert done == set(range(N)) - {BIG}  # every other output arrived
    assert Counter(counts.values()) == {1: 2 * N}, "a call ran twice"
    dead = {
        (d["key"], d["seq"]): d for d in map(json.loads, JsonLines(tmp_path / "dead.jsonl").read())
    }
    assert list(dead) == [(BIG % KEYS, BIG // KEYS)]
    (letter,) = dead.values()
    assert letter["error_type"] == "actionjournal.durable.errors.PayloadTooLargeError"
    assert "the most kafka journal" in letter["error"]
    store = KafkaStore(
        KafkaStoreConfig(bootstrap_servers=aj_kafka_bootstrap, topic=topic, partitions=4)
    )
    try:
        records = store.read_key("default", "orders", key_id(BIG % KEYS), None)
    finally:
        store.close()
    tries = [r.final for r in records if isinstance(r, RunFailed)]
    assert tries == [False, False, False, True]  # three task restarts, then the dead letter
    (too_large,) = [r for r in records if isinstance(r, CallFinished) and r.error]
    assert too_large.error.type == "actionjournal.durable.errors.PayloadTooLargeError"
    assert re.search(r"encodes to 150000\d bytes, over 99\d{4} bytes", too_large.error.message)
