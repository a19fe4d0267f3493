"""PyFlink operator benchmarks: concurrency of agent runs, and the operator's overhead.

* ``flink.concurrency.200x100ms``: 200 runs over 200 keys, each one durable call that
  takes 100 ms at a local HTTP service, at parallelism 1. Ours: the span from the first
  call's arrival to the last call's answer at the service (job start-up excluded);
  baseline: the same 200 calls made one by one. Target: ratio at most 0.1.
* ``flink.operator.overhead``: runs whose durable call is instant. Ours: the durable agent
  operator on SQLite; baseline: a plain ``KeyedProcessFunction`` making the same call in
  ``process_element``. Each side is timed inside its job, from its first output to its last
  (a ``MapFunction`` chained after the operator, in the same Python worker), so job start-up
  is excluded. Target: ratio at most 1.5.
"""

from __future__ import annotations

import functools
import json
import tempfile
import time
from pathlib import Path

import httpx
from pyflink.common import Types
from pyflink.datastream import KeyedProcessFunction, MapFunction

from actionjournal import Agent, InputEvent, OutputEvent, action, current_call
from actionjournal.operator.config import AgentsConfig
from actionjournal.operator.flink import AgentsExecutionEnvironment
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import local_env, paced_source
from actionjournal.testing.service import CountingService
from benchmarks.common import entry


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
    return value


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


class Plain(KeyedProcessFunction):
    def process_element(self, value, ctx):
        yield instant(value)


def _key(element: str) -> str:
    return json.loads(element)["k"]


class Stamp(MapFunction):
    """Writes the times of the first and last output it saw to ``path`` when the job ends."""

    def __init__(self, path: str) -> None:
        self.path = path

    def open(self, runtime_context) -> None:
        self.first = self.last = None
        self.count = 0

    def map(self, value):
        self.last = time.perf_counter()
        self.first = self.first or self.last
        self.count += 1
        return value

    def close(self) -> None:
        Path(self.path).write_text(json.dumps([self.first, self.last, self.count]))


def _timed(env, out, directory: Path, n: int) -> float:
    """Seconds per output between a job's first and last output, measured in the worker."""
    stamps = directory / "stamps.json"
    out.map(Stamp(str(stamps)))
    env.execute("bench")
    first, last, count = json.loads(stamps.read_text())
    assert count == n, f"{count} outputs for {n} inputs"
    return (last - first) / (n - 1)


def _agent_job(directory: Path, agent: Agent, elements: list[str]) -> float:
    env = local_env()
    config = AgentsConfig(store=SqliteStoreConfig(path=str(directory / "journal.db")))
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    source = paced_source(env, elements, per_second=1_000_000)
    out = agents.from_datastream(source, key_selector=_key).apply(agent).to_datastream()
    return _timed(env, out, directory, len(elements))


def _plain_job(directory: Path, elements: list[str]) -> float:
    env = local_env()
    source = paced_source(env, elements, per_second=1_000_000)
    out = source.key_by(_key).process(Plain(), output_type=Types.STRING())
    return _timed(env, out, directory, len(elements))


def _elements(n: int, keys: int) -> list[str]:
    return [json.dumps({"k": f"key-{i % keys}", "i": i}) for i in range(n)]


def bench_concurrency(ctx) -> dict:
    n = 200
    with tempfile.TemporaryDirectory() as tmp, CountingService(delay=0.1) as service:
        _agent_job(Path(tmp), Remote(service.url), _elements(n, n))
        spans = service.spans()
        ours = max(end for _, end in spans) - min(start for start, _ in spans)
        start = time.perf_counter()
        with httpx.Client() as client:
            for i in range(n):
                client.post(f"{service.url}/calls/seq", json={"call_id": f"seq-{i}", "value": i})
        baseline = time.perf_counter() - start
    return entry("flink.concurrency.200x100ms", "s", ours, baseline, target=0.1)


def bench_overhead(ctx) -> dict:
    n, keys = 2000, 100
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "ours").mkdir()
        (Path(tmp) / "plain").mkdir()
        ours = _agent_job(Path(tmp) / "ours", Instant(), _elements(n, keys)) * 1e3
        baseline = _plain_job(Path(tmp) / "plain", _elements(n, keys)) * 1e3
    return entry("flink.operator.overhead", "ms/run", ours, baseline, target=1.5)


BENCHMARKS = {
    "flink.concurrency.200x100ms": bench_concurrency,
    "flink.operator.overhead": bench_overhead,
}
