"""What a key costs the agent operator: the figures of docs/scale.md ("What a key costs").

    .venv/bin/python -m benchmarks.key_costs [--keys 20000] [--busy 1000] [--only flink]

Not a side-by-side benchmark (no baseline, no target): measurements, printed and written to
benchmarks/results/key_costs.json. Four parts:

* ``flink``: a MiniCluster job (parallelism 1, checkpoints every 2 s, a SQLite journal, one
  instant durable call per run), on each state backend. ``--keys`` inputs of as many keys,
  500 at a time, with savepoints after half of them and after all: keyed state bytes per
  idle key (canonical savepoint and the backend's checkpoint), JVM heap (after full GCs)
  and Python worker memory (RSS), as what the second half added; then ``--busy`` more keys
  whose runs stay in flight: the same per key with a pending run; then the end of input:
  seconds from closing the source to the job's end.
* ``memory``: the agent's Flink function in this process (PyFlink's state and timers faked,
  tests/unit/fake_flink.py): bytes of Python objects it keeps per busy key, and per idle key.
* ``journal``: journal bytes per run (encoded records; SQLite file growth).
* ``recovery``: seconds to read one key's journal after a restart, against the journal's
  size, on SQLite and (with ``--kafka``) a local Kafka broker.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import msgspec
from pyflink.common import Configuration, Types
from pyflink.datastream import DataStream, KeyedProcessFunction
from pyflink.datastream.state import ValueStateDescriptor
from pyflink.java_gateway import get_gateway

from actionjournal import Agent, InputEvent, LocalRunner, OutputEvent, action
from actionjournal.dev.kafka import running_broker
from actionjournal.durable.records import RunCompleted
from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentFunction, AgentsExecutionEnvironment, savepoint
from actionjournal.operator.engine import KeyState, PendingInput
from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import local_env
from benchmarks.flink_jobs import instant, key_of

RESULTS = Path(__file__).parent / "results" / "key_costs.json"


class Held(Agent):
    """One instant durable call per run; an input with ``"hold": path`` waits for that file
    to exist first."""

    uid = "key-costs"

    @action(InputEvent)
    async def handle(self, event, ctx):
        gate = json.loads(event.input).get("hold")
        while gate and not os.path.exists(gate):
            await asyncio.sleep(0.5)
        ctx.send_event(OutputEvent(await ctx.durable_execute_async(instant, event.input)))


def inputs(first: int, n: int, hold: Path | None = None) -> list[str]:
    gate = {"hold": str(hold)} if hold else {}
    return [json.dumps({"k": f"key-{i}", "i": i, "d": 0, **gate}) for i in range(first, first + n)]


class Counter:
    """Counts the job's outputs (a map after the agent reports each over a socket)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.count = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        connection, _ = self.server.accept()
        with connection, connection.makefile("rb") as lines:
            for _ in lines:
                self.count += 1

    def wait(self, n: int, timeout: float = 1800) -> None:
        deadline = time.monotonic() + timeout
        while self.count < n:
            assert time.monotonic() < deadline, f"{self.count} of {n} outputs"
            time.sleep(0.2)


class Report:
    """A map after the agent: one line per output to the benchmark's counter."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connection: socket.socket | None = None

    def __call__(self, value: Any) -> Any:
        if self.connection is None:  # in the worker, on the first output
            self.connection = socket.create_connection(("127.0.0.1", self.port), timeout=600)
        self.connection.sendall(b".\n")
        return value


def tree_bytes(path: str | Path) -> int:
    path = Path(str(path).removeprefix("file:"))
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def jvm_heap_used() -> int:
    """Bytes of the MiniCluster JVM's heap in use after full collections."""
    runtime = get_gateway().jvm.java.lang.Runtime.getRuntime()
    for _ in range(3):
        get_gateway().jvm.java.lang.System.gc()
        time.sleep(0.3)
    return int(runtime.totalMemory() - runtime.freeMemory())


def worker_rss() -> int:
    """Bytes resident in PyFlink's Python workers started under this process."""
    total = 0
    for pid in _descendants(os.getpid()):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            if b"pyflink.fn_execution" not in cmdline:
                continue
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


