"""Timers and signals in real PyFlink jobs (issue 34): a worker SIGKILLed during a timer's
run, and a savepoint restored at another parallelism in upgrade mode.

Counts come from the called HTTP service, outside the killed workers. The jobs' source
keeps ticking after the inputs (ticks are dropped before the agent), so a job lives until
its timers fired; the test then cancels it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import pytest
from pyflink.common import Types

from actionjournal import JournalConfig
from actionjournal.flink import AgentsConfig, stop_with_savepoint
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.testing.crash import CrashOnce
from actionjournal.testing.flink import JsonLines, local_env, paced_source
from actionjournal.testing.service import CountingService
from tests.e2e.agents import sqlite
from tests.timer_agents import Waiter

pytestmark = [pytest.mark.flink, pytest.mark.slow]

TICK = "tick"
WAIT_S = 180  # a bound on waiting for a job's outputs, not a speed target


def not_a_tick(element: str) -> bool:
    return element != TICK


def by_key(request: dict) -> str:
    return request["key"]


def start_job(
    tmp_path,
    name: str,
    requests: list[dict],
    agent: Waiter,
    store_factory: Callable,
    *,
    parallelism: int = 1,
    restore_from: str | None = None,
    journal: JournalConfig | None = None,
):
    """The job, running: ``requests`` then ticks for as long as it runs."""
    env = local_env(
        tmp_path / f"checkpoints-{name}",
        checkpoint_interval_ms=300,
        parallelism=parallelism,
        restore_from=restore_from,
    )
    config = AgentsConfig(journal=journal or JournalConfig())
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    elements = [json.dumps(r) for r in requests] + [TICK] * 100_000
    requests_stream = (
        paced_source(env, elements, per_second=20)
        .filter(not_a_tick)
        .map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
    )
    sink = JsonLines(tmp_path / f"outputs-{name}.jsonl")
    agents.from_datastream(requests_stream, key_selector=by_key).apply(
        agent, store_factory=store_factory
    ).to_datastream().map(sink)
    return env.execute_async(name), sink


def wait_for(sink: JsonLines, done: Callable[[list[dict]], bool]) -> list[dict]:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        outputs = sink.read()
        if done(outputs):
            return outputs
        time.sleep(0.2)
    raise AssertionError(f"the job's outputs did not come: {sink.read()}")


def fired(outputs: list[dict]) -> list[int]:
    """The timers that fired, each once, in the order they first fired (a run that
    completed after the restored checkpoint emits again)."""
    return list(dict.fromkeys(o["fired"] for o in outputs if "fired" in o))


def test_a_worker_killed_during_a_timers_run_fires_every_timer_once(tmp_path):
    timers = [{"key": "k", "op": "schedule", "n": n, "delay": 1.0 + 0.4 * n} for n in range(1, 5)]
    with CountingService() as service:
        store = CrashOnce(
            str(tmp_path / "killed"), "after:CallFinished:2", sqlite(tmp_path / "j.db")
        )
        client, sink = start_job(tmp_path, "killed", timers, Waiter(service.url), store)
        try:
            outputs = wait_for(sink, lambda out: len(fired(out)) == 4)
        finally:
            client.cancel().result()
        calls = service.calls_by_name()
    assert (tmp_path / "killed").exists(), "the worker was not killed"
    assert fired(outputs) == [1, 2, 3, 4]  # in due order, those due during the restore too
    assert calls == {f"fired-{n}": 1 for n in range(1, 5)}


def test_a_savepoint_restored_at_another_parallelism_in_upgrade_mode_fires_every_timer_once(
    tmp_path,
):
    """Timers and expected signals are keyed state: after a restore at parallelism 2, with a
    new journal (upgrade mode), each fires once, on the subtask that now owns its key."""
    keys = [f"user-{i}" for i in range(8)]
    requests = [
        r
        for n, key in enumerate(keys)
        for r in (
            {"key": key, "op": "schedule", "n": n, "delay": 20},
            {"key": key, "op": "expect", "timeout": 20},
        )
    ]
    with CountingService() as service:
        agent = Waiter(service.url)
        client, sink = start_job(tmp_path, "before", requests, agent, sqlite(tmp_path / "old.db"))
        wait_for(sink, lambda out: len(out) == len(requests))
        savepoint = stop_with_savepoint(client, tmp_path / "savepoints")
        client, sink = start_job(
            tmp_path,
            "after",
            requests,
            agent,
            sqlite(tmp_path / "new.db"),
            parallelism=2,
            restore_from=savepoint,
            journal=JournalConfig(upgrade="fresh"),
        )
        try:
            outputs = wait_for(
                sink, lambda out: len(fired(out)) == 8 and sum("timed_out" in o for o in out) >= 8
            )
        finally:
            client.cancel().result()
        calls = service.calls_by_name()
    assert sorted(fired(outputs)) == list(range(8))
    assert {name: n for name, n in calls.items() if name.startswith("fired")} == {
        f"fired-{n}": 1 for n in range(8)
    }
    timed_out = {name: n for name, n in calls.items() if name.startswith("timed-out")}
    assert len(timed_out) == 8 and set(timed_out.values()) == {1}
    assert len({o["pid"] for o in outputs if "fired" in o}) == 2  # both subtasks fired some
