"""Agents in real PyFlink jobs on a local MiniCluster; calls go to a real HTTP service.

Each test starts at least two jobs (a few seconds each), so there are few of them.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter

import pytest

from actionjournal.operator.config import AgentsConfig
from actionjournal.operator.flink import AgentsExecutionEnvironment
from actionjournal.testing.crash import CrashOnce
from actionjournal.testing.flink import JsonLines, local_env, paced_source, stop_with_savepoint
from actionjournal.testing.service import CountingService
from tests.e2e.agents import TwoSteps, inputs, kafka, key_of, sqlite

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def build(env, url, elements, per_second, store_factory):
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig())
    source = paced_source(env, elements, per_second)
    job = agents.from_datastream(source, key_selector=key_of)
    return job.apply(TwoSteps(url), store_factory=store_factory).to_datastream()


@pytest.mark.parametrize("backend", ["sqlite", pytest.param("kafka", marks=pytest.mark.kafka)])
def test_task_failure_mid_run_restores_from_the_checkpoint(tmp_path, request, backend):
    n = 40
    if backend == "kafka":
        topic = f"e2e-{uuid.uuid4().hex[:8]}"
        journal = kafka(request.getfixturevalue("aj_kafka_bootstrap"), topic)
    else:
        journal = sqlite(tmp_path / "journal.db")
    # The Python worker is SIGKILLed right after the 25th call result was journaled.
    factory = CrashOnce(str(tmp_path / "crashed"), "after:CallFinished:25", journal)
    with CountingService() as service:
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300)
        sink = JsonLines(tmp_path / "outputs.jsonl")
        build(env, service.url, inputs(n, keys=4), 40, factory).map(sink)
        env.execute("agents-with-a-failure")
        outputs = sink.read()
        counts = dict(service.counts)
    assert (tmp_path / "crashed").exists(), "the failure was not injected"
    assert {o["i"] for o in outputs} == set(range(n))
    assert len(counts) == 2 * n
    assert Counter(counts.values()) == {1: 2 * n}, "a recorded call ran twice"


def test_savepoint_with_runs_in_flight_then_restore_at_parallelism_2(tmp_path):
    n, keys = 30, 10
    store = sqlite(tmp_path / "journal.db")
    sink = JsonLines(tmp_path / "outputs.jsonl")
    elements = inputs(n, keys)
    with CountingService() as service:
        service.hold("second")  # runs stay in flight, half done, until released
        env = local_env(tmp_path / "checkpoints", parallelism=2)
        build(env, service.url, elements, 10, store).map(sink)
        client = env.execute_async("agents-before-savepoint")
        deadline = time.monotonic() + 120
        while service.waiting() < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        # If a savepoint waited for runs to finish, this would never return.
        savepoint = stop_with_savepoint(client, tmp_path / "savepoints")
        held_during_savepoint = service.waiting()
        service.release("second")
        service.wait_idle()
        env = local_env(tmp_path / "checkpoints-after", parallelism=2, restore_from=savepoint)
        build(env, service.url, elements, 10, store).map(sink)
        env.execute("agents-restored")
        counts = dict(service.counts)
    assert held_during_savepoint >= 3, "no run was in flight when the savepoint was taken"
    assert {o["i"] for o in sink.read()} == set(range(n))
    assert len(counts) == 2 * n
    assert Counter(counts.values()) == {1: 2 * n}, "a call ran twice across the savepoint"
