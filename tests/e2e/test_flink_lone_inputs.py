"""A lone input reaches the agent's key selector at once, not at the bundle's next time check.

PyFlink hands a Python operator its inputs when a bundle finishes, which a periodic check
does once the last finish is a bundle time (``poll_interval_ms``) old: a message that
comes alone waits up to twice that in the key selector's operator before the agent's
operator even sees it. actionjournal's key selector operator (KeyByProcessOperator.java)
finishes a lone input's bundle at once. With a bundle time of 1 s, each message reaches
the key selector within a quarter of a second of its sending (it takes milliseconds);
waiting for the checks (a wait spread over the second or more), all six counted messages
would make it by chance about once in 4,000 runs.
"""

from __future__ import annotations

import json
import socket
import time
from pathlib import Path

import pytest
from pyflink.datastream import DataStream

from actionjournal import Agent, InputEvent, OutputEvent, action
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import JsonLines, local_env

pytestmark = [pytest.mark.flink, pytest.mark.slow]

BUNDLE_MS = 1000
MESSAGES = 7  # the first, which starts the Python workers, is not counted


def echo(i: int) -> int:
    return i


class Echo(Agent):
    uid = "echo"

    @action(InputEvent)
    async def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(await ctx.durable_execute_async(echo, json.loads(event.input)["i"]))
        )


class StampedKey:
    """The key selector, noting when it saw each message."""

    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(self, element: str) -> str:
        item = json.loads(element)
        with open(self.path, "a") as f:
            f.write(f"{item['i']} {time.time()}\n")
        return item["k"]


def wait_for(sink: JsonLines, count: int) -> None:
    deadline = time.monotonic() + 60
    while len(sink.read()) < count:
        assert time.monotonic() < deadline, f"outputs: {sink.read()}, expected {count}"
        time.sleep(0.02)


def test_a_lone_message_is_keyed_without_waiting_for_the_bundle_time(tmp_path: Path):
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
    stamps, sink = tmp_path / "keyed", JsonLines(tmp_path / "outputs.jsonl")
    job_stream = agents.from_datastream(source, key_selector=StampedKey(str(stamps)))
    job_stream.apply(Echo()).to_datastream().map(sink)
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
    keyed = {
        int(i): float(t) for i, t in (line.split() for line in stamps.read_text().splitlines())
    }
    waits = {i: round(keyed[i] - sent[i], 3) for i in range(1, MESSAGES)}
    assert all(wait < BUNDLE_MS / 1000 / 4 for wait in waits.values()), (
        f"seconds from sending each message to its key selector: {waits}"
    )
