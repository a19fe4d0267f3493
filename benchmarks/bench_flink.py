"""PyFlink operator benchmarks: concurrency of agent runs, throughput and latency of the agent
operator against its durability floor (benchmarks/flink_jobs.py), every side in its own job.

* ``flink.concurrency.200x100ms``: 200 runs over 200 keys, each one durable call that takes
  100 ms at a local HTTP service, at parallelism 1. Ours: the span from the first call's
  arrival to the last call's answer at the service (job start-up excluded); baseline: the
  same 200 calls made one by one. Target: ratio at most 0.1.
* ``flink.key.sequential``: one key, 200 inputs at once, so its runs go one after the other,
  each one instant durable call; ms per run from the first output to the last, as a map
  after the operator reports them (start-up excluded; the input stays open meanwhile, see
  :func:`_per_run_ms`); the median of five such rounds in one job. Baseline: the floor,
  timed the same way. Target: ratio at most 2.
* ``flink.operator.overhead``: the same with 2,000 runs over 100 keys. Target: ratio at most 1.
* ``flink.chat.latency.p50``: one key, 100 messages, each sent when the previous answer came
  out (a socket source fed by the benchmark); each run one durable call of 20 ms. Median of
  the ms from sending a message to its answer leaving the operator, minus the time the call
  itself took. Baseline: the floor, measured the same way. Target: ours at most 3 ms.
* ``flink.latency.irregular.p99``: the same with 100 calls whose durations are drawn between
  50 ms and 2 s (fixed seed), 99th percentile. Target: ours at most 20 ms.
"""

from __future__ import annotations

import contextlib
import json
import math
import random
import socket
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
from pyflink.datastream import DataStream

from actionjournal.testing.flink import paced_source
from actionjournal.testing.service import CountingService
from benchmarks import flink_jobs
from benchmarks.common import entry

ANSWER_TIMEOUT_S = 120  # one answer; job start-up gets START_TIMEOUT_S
START_TIMEOUT_S = 600


def _elements(n: int, keys: int, first: int = 0) -> list[str]:
    return [json.dumps({"k": f"key-{i % keys}", "i": i, "d": 0}) for i in range(first, first + n)]


def _per_run_ms(
    directory: Path, side: str, n: int, keys: int, rounds: int, state_backend: Any = None
) -> list[float]:
    """ms per output between the first and the last output of each of ``rounds`` rounds of
    ``n`` inputs over ``keys`` keys, in one job.

    A round's inputs go to a socket source at once, and the next round's once every answer
    of the round came out. The source stays open until the last round is answered: a bounded
    source would end the input, and the end-of-input drain runs a key's remaining runs in one
    go and emits their outputs together, which is not the cadence of runs in a live job. A
    map after the operator reports each output (start-up excluded).
    """
    batches = [_elements(n, keys, r * n) for r in range(rounds)]
    job = _socket_job(
        directory, side, flink_jobs.Instant(), flink_jobs.instant, batches[0][0], state_backend
    )
    per_run = []
    with job as (inputs, answers):
        feed, _ = inputs.accept()
        with feed, contextlib.ExitStack() as reports:
            lines = None
            for batch in batches:
                feed.sendall("".join(f"{element}\n" for element in batch).encode())
                if lines is None:  # the map connects once its worker opened
                    told, _ = answers.accept()
                    told.settimeout(ANSWER_TIMEOUT_S)
                    reports.enter_context(told)
                    lines = reports.enter_context(told.makefile("r"))
                times = [float(lines.readline().split(" ", 1)[0]) for _ in batch]
                per_run.append((times[-1] - times[0]) / (len(times) - 1) * 1e3)
    return per_run


@contextlib.contextmanager
def _socket_job(
    directory: Path,
    side: str,
    agent,
    call,
    sample: str,
    state_backend: Any = None,
    latency: bool = False,
) -> Iterator[tuple[socket.socket, socket.socket]]:
    """A job of ``side`` (ours, or the floor making ``call``) reading lines from a socket
    source and reporting each output to the benchmark (:class:`flink_jobs.Notify`).

    Yields the listeners the source and the reporting map connect to; once the body closed
    the input, waits for the job to end (cancels it if the body failed).
    """
    directory.mkdir()
    inputs, answers = _listener(), _listener()
    env, agents = flink_jobs.environment(directory, state_backend)
    if latency:
        env.set_buffer_timeout(0)  # records go downstream at once
    source = _socket_source(env, inputs)
    if side == "ours":
        out = flink_jobs.ours(agents, source, agent)
    else:
        out = flink_jobs.floor(directory, source, call, agent, sample)
    out.map(flink_jobs.Notify(answers.getsockname()[1]))
    job = env.execute_async(f"bench {side}")
    try:
        yield inputs, answers
        job.get_job_execution_result().result()
    except BaseException:
        job.cancel()
        raise
    finally:
        inputs.close()
        answers.close()


def _socket_source(env, listener: socket.socket) -> DataStream:
    """Lines the benchmark writes to ``listener``'s connection; the input ends when it closes."""
    port = listener.getsockname()[1]
    return DataStream(
        env._j_stream_execution_environment.socketTextStream("127.0.0.1", port, "\n", 0)
    )


