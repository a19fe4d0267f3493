"""Agents in real PyFlink jobs on a local MiniCluster; calls go to a real HTTP service.

Each test starts at least two jobs (a few seconds each), so there are few of them.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from pyflink.common import JobStatus, Types
from pyflink.datastream import ProcessFunction

from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment, savepoint, stop_with_savepoint
from actionjournal.testing.crash import CrashOnce
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from tests.e2e.agents import TwoSteps, inputs, kafka, key_of, sqlite

pytestmark = [pytest.mark.flink, pytest.mark.slow]
NO_TIMESTAMP = -(2**63)  # what PyFlink hands Python for a record without a timestamp


def build(env, url, elements, per_second, store_factory):
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig())
    source = paced_source(env, elements, per_second)
    job = agents.from_datastream(source, key_selector=key_of)
    return job.apply(TwoSteps(url), store_factory=store_factory).to_datastream()


# Each store on one of Flink's state backends: both backends, both stores, two jobs.
@pytest.mark.parametrize(
    "backend, state_backend",
    [("sqlite", "hashmap"), pytest.param("kafka", "rocksdb", marks=pytest.mark.kafka)],
)
def test_task_failure_mid_run_restores_from_the_checkpoint(
    tmp_path, request, backend, state_backend
):
    n = 40
    if backend == "kafka":
        topic = f"e2e-{uuid.uuid4().hex[:8]}"
        journal = kafka(request.getfixturevalue("aj_kafka_bootstrap"), topic)
    else:
        journal = sqlite(tmp_path / "journal.db")
    # The Python worker is SIGKILLed right after the 25th call result was journaled.
    factory = CrashOnce(str(tmp_path / "crashed"), "after:CallFinished:25", journal)
    with CountingService() as service:
        env = local_env(
            tmp_path / "checkpoints", checkpoint_interval_ms=300, state_backend=state_backend
        )
        sink = JsonLines(tmp_path / "outputs.jsonl")
        build(env, service.url, inputs(n, keys=4), 40, factory).map(sink)
        env.execute("agents-with-a-failure")
        outputs = sink.read()
        counts = dict(service.counts)
    assert (tmp_path / "crashed").exists(), "the failure was not injected"
    assert {o["i"] for o in outputs} == set(range(n))
    assert len(counts) == 2 * n
    assert Counter(counts.values()) == {1: 2 * n}, "a recorded call ran twice"


# Taken on one state backend, restored on the other (a canonical savepoint is the same on
# both): both backends, and moving a job between them.
@pytest.mark.parametrize("before, after", [("hashmap", "rocksdb"), ("rocksdb", "hashmap")])
def test_savepoint_with_runs_in_flight_then_restore_at_parallelism_2(tmp_path, before, after):
    n, keys = 30, 10
    store = sqlite(tmp_path / "journal.db")
    sink = JsonLines(tmp_path / "outputs.jsonl")
    elements = inputs(n, keys)
    with CountingService() as service:
        service.hold("second")  # runs stay in flight, half done, until released
        env = local_env(tmp_path / "checkpoints", parallelism=2, state_backend=before)
        build(env, service.url, elements, 10, store).map(sink)
        client = env.execute_async("agents-before-savepoint")
        deadline = time.monotonic() + 120
        while service.waiting() < 3 and time.monotonic() < deadline:
            time.sleep(0.05)
        # If a savepoint waited for runs to finish, this would never return.
        savepoint_path = stop_with_savepoint(client, tmp_path / "savepoints")
        held_during_savepoint = service.waiting()
        service.release("second")
        service.wait_idle()
        env = local_env(
            tmp_path / "checkpoints-after",
            parallelism=2,
            restore_from=savepoint_path,
            state_backend=after,
        )
        build(env, service.url, elements, 10, store).map(sink)
        env.execute("agents-restored")
        counts = dict(service.counts)
    assert held_during_savepoint >= 3, "no run was in flight when the savepoint was taken"
    assert {o["i"] for o in sink.read()} == set(range(n))
    assert len(counts) == 2 * n
    assert Counter(counts.values()) == {1: 2 * n}, "a call ran twice across the savepoint"


class Stamps(ProcessFunction):
    """Appends each output's event-time timestamp (None when it has none) to a file."""

    def __init__(self, path: str) -> None:
        self.path = path

    def process_element(self, value, ctx):
        stamp = ctx.timestamp()
        with open(self.path, "a") as f:
            f.write(json.dumps({"i": value["i"], "ts": None if stamp == NO_TIMESTAMP else stamp}))
            f.write("\n")
        yield value


def test_outputs_carry_no_timer_timestamp(tmp_path):
    # Outputs leave from timers; a timer's timestamp is not theirs. The end-of-input drain
    # timer's is Long.MAX_VALUE, which a Kafka broker rejects ("Timestamp out of range").
    n = 12
    stamps = tmp_path / "stamps.jsonl"
    with CountingService(delay=0.3) as service:  # runs still in flight when the input ends
        env = local_env()
        build(env, service.url, inputs(n, keys=3), 100, sqlite(tmp_path / "j.db")).process(
            Stamps(str(stamps)), output_type=Types.PICKLED_BYTE_ARRAY()
        )
        env.execute("agents-output-timestamps")
    seen = [json.loads(line) for line in stamps.read_text().splitlines()]
    assert {s["i"] for s in seen} == set(range(n))
    assert [s["ts"] for s in seen] == [None] * n, "outputs carry a timer's timestamp"


def test_a_savepoint_leaves_the_job_running(tmp_path):
    sink = JsonLines(tmp_path / "outputs.jsonl")
    with CountingService() as service:
        env = local_env(tmp_path / "checkpoints")
        build(env, service.url, inputs(1000, keys=4), 20, sqlite(tmp_path / "j.db")).map(sink)
        client = env.execute_async("agents-savepoint")
        try:
            deadline = time.monotonic() + 120
            while not sink.read() and time.monotonic() < deadline:
                time.sleep(0.1)  # running, and past its first outputs
            path = savepoint(client, tmp_path / "savepoints")
            status = client.get_job_status().result()
        finally:
            client.cancel().result()
    assert (Path(path.split(":", 1)[1]) / "_metadata").exists()
    assert status == JobStatus.RUNNING


def test_pyflink_logs_where_set_log_dir_says(tmp_path):
    script = (
        "from actionjournal.flink.function import set_log_dir\n"
        f"set_log_dir({str(tmp_path / 'logs')!r})\n"
        "from pyflink.datastream import StreamExecutionEnvironment\n"
        "StreamExecutionEnvironment.get_execution_environment()\n"
        "try:\n"
        "    set_log_dir('elsewhere')\n"
        "except Exception as exc:\n"
        "    print(type(exc).__name__, exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("ConfigurationError set_log_dir() after PyFlink's JVM started")
    assert list((tmp_path / "logs").glob("flink-*-python-*.log")), "PyFlink logged elsewhere"
