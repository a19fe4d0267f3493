"""Fluss store benchmarks against a real cluster, each side by side with raw pyfluss.

Entries (run with ``make bench BENCH=fluss.``, or ``python -m benchmarks.bench_fluss
[BOOTSTRAP]``; ``FLUSS_BOOTSTRAP`` picks an existing cluster, else a private one starts):

* ``fluss.append.p50`` / ``.p99``: one append of a ~200-byte ``CallFinished`` (what a durable
  call journals) through the store vs a raw pyfluss ``append(row)`` + ``wait()`` of the same
  row with the same writer settings (acks=all, idempotent, no batching delay), interleaved so
  both see the same cluster. A run's last record, ``RunCompleted``, also has its offset
  probed for the marker keyed state keeps (pyfluss does not report it): one more round trip
  to the bucket leader, once per run. It is measured too and printed separately, next to
  "raw + offset probe".
* ``fluss.recovery.read``: records/s that ``read_key`` reads, decodes and indexes to recover
  every key of one bucket, vs a raw Arrow scan of the same offsets (no decoding).
* ``fluss.recovery.read.pybytes``: the same reads vs the same raw scan that also makes each
  record's bytes a Python ``bytes`` object (no decoding): the floor of any reader that hands
  records to Python.
* ``fluss.recovery.read.decoded``: the same reads vs the same raw scan that also decodes
  each record (one MessagePack call per batch): the floor of any reader that hands journal
  records to Python.

Every benchmark uses its own new table with the store's default 64 buckets.
"""

from __future__ import annotations

import asyncio
import gc
import os
import statistics
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

import fluss
import pyarrow as pa

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import CallFinished, RunCompleted
from actionjournal.stores.fluss import FlussStore, FlussStoreConfig
from benchmarks.common import entry, timed_recovery

RECORD_BYTES = 200


def record(key: str, seq: int) -> RunCompleted:
    """A record whose envelope is about RECORD_BYTES long."""
    digest = "x" * (RECORD_BYTES - 40 - len(key))
    return RunCompleted("bench", "op", 0, key, seq, at=time.time(), input_digest=digest)


def call_record(key: str, seq: int) -> CallFinished:
    """A durable call's result whose envelope is about RECORD_BYTES long."""
    value = b"x" * (RECORD_BYTES - 110 - len(key))
    return CallFinished(
        "bench", "op", 0, key, seq, action_id="a" * 16, index=0, call_id="c" * 16,
        function_id="bench:call", durable_id=None, arg_digest="d" * 16, value=value,
        error=None, at=time.time(), duration=0.001,
    )  # fmt: skip


def _store(bootstrap: str, table: str | None = None) -> FlussStore:
    table = table or f"bench_{uuid.uuid4().hex[:12]}"
    return FlussStore(FlussStoreConfig(bootstrap_servers=bootstrap, table=table))


