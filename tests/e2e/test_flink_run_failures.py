"""The run failure policy in real PyFlink jobs on a local MiniCluster: one poison input among
50 (its second call is refused with HTTP 400, not retryable). Calls go to a real HTTP service.
"""

from __future__ import annotations

import json
from collections import Counter

import pytest
from pyflink.common import Types

from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.testing.crash import CrashOnce
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from tests.e2e.agents import Orders, key_of, sqlite

pytestmark = [pytest.mark.flink, pytest.mark.slow]

N, KEYS, POISON = 50, 5, 17  # the poison input is key 2, seq 3


def elements() -> list[str]:
    items = [{"k": i % KEYS, "i": i} for i in range(N)]
    items[POISON]["step"] = "refuse"
    return [json.dumps(item) for item in items]


def build(env, url, config, store_factory):
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    source = paced_source(env, elements(), 50)
    job = agents.from_datastream(source, key_selector=key_of)
    outputs = job.apply(Orders(url), store_factory=store_factory).to_datastream()
    return job, outputs


def test_dead_letter_finishes_the_job_with_49_outputs_and_1_dead_letter(tmp_path):
    journal = sqlite(tmp_path / "journal.db")
    # A later failure: the worker is SIGKILLed right after the dead letter was journaled.
    factory = CrashOnce(str(tmp_path / "crashed"), "after:RunFailed:1", journal)
    with CountingService() as service:
        service.fail("refuse", times=None, status=400)
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300)
        job, outputs = build(env, service.url, AgentsConfig(on_run_failure="dead-letter"), factory)
        outputs.map(JsonLines(tmp_path / "outputs.jsonl"))
        letters = job.dead_letters().map(lambda d: d.to_json(), output_type=Types.STRING())
        letters.map(JsonLines(tmp_path / "dead.jsonl"))
        env.execute("poison-dead-letter")
        counts = dict(service.counts)
        refused = service.attempts("refuse")
        firsts = service.attempts("first")
    assert (tmp_path / "crashed").exists(), "the later failure was not injected"
    done = {o["i"] for o in JsonLines(tmp_path / "outputs.jsonl").read()}
    assert done == set(range(N)) - {POISON}  # 49 outputs
    dead = {
        (d["key"], d["seq"]): d for d in map(json.loads, JsonLines(tmp_path / "dead.jsonl").read())
    }
    assert list(dead) == [(POISON % KEYS, POISON // KEYS)]  # 1 dead letter (at least once)
    (letter,) = dead.values()
    assert json.loads(letter["input"])["i"] == POISON
    assert "durable call tests.e2e.agents:call_service" in letter["error"]
    assert letter["error_type"] == "httpx.HTTPStatusError"
    # The poison run's finished call and its refused one: never repeated, the kill included.
    assert list(refused.values()) == [[None]]
    assert len(firsts) == N and Counter(len(a) for a in firsts.values()) == {1: N}
    assert Counter(counts.values()) == {1: 2 * N - 1}, "a call ran twice"


def test_a_python_map_chained_after_the_agent_gets_its_outputs_only(tmp_path):
    """Dead letters nobody reads stay out of the next Python operator, which PyFlink chains
    with the agent into one Python worker (whatever the agent yields reaches it)."""
    with CountingService() as service:
        service.fail("refuse", times=None, status=400)
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300)
        config = AgentsConfig(on_run_failure="dead-letter")
        _, outputs = build(env, service.url, config, sqlite(tmp_path / "journal.db"))
        outputs.map(JsonLines(tmp_path / "outputs.jsonl"))
        plan = json.loads(env.get_execution_plan())
        env.execute("poison-chained")
    chained = [n["contents"] for n in plan["nodes"] if "agent" in n["contents"]]
    assert len(chained) == 1 and "Map" in chained[0], plan["nodes"]
    done = [o["i"] for o in JsonLines(tmp_path / "outputs.jsonl").read()]
    assert set(done) == set(range(N)) - {POISON}


def test_fail_fails_the_job_naming_the_key_and_the_call(tmp_path):
    with CountingService() as service:
        service.fail("refuse", times=None, status=400)
        env = local_env(tmp_path / "checkpoints", checkpoint_interval_ms=300, restarts=1)
        _, outputs = build(env, service.url, AgentsConfig(), sqlite(tmp_path / "journal.db"))
        outputs.map(JsonLines(tmp_path / "outputs.jsonl"))
        with pytest.raises(Exception) as failed:
            env.execute("poison-fail")
        refused = service.attempts("refuse")
    text = str(failed.value)
    assert f"action handle failed for key {POISON % KEYS} seq {POISON // KEYS}" in text
    assert "durable call tests.e2e.agents:call_service (call id" in text
    # The job fails after its one restart: the run ran again and replayed the failure.
    assert "replaying its journaled failure" in text
    assert "The task fails" in text
    assert list(refused.values()) == [[None]]  # the restart replayed it, never re-ran it
