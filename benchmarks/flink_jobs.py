"""The PyFlink jobs the Flink benchmarks time: our agent operator, and its durability floor.

The floor (:class:`SyncJournal`) is a plain ``KeyedProcessFunction`` that makes the same call
and writes the same journal records (``CallFinished``, ``ActionCompleted``, ``RunCompleted``,
taken from a run of the agent) to the same kind of SQLite store, one synchronous append after
the other, in ``process_element``: what durability costs without our operator.

Inputs are JSON strings ``{"k": key, "i": index, "d": seconds}``; a run's output is the
call's answer, ``{"i": index, "took": seconds the call itself took}``, and for the calls
that pause, when the call began and ended (``entered``, ``done``: wall clock).
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import time
from pathlib import Path
from typing import Literal

import httpx
import msgspec
from pyflink.common import Types
from pyflink.datastream import DataStream, KeyedProcessFunction, MapFunction

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action, current_call
from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import ActionCompleted, CallFinished, RunCompleted
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import local_env


@functools.cache
def _client() -> httpx.Client:
    """One client per worker, as the baseline uses: a new one per call costs milliseconds of
    CPU (TLS context) that 200 concurrent calls would spend holding the GIL."""
    return httpx.Client(timeout=60, limits=httpx.Limits(max_connections=256))


def call_service(url: str, value: str) -> str:
    reply = _client().post(
        f"{url}/calls/work", json={"call_id": current_call().call_id, "value": value}
    )
    return reply.json()["value"]


def instant(value: str) -> str:
    return json.dumps({"i": json.loads(value)["i"], "took": 0.0})


async def pause(value: str) -> str:
    """A call that takes the input's ``d`` seconds (an LLM answering), timed by itself."""
    asked = json.loads(value)
    entered, started = time.time(), time.perf_counter()
    await asyncio.sleep(asked["d"])
    took = time.perf_counter() - started
    return json.dumps({"i": asked["i"], "took": took, "entered": entered, "done": time.time()})


def pause_sync(value: str) -> str:
    asked = json.loads(value)
    entered, started = time.time(), time.perf_counter()
    time.sleep(asked["d"])
    took = time.perf_counter() - started
    return json.dumps({"i": asked["i"], "took": took, "entered": entered, "done": time.time()})


class Remote(Agent):
    uid = "bench-remote"

    def __init__(self, url: str) -> None:
        self.url = url

    @action(InputEvent)
    async def handle(self, event, ctx):
        ctx.send_event(
            OutputEvent(await ctx.durable_execute_async(call_service, self.url, event.input))
        )


class Instant(Agent):
    uid = "bench-instant"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(instant, event.input)))


class Paused(Agent):
    uid = "bench-paused"

    @action(InputEvent)
    async def handle(self, event, ctx):
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(pause, event.input)))


def journal_of_one_run(agent: Agent, value: str) -> list[bytes]:
    """The records one run of ``agent`` writes, encoded: the floor writes the same ones."""
    store = MemoryStore()
    asyncio.run(LocalRunner(agent, store).run([("template", value)]))
    records = [entry[3] for entry in store.entries]
    kinds = [type(RecordCodec().decode(r)) for r in records]
    assert kinds == [CallFinished, ActionCompleted, RunCompleted], kinds
    return records


class SyncJournal(KeyedProcessFunction):
    """The durability floor: the call, then its three records appended one by one."""

    def __init__(self, path: str, call, records: list[bytes]) -> None:
        self.path = path
        self.call = call
        self.records = records

    def open(self, runtime_context) -> None:
        self.store = SqliteStore(self.path)
        self.values = JournalConfig().value_codec()
        codec = RecordCodec()
        self.finished, self.completed, self.run = (codec.decode(r) for r in self.records)
        self.seqs: dict[str, int] = {}

    def close(self) -> None:
        self.store.close()

    def process_element(self, value, ctx):
        kid = key_id(ctx.get_current_key())
        seq = self.seqs.get(kid, 0)
        self.seqs[kid] = seq + 1
        replace = msgspec.structs.replace
        started = time.time()
        answer = self.call(value)
        done = time.time()
        value, took = self.values.encode(answer), done - started
        self.store.append(
            replace(self.finished, key_id=kid, seq=seq, value=value, at=done, duration=took)
        )
        output = self.values.encode({"output": answer})
        event = replace(self.completed.outputs[0], attributes=output)
        self.store.append(
            replace(self.completed, key_id=kid, seq=seq, outputs=[event], at=time.time())
        )
        self.store.append(replace(self.run, key_id=kid, seq=seq, at=time.time()))
        yield answer


def key_of(element: str) -> str:
    return json.loads(element)["k"]


def environment(
    directory: Path, state_backend: Literal["hashmap", "rocksdb"] | None = None
) -> tuple[object, AgentsExecutionEnvironment]:
    """A local environment with the settings our operator gives a job, for both sides; with
    a ``state_backend``, checkpoints every 2 s on it (else none, on the heap)."""
    if state_backend is None:
        env = local_env()
    else:
        env = local_env(
            directory / "checkpoints", checkpoint_interval_ms=2000, state_backend=state_backend
        )
    config = AgentsConfig(store=SqliteStoreConfig(path=str(directory / "journal.db")))
    return env, AgentsExecutionEnvironment.get_execution_environment(env, config)


def ours(agents: AgentsExecutionEnvironment, source: DataStream, agent: Agent) -> DataStream:
    return agents.from_datastream(source, key_selector=key_of).apply(agent).to_datastream()


def floor(directory: Path, source: DataStream, call, agent: Agent, sample: str) -> DataStream:
    journal = str(directory / "journal.db")
    function = SyncJournal(journal, call, journal_of_one_run(agent, sample))
    return source.key_by(key_of).process(function, output_type=Types.STRING())


class Notify(MapFunction):
    """Tells the benchmark, over a local socket, when each output came out (wall clock)."""

    def __init__(self, port: int) -> None:
        self.port = port

    def open(self, runtime_context) -> None:
        self.connection = socket.create_connection(("127.0.0.1", self.port), timeout=600)

    def map(self, value):
        self.connection.sendall(f"{time.time()!r} {value}\n".encode())
        return value

    def close(self) -> None:
        self.connection.close()