class _Raw:
    """A plain pyfluss client on its own event loop in the calling thread."""

    def __init__(self, bootstrap: str, table: str, **settings: str) -> None:
        self.loop = asyncio.new_event_loop()
        config = fluss.Config({"bootstrap.servers": bootstrap, **settings})
        self.conn = self.run(lambda: fluss.FlussConnection.create(config))
        path = fluss.TablePath("actionjournal", table)
        self.table = self.run(lambda: self.conn.get_table(path))

    def run(self, start: Callable[[], Awaitable[Any]]) -> Any:
        """Await ``start()`` on this loop (pyfluss binds its futures to the running loop)."""

        async def call() -> Any:
            return await start()

        return self.loop.run_until_complete(call())

    def close(self) -> None:
        self.run(self.conn.close)
        self.loop.close()


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_append_latency(bootstrap: str, n: int = 1000) -> list[dict]:
    store = _store(bootstrap)
    raw = _Raw(bootstrap, store.config.table, **{"writer.batch-timeout-ms": "0"})
    writer = raw.table.new_append().create_writer()
    key = "latency-key"
    bucket = store.partition_of(key)
    row = (key, "bench", "op", RecordCodec().encode(call_record(key, 0)))
    table_id = raw.table.get_table_info().table_id
    ours: list[float] = []
    base: list[float] = []
    ours_marked: list[float] = []  # RunCompleted: the offset is probed
    probed: list[float] = []

    def one_ours(seq: int, marked: bool = False) -> float:
        rec = record(key, seq) if marked else call_record(key, seq)
        start = time.perf_counter()
        store.append(rec)
        return time.perf_counter() - start

    def one_raw(probe: bool = False) -> float:
        start = time.perf_counter()
        raw.run(lambda: writer.append(row).wait())
        if probe:  # what the store adds to learn the offset: a one-record limit scan
            scan = raw.table.new_scan().limit(1)
            scanner = scan.create_bucket_batch_scanner(fluss.TableBucket(table_id, bucket))
            raw.run(scanner.collect_all_batches)
        return time.perf_counter() - start

    for i in range(50):  # connections, metadata, writer ids
        one_ours(i)
        one_raw()
    for i in range(n):  # interleaved, alternating which goes first
        if i % 2:
            ours.append(one_ours(i))
            base.append(one_raw())
        else:
            base.append(one_raw())
            ours.append(one_ours(i))
        if i % 4 == 0:
            ours_marked.append(one_ours(i, marked=True))
            probed.append(one_raw(probe=True))
    store.close()
    raw.close()
    ms = 1000.0
    print(
        f"append: {n} interleaved; p50 ours {_percentile(ours, 0.5) * ms:.3f} ms, raw "
        f"{_percentile(base, 0.5) * ms:.3f} ms; a run's last record (offset probed): ours "
        f"{_percentile(ours_marked, 0.5) * ms:.3f} ms, raw + offset probe "
        f"{_percentile(probed, 0.5) * ms:.3f} ms"
    )
    return [
        entry("fluss.append.p50", "ms", _percentile(ours, 0.5) * ms,
              _percentile(base, 0.5) * ms, 1.25),
        entry("fluss.append.p99", "ms", _percentile(ours, 0.99) * ms,
              _percentile(base, 0.99) * ms, 2.0),
    ]  # fmt: skip