def _descendants(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        try:
            parent = int(Path(entry, "stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(parent, []).append(int(entry.name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _socket_source(env: Any, listener: socket.socket) -> DataStream:
    port = listener.getsockname()[1]
    return DataStream(
        env._j_stream_execution_environment.socketTextStream("127.0.0.1", port, "\n", 0)
    )


class PlainState(KeyedProcessFunction):
    """PyFlink without actionjournal: 15 bytes of value state per key (an idle key's
    ``KeyState``), the output at once. ``timers``: registering and deleting the two timers
    the agent registers for a run and deletes when its key goes idle; ``fired``: the output
    from a timer that fires at once, after reading the key's state, as the agent's are."""

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def open(self, runtime_context: Any) -> None:
        descriptor = ValueStateDescriptor("plain", Types.PICKLED_BYTE_ARRAY())
        self.state = runtime_context.get_state(descriptor)

    def process_element(self, value: Any, ctx: Any) -> Iterator[Any]:
        self.state.update(b"x" * 15)
        timers, at = ctx.timer_service(), ctx.timer_service().current_processing_time()
        if self.mode == "timers":
            timers.register_event_time_timer(2**63 - 1)
            timers.register_processing_time_timer(at + 60_000)
            timers.delete_event_time_timer(2**63 - 1)
            timers.delete_processing_time_timer(at + 60_000)
        if self.mode == "fired":
            timers.register_processing_time_timer(at)
        else:
            yield value

    def on_timer(self, timestamp: int, ctx: Any) -> Iterator[Any]:
        if self.state.value() is not None:
            self.state.update(b"y" * 15)
            yield ctx.get_current_key()


def flink(state_backend: str, keys: int, busy: int, plain: str = "") -> dict[str, Any]:
    """The MiniCluster measurements on one state backend (see the module docstring); with
    ``plain`` (a mode of :class:`PlainState`), of it instead of the agent (no busy keys)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        gate = directory / "release"
        env = local_env(directory / "checkpoints", checkpoint_interval_ms=2000)
        settings = Configuration()  # not local_env's state_backend: older releases lack it
        settings.set_string("state.backend.type", state_backend)
        settings.set_string("execution.checkpointing.incremental", "true")
        env.configure(settings)
        config = AgentsConfig(store=SqliteStoreConfig(path=str(directory / "journal.db")))
        agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(600)
        counter = Counter()
        source = _socket_source(env, listener)
        if plain:
            function = PlainState(plain)
            out = source.key_by(key_of).process(function, Types.PICKLED_BYTE_ARRAY())
            busy = 0
        else:
            out = agents.from_datastream(source, key_selector=key_of).apply(Held()).to_datastream()
        out.map(Report(counter.server.getsockname()[1]), Types.PICKLED_BYTE_ARRAY())
        client = env.execute_async(f"key costs {state_backend}")
        feed, _ = listener.accept()
        figures: dict[str, Any] = {}
        try:
            half, rss = keys // 2, figures.setdefault("worker_rss_by_keys", [])
            _feed(feed, counter, 0, half, rss)
            first = _sizes(client, directory, "half")
            started = time.monotonic()
            _feed(feed, counter, half, keys - half, rss)
            figures["runs_per_s"] = (keys - half) / (time.monotonic() - started)
            idle = held = _sizes(client, directory, "idle")
            if busy:
                _send(feed, inputs(keys, busy, hold=gate))
                time.sleep(5)  # the inputs reached the agent, which holds their runs
                held = _sizes(client, directory, "busy")
                gate.touch()
                counter.wait(keys + busy)
            time.sleep(3)  # the last runs' state is written
            feed.close()
            closed = time.monotonic()
            client.get_job_execution_result().result()
            figures["end_of_input_s"] = time.monotonic() - closed
        except BaseException:
            client.cancel()
            raise
        finally:
            listener.close()
        for what in ("savepoint", "checkpoint", "heap", "worker_rss"):
            figures[f"{what}_per_idle_key"] = (idle[what] - first[what]) / (keys - half)
            if busy:
                figures[f"{what}_per_busy_key"] = (held[what] - idle[what]) / busy
        return figures


def _send(feed: socket.socket, lines: list[str]) -> None:
    feed.sendall("".join(f"{line}\n" for line in lines).encode())


def _feed(
    feed: socket.socket, counter: Counter, first: int, n: int, rss: list[tuple[int, int]]
) -> None:
    """Inputs of ``n`` new keys, 500 at a time, each 500 once the last ones' outputs all came
    out: what stays is what idle keys cost, not the peak of keys busy at once. Samples the
    Python workers' RSS every 10,000 keys into ``rss``."""
    for start in range(first, first + n, 500):
        _send(feed, inputs(start, min(500, first + n - start)))
        counter.wait(min(start + 500, first + n))
        if (start + 500) % 10_000 == 0:
            rss.append((start + 500, worker_rss()))


def _sizes(client: Any, directory: Path, name: str) -> dict[str, float]:
    time.sleep(2.5)  # a checkpoint after the last change
    path = savepoint(client, directory / f"savepoint-{name}")
    checkpoints = directory / "checkpoints"
    return {
        "savepoint": tree_bytes(path),
        "checkpoint": tree_bytes(checkpoints),
        "heap": jvm_heap_used(),
        "worker_rss": worker_rss(),
    }


def memory(busy: int) -> dict[str, float]:
    """Bytes the agent's Flink function keeps in this process per idle and per busy key.

    Idle: ``busy`` new keys one after the other, each run to its end (after as many to warm
    up). Busy: two rounds of ``busy`` new keys whose runs are all in flight at once; the
    second is measured while its runs wait: the first grows what is sized by the most runs
    at once (the run threads, up to ``max_concurrent_runs``; queues), which later reuse."""
    from tests.sizes import reachable_bytes
    from tests.unit.fake_flink import Subtask

    def size() -> int:
        gc.collect()
        return reachable_bytes(subtask.function, besides=subtask)

    def one_by_one(first: int) -> None:
        for key in range(first, first + busy):
            subtask.element(key, inputs(key, 1)[0])
            subtask.settle(key)

    def held(first: int, gate: Path) -> int:
        for key in range(first, first + busy):
            subtask.element(key, inputs(key, 1, hold=gate)[0])
        time.sleep(1)
        taken = size()
        gate.touch()
        for key in range(first, first + busy):
            subtask.settle(key, timeout=120)
        return taken

    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStoreConfig(path=str(Path(tmp) / "journal.db"))
        subtask = Subtask(AgentFunction(Held(), AgentsConfig(store=store)))
        try:
            one_by_one(0)
            start = size()
            one_by_one(busy)
            idle = size()
            held(2 * busy, Path(tmp) / "first")
            before = size()
            busy_size = held(3 * busy, Path(tmp) / "second")
        finally:
            subtask.close()
    return {
        "python_bytes_per_idle_key": (idle - start) / busy,
        "python_bytes_per_busy_key": (busy_size - before) / busy,
    }


def journal(runs: int = 2000) -> dict[str, float]:
    """Journal bytes per run of the benchmark agent: encoded records, SQLite file growth."""
    store = MemoryStore()
    asyncio.run(LocalRunner(_Instant(), store).run([(f"key-{i}", f"{i}") for i in range(runs)]))
    encoded = sum(len(entry[3]) for entry in store.entries) / runs
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "journal.db"
        sqlite = SqliteStore(path)
        asyncio.run(
            LocalRunner(_Instant(), sqlite).run([(f"key-{i}", f"{i}") for i in range(runs)])
        )
        sqlite.close()
        file_bytes = path.stat().st_size / runs
    state = KeyState(1000, [PendingInput(1000, b"x" * 40)], b"\x80")
    return {
        "record_bytes_per_run": encoded,
        "sqlite_file_bytes_per_run": file_bytes,
        "key_state_bytes_pending_40b_input": len(msgspec.msgpack.encode(state)),
    }


class _Instant(Agent):
    uid = "key-costs"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(instant, json.dumps({"i": event.input}))))


def recovery(sizes: list[int], kafka: str | None) -> dict[str, Any]:
    """Seconds to read a key's journal after a restart (opening the store, then the read),
    against the journal's size (records of 1,000 keys, 4 partitions): a key whose marker is
    1,000 records from the end (``tail``), and a key without a marker (``whole``: a key new
    since the checkpoint, read from its partition's first record)."""
    found: dict[str, Any] = {}
    for records in sizes:
        for name, opened in _stores(kafka, records):
            with opened as (writer, reopen):
                with ThreadPoolExecutor(32) as pool:  # appends grouped, as a busy job's are
                    list(pool.map(writer.append, (_record(i) for i in range(records))))
                marker = writer.append(_record(7))
                with ThreadPoolExecutor(32) as pool:
                    list(pool.map(writer.append, (_record(i) for i in range(1000))))
                writer.close()
                found[f"{name}.{records}.tail_s"] = _timed(reopen, _record(7).key_id, marker)
                found[f"{name}.{records}.whole_s"] = _timed(reopen, "key-new", None)
    return found


def _record(i: int) -> RunCompleted:
    return RunCompleted(
        "bench", "op", 0, f"key-{i % 1000}", i // 1000, at=time.time(), input_digest="d" * 32
    )


def _timed(reopen: Any, key: str, marker: Any) -> float:
    """Median seconds of a store's first read after a restart: opening it, reading the key."""
    samples = []
    for _ in range(5):
        gc.collect()
        started = time.perf_counter()
        store = reopen()
        store.read_key("bench", "op", key, marker)
        samples.append(time.perf_counter() - started)
        store.close()
    return statistics.median(samples)


def _stores(kafka: str | None, records: int) -> Iterator[tuple[str, Any]]:
    @contextlib.contextmanager
    def sqlite() -> Iterator[tuple[Any, Any]]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "journal.db"
            yield SqliteStore(path), lambda: SqliteStore(path)

    yield "sqlite", sqlite()
    if kafka is None:
        return

    @contextlib.contextmanager
    def kafka_store() -> Iterator[tuple[Any, Any]]:
        from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig

        topic = f"key-costs-{records}-{os.getpid()}"
        config = KafkaStoreConfig(bootstrap_servers=kafka, topic=topic, partitions=4)
        yield KafkaStore(config), lambda: KafkaStore(config)

    yield "kafka", kafka_store()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keys", type=int, default=20_000)
    parser.add_argument("--busy", type=int, default=1_000)
    parser.add_argument("--backends", default="hashmap,rocksdb")
    parser.add_argument("--only", default="", help="one part: flink, memory, journal, recovery")
    parser.add_argument(
        "--plain",
        choices=["state", "timers", "fired"],
        default="",
        help="flink: a plain PyFlink job, no actionjournal (with timers: as the agent sets them)",
    )
    parser.add_argument(
        "--kafka", help="bootstrap servers of a broker for the recovery part (default: start one)"
    )
    parser.add_argument("--label", default="", help="stored with the figures (e.g. a commit)")
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {"label": args.label, "keys": args.keys, "busy": args.busy}
    parts = [args.only] if args.only else ["journal", "memory", "recovery", "flink"]
    if "journal" in parts:
        figures["journal"] = journal()
    if "memory" in parts:
        figures["memory"] = memory(args.busy)
    if "recovery" in parts:
        with contextlib.ExitStack() as stack:
            kafka = args.kafka or stack.enter_context(running_broker())
            figures["recovery"] = recovery([10_000, 100_000, 1_000_000], kafka)
    if "flink" in parts:
        for backend in args.backends.split(","):
            name = f"flink.{f'plain-{args.plain}.' if args.plain else ''}{backend}"
            figures[name] = flink(backend, args.keys, args.busy, args.plain)
    print(json.dumps(figures, indent=2))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    runs = json.loads(RESULTS.read_text()) if RESULTS.exists() else []
    RESULTS.write_text(json.dumps([*runs, {"when": time.strftime("%FT%T%z"), **figures}], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