def _throughput(name: str, n: int, keys: int, target: float, rounds: int = 5) -> dict:
    """Median ms per run over ``rounds`` rounds of each side (see :func:`_per_run_ms`)."""
    with tempfile.TemporaryDirectory() as tmp:
        ours = _per_run_ms(Path(tmp) / "ours", "ours", n, keys, rounds)
        floor = _per_run_ms(Path(tmp) / "floor", "floor", n, keys, rounds)
    o, f = statistics.median(ours), statistics.median(floor)
    print(
        f"{name}: {rounds} rounds of {n} runs over {keys} keys, median ms/run: ours {o:.2f} "
        f"{[round(x, 2) for x in ours]}, floor {f:.2f} {[round(x, 2) for x in floor]}"
    )
    return entry(name, "ms/run", o, f, target)


def _listener() -> socket.socket:
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(START_TIMEOUT_S)
    return server


def _added_ms(
    directory: Path, side: str, durations: list[float]
) -> list[tuple[float, float, float]]:
    """Per message: ms from sending it to its answer leaving the operator, minus the call;
    and of that, ms until the call began (the way in) and from its end to the answer (out).

    One key; each message goes to the job's socket source once the previous answer came out
    (a user waiting for each answer). A map after the operator reports every answer. A first
    message, not counted, starts the Python worker.
    """
    asked = enumerate(durations[:1] + durations)
    messages = [json.dumps({"k": "chat", "i": i, "d": d}) for i, d in asked]
    added = []
    job = _socket_job(
        directory, side, flink_jobs.Paused(), flink_jobs.pause_sync, messages[0], latency=True
    )
    with job as (inputs, answers):
        feed, _ = inputs.accept()
        with feed:
            for i, message in enumerate(messages):
                sent = time.time()
                feed.sendall(f"{message}\n".encode())
                if i == 0:  # the map connects once its worker opened, on the first input
                    told, _ = answers.accept()
                    told.settimeout(ANSWER_TIMEOUT_S)
                    lines = told.makefile("r")
                at, answer = lines.readline().split(" ", 1)
                got = json.loads(answer)
                assert got["i"] == i, f"answer {got} to message {i}"
                if i:
                    came = float(at)
                    way_in, way_out = got["entered"] - sent, came - got["done"]
                    added.append(((came - sent - got["took"]) * 1e3, way_in * 1e3, way_out * 1e3))
        told.close()
    return added


def _percentile(samples: list[float], q: float) -> float:
    """Nearest rank."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _latency(name: str, durations: list[float], q: float, target: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        ours = _added_ms(Path(tmp) / "ours", "ours", durations)
        floor = _added_ms(Path(tmp) / "floor", "floor", durations)
    for side, samples in (("ours", ours), ("floor", floor)):
        added, way_in, way_out = ([sample[n] for sample in samples] for n in range(3))
        print(
            f"{name}: {side}: {len(samples)} messages, ms added above the call: "
            f"{', '.join(f'p{p:g} {_percentile(added, p / 100):.1f}' for p in (50, 90, 99))}, "
            f"max {max(added):.1f}; of which p50 {_percentile(way_in, 0.5):.1f} before the call "
            f"began (socket source to the Python function) and {_percentile(way_out, 0.5):.1f} "
            "after it ended (journal, emitting, the map after the operator)"
        )
    o = _percentile([sample[0] for sample in ours], q)
    f = _percentile([sample[0] for sample in floor], q)
    return entry(name, "ms", o, f, target)


def bench_concurrency(ctx) -> dict:
    n = 200
    with tempfile.TemporaryDirectory() as tmp, CountingService(delay=0.1) as service:
        directory = Path(tmp)
        env, agents = flink_jobs.environment(directory)
        elements = [json.dumps({"k": f"key-{i}", "i": i}) for i in range(n)]
        source = paced_source(env, elements, per_second=1_000_000)
        flink_jobs.ours(agents, source, flink_jobs.Remote(service.url))
        env.execute("bench")
        spans = service.spans()
        ours = max(end for _, end in spans) - min(start for start, _ in spans)
        start = time.perf_counter()
        with httpx.Client() as client:
            for i in range(n):
                client.post(f"{service.url}/calls/seq", json={"call_id": f"seq-{i}", "value": i})
        baseline = time.perf_counter() - start
    return entry("flink.concurrency.200x100ms", "s", ours, baseline, target=0.1)


def bench_irregular(ctx) -> dict:
    draw = random.Random(21)
    durations = [round(draw.uniform(0.05, 2.0), 3) for _ in range(100)]
    return _latency("flink.latency.irregular.p99", durations, 0.99, target=20.0)


BENCHMARKS = {
    "flink.concurrency.200x100ms": bench_concurrency,
    "flink.key.sequential": lambda ctx: _throughput("flink.key.sequential", 200, 1, 2.0),
    "flink.operator.overhead": lambda ctx: _throughput("flink.operator.overhead", 2000, 100, 1.0),
    "flink.chat.latency.p50": lambda ctx: _latency(
        "flink.chat.latency.p50", [0.02] * 100, 0.5, target=3.0
    ),
    "flink.latency.irregular.p99": bench_irregular,
}
