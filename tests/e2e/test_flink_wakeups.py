"""Finished runs are pushed to the agent operator, not polled for.

A run that takes far longer than the key's usual runs is emitted when it finishes: the
Python function reports the key to the draining operator (RunWakeups.java), which fires
the key's timer at once. Counted in the subtask's stats: how many runs were reported as
they finished, and how many timers looked at a run and found it still running (polls).
"""

from __future__ import annotations

import json
import time

import pytest

from actionjournal import Agent, InputEvent, OutputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import JsonLines, local_env, paced_source

pytestmark = [pytest.mark.flink, pytest.mark.slow]


def pause(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


class Pauses(Agent):
    uid = "pauses"

    @action(InputEvent)
    async def handle(self, event, ctx):
        item = json.loads(event.input)
        await ctx.durable_execute_async(pause, item["pause"])
        ctx.send_event(OutputEvent(item["i"]))


def same_key(element: str) -> str:
    return "k"


def test_a_run_much_slower_than_usual_is_emitted_without_a_poll(tmp_path):
    # Ten instant runs make the usual run take milliseconds; the slow one takes 250 ms.
    # Polling would look first after the usual duration, then every quarter of the time so
    # far. Pushed, every run is reported as it finishes. (Polls are counted too, but not
    # asserted: a busy key's resume timer, a second ahead, meets a run still running when
    # the machine is loaded enough to stretch a run past it.)
    pauses = [0.0] * 10 + [0.25] + [0.0] * 3
    elements = [json.dumps({"i": i, "pause": p}) for i, p in enumerate(pauses)]
    stats = tmp_path / "stats.jsonl"
    sink = JsonLines(tmp_path / "outputs.jsonl")
    env = local_env()
    config = AgentsConfig(
        store=SqliteStoreConfig(path=str(tmp_path / "journal.db")), stats_file=str(stats)
    )
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    source = paced_source(env, elements, per_second=10)
    agents.from_datastream(source, key_selector=same_key).apply(Pauses()).to_datastream().map(sink)
    env.execute("wakeups")

    assert sorted(sink.read()) == list(range(len(pauses)))
    [counts] = [json.loads(line) for line in stats.read_text().splitlines()]
    assert counts["run_wakeups"] == len(pauses), f"finished runs not reported: {counts}"
