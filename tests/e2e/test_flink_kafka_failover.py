"""A PyFlink job journaling to three real brokers (RF 3, min ISR 2, acks=all) while the
leader of the journal's partitions is SIGKILLed: the job goes on (or fails and recovers by
itself), every input has its output, and the counting service saw no durable call twice.
"""

from __future__ import annotations

import functools
import time

import pytest

from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores import open_store
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from tests.e2e.agents import Orders, inputs, key_of

pytestmark = [pytest.mark.flink, pytest.mark.slow, pytest.mark.kafka]

N, KEYS = 120, 12


def test_a_leader_sigkill_while_a_flink_job_appends(
    tmp_path, aj_kafka_cluster, aj_kafka_replicated
):
    journal = aj_kafka_replicated
    store = functools.partial(open_store, journal)
    with CountingService(delay=0.005) as service:
        env = local_env(tmp_path / "checkpoints", restarts=5)
        agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig())
        job = agents.from_datastream(paced_source(env, inputs(N, KEYS), 12), key_selector=key_of)
        sink = JsonLines(tmp_path / "outputs.jsonl")
        job.apply(Orders(service.url), store_factory=store).to_datastream().map(sink)
        client = env.execute_async("kafka-leader-kill")
        deadline = time.monotonic() + 600  # a bound, not a speed claim: the machine may be busy
        while len(sink.read()) < N // 3 and time.monotonic() < deadline:
            assert not client.get_job_status().result().is_globally_terminal_state()
            time.sleep(0.2)
        leader = aj_kafka_cluster.leader(journal.topic, 0)
        aj_kafka_cluster.kill_broker(leader)
        killed_with = len(sink.read())
        client.get_job_execution_result().result()  # raises if the job failed for good
        outputs = sink.read()
        counts = dict(service.counts)
    assert killed_with < N, "the job ended before the kill: make it longer"
    # At least once downstream (a restart replays outputs after its checkpoint): by input.
    assert sorted({o["i"] for o in outputs}) == list(range(N)), "an input has no output"
    twice = {call: n for call, n in counts.items() if n > 1}
    assert not twice, f"calls run twice: {twice}"
    assert len(counts) == 2 * N
    print(f"leader {leader} killed after {killed_with} of {N} outputs")
