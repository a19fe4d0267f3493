"""A lone input reaches the agent at once, not at the bundle's next time check.

PyFlink hands a Python operator its inputs when a bundle finishes, which a periodic check
does once the last finish is a bundle time (``poll_interval_ms``) old: a message that
comes alone waits up to twice that, in the key selector's operator and again in the
agent's. Both of actionjournal's operators finish a lone input's bundle at once
(LoneInputs.java). With a bundle time of 1 s, each message's call starts within a
quarter of a second of its sending (it takes milliseconds). Were either operator to wait
for its checks (a wait spread over the second), all six counted messages would make it
by chance about once in 4,000 runs.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from pyflink.datastream import DataStream

from actionjournal import Agent, InputEvent, OutputEvent, action
from actionjournal.operator.config import AgentsConfig
from actionjournal.operator.flink import AgentsExecutionEnvironment
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import JsonLines, local_env

pytestmark = [pytest.mark.flink, pytest.mark.slow]

BUNDLE_MS = 1000
MESSAGES = 7  # the first, which starts the Python workers, is not counted


def started(path: str, i: int) -> int:
    with open(path, "a") as f:
        f.write(f"{i} {time.time()}\n")
    return i


class Stamps(Agent):
    uid = "stamps"

    def __init__(self, path: str) -> None:
        self.path = path

    @action(InputEvent)
    async def handle(self, event, ctx):
        i = await ctx.durable_execute_async(started, self.path, json.loads(event.input)["i"])
        ctx.send_event(OutputEvent(i))


def key_of(element: str) -> str:
    return json.loads(element)["k"]


def wait_for(sink: JsonLines, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(sink.read()) < count:
        assert time.monotonic() < deadline, f"outputs: {sink.read()}, expected {count}"
        time.sleep(0.02)


def test_a_lone_message_starts_its_run_without_waiting_for_the_bundle_time(tmp_path: Path):
    env = local_env()
    config = AgentsConfig(
        store=SqliteStoreConfig(path=str(tmp_path / "journal.db")), poll_interval_ms=BUNDLE_MS
    )
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(120)
    port = listener.getsockname()[1]
    source = DataStream(
        env._j_stream_execution_environment.socketTextStream("127.0.0.1", port, "\n", 0)
    )
    stamps, sink = tmp_path / "started", JsonLines(tmp_path / "outputs.jsonl")
    job_stream = agents.from_datastream(source, key_selector=key_of)
    job_stream.apply(Stamps(str(stamps))).to_datastream().map(sink)
    job = env.execute_async("lone inputs")
    sent = {}
    try:
        feed, _ = listener.accept()
        with feed:
            for i in range(MESSAGES):
                time.sleep(BUNDLE_MS / 1000 * 1.2)  # alone: more than a bundle time after the last
                sent[i] = time.time()
                feed.sendall(json.dumps({"k": "user", "i": i}).encode() + b"\n")
                wait_for(sink, i + 1)
        job.get_job_execution_result().result()
    except BaseException:
        job.cancel()
        raise
    finally:
        listener.close()

    assert sorted(sink.read()) == list(range(MESSAGES))
    began = {
        int(i): float(t) for i, t in (line.split() for line in stamps.read_text().splitlines())
    }
    waits = {i: round(began[i] - sent[i], 3) for i in range(1, MESSAGES)}
    assert all(wait < BUNDLE_MS / 1000 / 4 for wait in waits.values()), (
        f"seconds from sending each message to its call's start: {waits}"
    )
