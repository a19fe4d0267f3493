"""Where the time of a single-key instant run goes, on the Python side of the operator.

The loop the PyFlink operator ran when a key's queued inputs drained (``AgentFunction.on_timer``
at the end of a bounded input, before operator/key_runs.py chained a key's runs on the loop),
without Flink: one key, ``N`` inputs queued first, each run one instant durable call on a
fresh SQLite journal. Each part is timed where it happens:

* thread hops: the worker thread handing a run to the event loop and taking its result back,
  and every ``asyncio.to_thread`` of a run (a sync action's body, a journal write), each
  counted from the call to the thread starting it plus from its end to the loop resuming;
* journal appends: ``append``/``append_all`` of the store (encode, commit, fsync);
* state: decoding and encoding the key's ``KeyState`` as the operator keeps it;
* the run itself: what is left of the run on the loop (the agent, the call, building records).

Run ``python -m benchmarks.per_run`` (``--runs N``); docs/performance.md gives the figures.
"""

from __future__ import annotations

import argparse
import asyncio
import concurrent.futures
import contextlib
import json
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import msgspec

from actionjournal.durable.config import JournalConfig
from actionjournal.operator.engine import AgentEngine, KeyState
from actionjournal.stores import SqliteStore
from benchmarks.flink_jobs import Instant

HOP_THREAD = "hops: loop <-> thread (asyncio.to_thread)"
HOP_LOOP = "hops: worker thread <-> event loop"
APPENDS = "journal appends (encode, commit, fsync)"
STATE = "state reads and writes (KeyState)"
RUN = "the run itself (agent, call, records)"


class Parts:
    def __init__(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.counts: Counter[str] = Counter()

    @contextlib.contextmanager
    def timed(self, part: str, count: str = "") -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[part] += time.perf_counter() - started
            if count:
                self.counts[count] += 1


@contextlib.contextmanager
def instrumented(parts: Parts) -> Iterator[None]:
    """Time every ``asyncio.to_thread`` hop and every append of the SQLite store."""
    to_thread, append_all = asyncio.to_thread, SqliteStore.append_all

    async def timed_to_thread(fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        marks: dict[str, float] = {}

        def body() -> Any:
            marks["start"] = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                marks["end"] = time.perf_counter()

        called = time.perf_counter()
        try:
            return await to_thread(body)
        finally:
            hop = marks["start"] - called + time.perf_counter() - marks["end"]
            parts.seconds[HOP_THREAD] += hop
            parts.counts["to_thread hops"] += 1

    def timed_append_all(self: SqliteStore, records: Any) -> Any:
        parts.counts["records"] += len(records)
        with parts.timed(APPENDS, "commits"):
            return append_all(self, records)

    asyncio.to_thread = timed_to_thread  # type: ignore[assignment]
    SqliteStore.append_all = timed_append_all  # type: ignore[method-assign]
    try:
        yield
    finally:
        asyncio.to_thread = to_thread
        SqliteStore.append_all = append_all  # type: ignore[method-assign]


def measure(runs: int) -> tuple[float, float, Parts]:
    """Wall and CPU seconds per run, and the parts, draining ``runs`` queued inputs."""
    parts = Parts()
    loop = asyncio.new_event_loop()
    loop.set_default_executor(concurrent.futures.ThreadPoolExecutor(16))
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    with tempfile.TemporaryDirectory() as tmp, instrumented(parts):
        engine = AgentEngine(Instant(), SqliteStore(Path(tmp) / "journal.db"), JournalConfig())
        on_loop: dict[str, float] = {}
        run_next = engine.run_next

        async def timed_run_next(*args: Any) -> Any:
            on_loop["start"] = time.perf_counter()
            try:
                return await run_next(*args)
            finally:
                on_loop["end"] = time.perf_counter()

        engine.run_next = timed_run_next  # type: ignore[method-assign]
        key_id = engine.key_id("k")
        data = msgspec.msgpack.encode(KeyState())
        for i in range(runs):  # process_element: every input is queued first
            state = engine.accept(msgspec.msgpack.decode(data, type=KeyState), json.dumps({"i": i}))
            data = msgspec.msgpack.encode(state)
        parts.seconds.clear()
        parts.counts.clear()
        wall, cpu = time.perf_counter(), time.process_time()
        with parts.timed(STATE, "state reads"):
            state = msgspec.msgpack.decode(data, type=KeyState)
        while state.pending:
            handed = time.perf_counter()
            future = asyncio.run_coroutine_threadsafe(engine.run_next("k", key_id, state), loop)
            result = future.result()
            back = time.perf_counter()
            parts.seconds[HOP_LOOP] += on_loop["start"] - handed + back - on_loop["end"]
            parts.seconds[RUN] += on_loop["end"] - on_loop["start"]
            with parts.timed(STATE, "state writes"):  # as flink.py's on_timer, once per run
                state = engine.complete(state, result, key_id)
                data = msgspec.msgpack.encode(state)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        engine.store.close()
    loop.call_soon_threadsafe(loop.stop)
    thread.join()
    parts.seconds[RUN] -= parts.seconds[APPENDS] + parts.seconds[HOP_THREAD]
    return wall / runs, cpu / runs, parts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    args = parser.parse_args()
    measure(20)  # warm up: imports, first connections
    wall, cpu, parts = measure(args.runs)
    print(f"{args.runs} runs of one key: {wall * 1e3:.3f} ms per run, {cpu * 1e3:.3f} ms CPU")
    for part in (HOP_LOOP, HOP_THREAD, APPENDS, STATE, RUN):
        print(f"  {part:45} {parts.seconds[part] / args.runs * 1e3:7.3f} ms")
    counts = ", ".join(f"{n / args.runs:g} {name}" for name, n in sorted(parts.counts.items()))
    print(f"  per run: {counts}")


if __name__ == "__main__":
    main()