def bench_recovery_read(
    bootstrap: str, records: int = 30000, keys: int = 300, rounds: int = 5
) -> list[dict]:
    writer = _store(bootstrap)
    table = writer.config.table
    # Keys of one bucket, as after a restart every key of a bucket recovers.
    names = (f"user-{n}" for n in range(10**9))
    bucket_keys: list[str] = []
    while len(bucket_keys) < keys:
        name = next(names)
        if writer.partition_of(name) == 0:
            bucket_keys.append(name)
    writer.close()
    codec = RecordCodec()
    raw = _Raw(bootstrap, table)
    append = raw.table.new_append().create_writer()
    for i in range(records):  # fill fast: no per-row waits, one flush
        key = bucket_keys[i % keys]
        append.append((key, "bench", "op", codec.encode(record(key, i // keys))))
    raw.run(append.flush)

    # pyarrow imports pandas on its first conversion to Python objects (~0.3 s, once per
    # process): not a cost of a recovery.
    pa.array([b"warm-up"]).to_pylist()

    def recover() -> float:
        """Seconds a new store takes to recover every key of the bucket."""
        return timed_recovery(_store(bootstrap, table), bucket_keys, records)

    def raw_scan(touch: Callable[[pa.Array], object]) -> float:
        """Seconds a plain pyfluss scan of the bucket takes, ``touch`` given each batch's
        record column."""
        raw_reader = _Raw(bootstrap, table, **{"scanner.log.fetch.wait-max-time-ms": "10"})

        async def scan() -> int:
            scanner = await raw_reader.table.new_scan().create_record_batch_log_scanner()
            scanner.subscribe(0, 0)
            seen = 0
            while seen < records:
                for rb in await scanner.poll_record_batch(500):
                    touch(rb.batch.column(3))
                    seen += rb.batch.num_rows
            return seen

        gc.collect()
        start = time.perf_counter()
        seen = raw_reader.run(scan)
        took = time.perf_counter() - start
        raw_reader.close()
        assert seen == records
        return took

    # Untimed: a new cluster's first requests of each kind (60-100 ms here) fall on whichever
    # read comes first, and a process's first recovery takes longer than the next ones
    # (printed; not Arrow's kernels, whose warming changes nothing): neither side pays that.
    raw_scan(lambda column: column)
    first = recover()
    sides: dict[str, list[float]] = {"ours": [], "base": [], "pybytes": [], "decoded": []}
    for _ in range(rounds):  # interleaved rounds, median of each side
        sides["ours"].append(recover())
        # The record bytes, as Arrow: no Python objects.
        sides["base"].append(raw_scan(lambda column: column))
        # Each record's bytes as a Python object, by the NumPy route the store takes: what
        # any reader that hands records to Python pays at least.
        sides["pybytes"].append(raw_scan(_python_bytes))
        # ... and decoded, in one MessagePack call per batch: what any reader that hands
        # journal records to Python pays at least (no grouping by key, no offsets).
        sides["decoded"].append(
            raw_scan(lambda column: codec.decode_many(_python_bytes(column), str))
        )
    raw.close()
    ours, base, pybytes, decoded = (statistics.median(times) for times in sides.values())
    print(
        f"recovery: {records} records of {keys} keys in one bucket; medians of {rounds} rounds: "
        f"read_key took {ours * 1000:.0f} ms (one end-offset probe for the wave, one pass over "
        f"the bucket, Arrow to Python, decode); the raw Arrow scan took {base * 1000:.0f} ms, "
        f"and {pybytes * 1000:.0f} ms with each record's bytes made a Python bytes object, "
        f"{decoded * 1000:.0f} ms with each record decoded; the first recovery in the process "
        f"took {first * 1000:.0f} ms; per round (ms): "
        + ", ".join(f"{side} {[round(t * 1000) for t in times]}" for side, times in sides.items())
    )
    return [
        entry("fluss.recovery.read", "records/s", records / ours, records / base, 0.25),
        entry("fluss.recovery.read.pybytes", "records/s", records / ours, records / pybytes,
              0.25),
        entry("fluss.recovery.read.decoded", "records/s", records / ours, records / decoded,
              0.5),
    ]  # fmt: skip


def _python_bytes(column: pa.Array) -> list[bytes]:
    """Each value of a binary column as a ``bytes`` object, by the NumPy route the store takes."""
    values: list[bytes] = column.to_numpy(zero_copy_only=False).tolist()
    return values


def run(bootstrap: str) -> list[dict]:
    """Run every Fluss benchmark against ``bootstrap``; print and return the entries."""
    results = [*bench_append_latency(bootstrap), *bench_recovery_read(bootstrap)]
    print(f"{'name':24} {'unit':10} {'ours':>10} {'baseline':>10} {'ratio':>7} {'target':>8}")
    for r in results:
        print(
            f"{r['name']:24} {r['unit']:10} {r['ours']:>10} {r['baseline']:>10} "
            f"{r['ratio']:>7} {r['target']:>8}"
        )
    return results


def _cluster(ctx: Any) -> str:
    """``FLUSS_BOOTSTRAP``, or a private cluster started once per benchmark run."""
    bootstrap = getattr(ctx, "fluss_bootstrap", None) or os.environ.get("FLUSS_BOOTSTRAP")
    if not bootstrap:
        from actionjournal.dev.fluss import running_cluster

        bootstrap = ctx.enter_context(running_cluster())
    ctx.fluss_bootstrap = bootstrap
    return bootstrap


BENCHMARKS = {
    "fluss.append": lambda ctx: bench_append_latency(_cluster(ctx)),
    "fluss.recovery.read": lambda ctx: bench_recovery_read(_cluster(ctx)),
}

if __name__ == "__main__":
    import sys

    from actionjournal.dev.fluss import running_cluster

    if len(sys.argv) > 1:
        run(sys.argv[1])
    else:
        with running_cluster() as address:
            run(address)
