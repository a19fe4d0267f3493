"""Append latency on replicated journals (three servers, replication 3), each side by side with
the raw client on the same cluster with the same settings.

Entries (``make bench BENCH=kafka.replicated`` or ``BENCH=fluss.replicated``):

* ``kafka.replicated.append.p50``: one append of a ~200-byte record through the store on the
  three-broker dev cluster (``actionjournal dev kafka start --brokers 3``: topic RF 3,
  ``min.insync.replicas`` 2, acks=all, idempotent) vs a raw confluent-kafka ``produce`` +
  ``flush`` of the same bytes to the same partition with the same producer settings.
* ``fluss.replicated.append.p50``: one append of a durable call's ~200-byte result through
  the store on three tablet servers (``actionjournal dev fluss start --tablet-servers 3``:
  table replication 3, 2 in sync, followers' fetches answered within 5 ms) vs a raw pyfluss
  ``append(row)`` + ``wait()`` of the same row with the same writer settings (acks=all,
  idempotent, no batching delay).

The two sides are interleaved, alternating which goes first, so both see the same cluster.
"""

from __future__ import annotations

import functools
import time
import uuid
from collections.abc import Callable

from actionjournal.durable.codec import RecordCodec
from benchmarks.common import BenchContext, entry

SAMPLES = 400
WARM_UP = 50


def interleaved(ours: Callable[[int], None], raw: Callable[[], None]) -> tuple[float, float]:
    """p50 seconds of ``ours(seq)`` and of ``raw()``, measured alternately."""
    mine: list[float] = []
    theirs: list[float] = []

    def timed(fn: Callable[[], None], into: list[float] | None) -> None:
        start = time.perf_counter()
        fn()
        if into is not None:
            into.append(time.perf_counter() - start)

    for i in range(WARM_UP + SAMPLES):  # connections, metadata, producer/writer ids first
        counted = i >= WARM_UP
        sides = [(functools.partial(ours, i), mine), (raw, theirs)]
        for fn, into in sides if i % 2 else reversed(sides):
            timed(fn, into if counted else None)
    return sorted(mine)[len(mine) // 2], sorted(theirs)[len(theirs) // 2]


def bench_kafka(bootstrap: str) -> dict:
    from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
    from benchmarks.bench_kafka import _raw_producer, record

    config = KafkaStoreConfig(
        bootstrap_servers=bootstrap,
        topic=f"aj-bench-replicated-{uuid.uuid4().hex[:8]}",
        partitions=4,
        replication_factor=3,
        min_insync_replicas=2,
    )
    store = KafkaStore(config)
    producer = _raw_producer(bootstrap)
    key = "latency-key"
    data = RecordCodec().encode(record(key, 0))
    partition = store.partition_of(key)

    def raw() -> None:
        producer.produce(store.topic, data, key.encode(), partition=partition)
        producer.flush(30)

    try:
        ours, base = interleaved(lambda seq: store.append(record(key, seq)), raw)
    finally:
        store.close()
    print(f"kafka.replicated.append: p50 ours {ours * 1e3:.3f} ms, raw {base * 1e3:.3f} ms")
    return entry("kafka.replicated.append.p50", "ms", ours * 1e3, base * 1e3, 1.25)


def bench_fluss(bootstrap: str) -> dict:
    from actionjournal.stores.fluss import FlussStore, FlussStoreConfig
    from benchmarks.bench_fluss import _Raw, call_record

    config = FlussStoreConfig(
        bootstrap_servers=bootstrap,
        table=f"bench_replicated_{uuid.uuid4().hex[:8]}",
        buckets=4,
        replication_factor=3,
        min_insync_replicas=2,
    )
    store = FlussStore(config)
    client = _Raw(bootstrap, config.table, **{"writer.batch-timeout-ms": "0"})
    writer = client.table.new_append().create_writer()
    key = "latency-key"
    row = (key, "bench", "op", RecordCodec().encode(call_record(key, 0)))

    def raw() -> None:
        client.run(lambda: writer.append(row).wait())

    try:
        ours, base = interleaved(lambda seq: store.append(call_record(key, seq)), raw)
    finally:
        store.close()
        client.close()
    print(f"fluss.replicated.append: p50 ours {ours * 1e3:.3f} ms, raw {base * 1e3:.3f} ms")
    return entry("fluss.replicated.append.p50", "ms", ours * 1e3, base * 1e3, 1.25)


def _kafka_cluster(ctx: BenchContext) -> str:
    from actionjournal.dev.kafka_cluster import running_cluster

    return ctx.enter_context(running_cluster(brokers=3)).bootstrap


def _fluss_cluster(ctx: BenchContext) -> str:
    from actionjournal.dev.fluss import running_cluster

    return ctx.enter_context(running_cluster(tablet_servers=3))


BENCHMARKS = {
    "kafka.replicated.append": lambda ctx: bench_kafka(_kafka_cluster(ctx)),
    "fluss.replicated.append": lambda ctx: bench_fluss(_fluss_cluster(ctx)),
}
