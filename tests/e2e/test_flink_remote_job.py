"""Remote agent runs in a real PyFlink job whose Python worker is SIGKILLed mid-run.

After Flink restores the checkpoint, every interrupted call is settled by probing the
remote thread (running: re-attach; completed: read the result; not started: submit):
the remote service must see exactly one turn per thread.
"""

from __future__ import annotations

import json

import pytest
from pyflink.common import Types

from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.reconcilers import RemoteAgentJob
from actionjournal.testing.crash import CrashOnce
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.remote_agents import RemoteAgentService
from tests.e2e.agents import sqlite
from tests.remote_job_agent import AGENT, Researcher

pytestmark = [pytest.mark.flink, pytest.mark.slow]


class ByUser:
    """Key selector: question i belongs to user i % keys (picklable, for the workers)."""

    def __init__(self, keys: int) -> None:
        self.keys = keys

    def __call__(self, question: dict) -> str:
        return f"user_{question['id'] % self.keys}"


# A service of another common shape: {"input": ...} bodies, done/error end events, and
# 404 for a thread without a run (RemoteAgentJob takes that 404 as not_started).
REST_SHAPE = {"message_field": "input", "completed_event": "done", "failed_event": "error"}


def run_job(
    tmp_path,
    n: int,
    keys: int,
    crash_at: str,
    config: AgentsConfig | None = None,
    shape: dict | None = None,
) -> tuple[list, dict]:
    elements = [json.dumps({"id": i, "text": f"question {i}"}) for i in range(n)]
    store = CrashOnce(str(tmp_path / "killed"), crash_at, sqlite(tmp_path / "journal.db"))
    sink = JsonLines(tmp_path / "outputs.jsonl")
    shape = shape or {}
    rest = {"unknown_thread_404": True} if shape else {}
    with RemoteAgentService(run_seconds=1.5, **shape, **rest) as service:
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300)
        agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
        questions = paced_source(env, elements, per_second=10).map(
            json.loads, output_type=Types.PICKLED_BYTE_ARRAY()
        )
        job = RemoteAgentJob(service.url, AGENT, poll_interval=0.1, **shape)
        agents.from_datastream(questions, key_selector=ByUser(keys)).apply(
            Researcher(job), store_factory=store
        ).to_datastream().map(sink)
        env.execute("remote-jobs-with-a-killed-worker")
        turns = dict(service.turns)
    assert (tmp_path / "killed").exists(), "the worker was not killed"
    return sink.read(), turns


def test_worker_killed_while_remote_runs_are_in_flight(tmp_path):
    # Killed right after the 4th call journaled its start: earlier runs are still
    # running at the service, the 4th was never submitted; every key gets more input.
    # The service is of the other shape, so recovery gets 404 and `done` events.
    n = 20
    outputs, turns = run_job(tmp_path, n, keys=4, crash_at="after:CallStarted:4", shape=REST_SHAPE)
    assert {o["id"] for o in outputs} == set(range(n))
    assert len(turns) == n
    assert set(turns.values()) == {1}, f"a finished remote thread was posted again: {turns}"


@pytest.mark.parametrize("timers", ["drain", "bundle-of-one"])
def test_a_key_without_later_input_resumes_after_a_failover(tmp_path, timers):
    # Unique keys: nothing but a checkpointed timer can resume a key after the restore.
    n = 10
    config = AgentsConfig(checkpoint_timers=timers)
    outputs, turns = run_job(tmp_path, n, keys=n, crash_at="after:CallStarted:6", config=config)
    assert {o["id"] for o in outputs} == set(range(n))
    assert set(turns.values()) == {1}
