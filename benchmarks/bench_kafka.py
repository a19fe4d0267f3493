"""Kafka store benchmarks against a real broker, each side by side with raw confluent-kafka.

Entries (run with ``make bench BENCH=kafka.``):

* ``kafka.append.p50`` / ``.p99``: one append of a ~200-byte record, acks=all, through the
  store, vs a raw ``produce`` + ``flush`` of the same bytes with the same producer settings
  (idempotent, acks=all); the two are interleaved so both see the same broker.
* ``kafka.throughput.64``: records/s with 64 threads appending (each waits for its own ack)
  vs the same with raw confluent-kafka: 64 threads on one producer, each producing its record
  and waiting for its own delivery callback, one thread polling (not ``flush`` per record,
  which waits for everyone's records).
* ``kafka.recovery.read``: records/s that ``read_key`` reads, decodes and indexes to recover
  every key of one partition (one recovery wave), vs a raw consumer loop over the same
  offsets (no decoding).

Every benchmark uses its own new topic with the store's default 64 partitions.
"""

from __future__ import annotations

import gc
import statistics
import threading
import time
import uuid

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.records import RunCompleted
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from benchmarks.common import BenchContext, entry, timed_recovery

RECORD_BYTES = 200
THREADS = 64


def record(key: str, seq: int) -> RunCompleted:
    """A record whose envelope is about RECORD_BYTES long."""
    digest = "x" * (RECORD_BYTES - 40 - len(key))
    return RunCompleted("bench", "op", 0, key, seq, at=time.time(), input_digest=digest)


def _store(bootstrap: str) -> KafkaStore:
    topic = f"aj-bench-{uuid.uuid4().hex[:12]}"
    return KafkaStore(KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic))


def _raw_producer(bootstrap: str) -> Producer:
    return Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all"})


def _percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def bench_append_latency(bootstrap: str, n: int = 1000) -> list[dict]:
    store = _store(bootstrap)
    raw = _raw_producer(bootstrap)
    codec = RecordCodec()
    key = "latency-key"
    data = codec.encode(record(key, 0))
    partition = store.partition_of(key)
    ours: list[float] = []
    base: list[float] = []

    def one_ours(seq: int) -> float:
        rec = record(key, seq)
        start = time.perf_counter()
        store.append(rec)
        return time.perf_counter() - start

    def one_raw() -> float:
        start = time.perf_counter()
        raw.produce(store.topic, data, key.encode(), partition=partition)
        raw.flush(30)
        return time.perf_counter() - start

    for i in range(50):  # connections, metadata, producer ids
        one_ours(i)
        one_raw()
    for i in range(n):  # interleaved, alternating which goes first
        if i % 2:
            ours.append(one_ours(i))
            base.append(one_raw())
        else:
            base.append(one_raw())
            ours.append(one_ours(i))
    store.close()
    raw.flush(30)
    ms = 1000.0
    return [
        entry(
            "kafka.append.p50",
            "ms",
            _percentile(ours, 0.5) * ms,
            _percentile(base, 0.5) * ms,
            1.25,
        ),
        entry(
            "kafka.append.p99",
            "ms",
            _percentile(ours, 0.99) * ms,
            _percentile(base, 0.99) * ms,
            2.0,
        ),
    ]


def _threaded(work, threads: int) -> float:
    """Run ``work(thread_index)`` on ``threads`` threads at once; seconds until all finish."""
    barrier = threading.Barrier(threads + 1)

    def body(n: int) -> None:
        barrier.wait()
        work(n)

    pool = [threading.Thread(target=body, args=(n,)) for n in range(threads)]
    for t in pool:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in pool:
        t.join()
    return time.perf_counter() - start


def bench_throughput(bootstrap: str, per_thread: int = 300, rounds: int = 5) -> dict:
    store = _store(bootstrap)
    # The store's own producer settings (no linger, idempotent, acks=all).
    raw = Producer(
        {"bootstrap.servers": bootstrap, "enable.idempotence": True, "acks": "all", "linger.ms": 0}
    )
    codec = RecordCodec()
    keys = [f"thread-{n}" for n in range(THREADS)]
    payloads = [codec.encode(record(k, 0)) for k in keys]
    partitions = [store.partition_of(k) for k in keys]
    total = THREADS * per_thread

    def ours_work(n: int) -> None:
        for seq in range(per_thread):
            store.append(record(keys[n], seq))

    def raw_round() -> float:
        """Each thread produces its record and waits for its own delivery callback before the
        next, as an append does; one thread polls the producer and so runs every callback."""
        stop = threading.Event()

        def poller() -> None:
            while not stop.is_set():
                raw.poll(0.05)

        def raw_work(n: int) -> None:
            acked = threading.Event()

            def on_delivery(error, message) -> None:
                if error is not None:
                    raise RuntimeError(f"raw produce failed: {error}")
                acked.set()

            for _ in range(per_thread):
                acked.clear()
                raw.produce(
                    store.topic, payloads[n], keys[n].encode(), partition=partitions[n],
                    on_delivery=on_delivery,
                )  # fmt: skip
                acked.wait()

        polling = threading.Thread(target=poller)
        polling.start()
        try:
            return total / _threaded(raw_work, THREADS)
        finally:
            stop.set()
            polling.join()

    _threaded(lambda n: store.append(record(keys[n], -1)), THREADS)  # warm up both
    raw.produce(store.topic, payloads[0], keys[0].encode(), partition=partitions[0])
    raw.flush(30)
    for _ in range(2):  # the broker's JVM speeds up over its first rounds: untimed
        _threaded(ours_work, THREADS), raw_round()
    ours, base = [], []
    for i in range(rounds):  # interleaved rounds, alternating which goes first; medians
        if i % 2:
            base.append(raw_round())
        ours.append(total / _threaded(ours_work, THREADS))
        if not i % 2:
            base.append(raw_round())
    store.close()
    raw.flush(30)
    print(
        f"throughput: {THREADS} threads x {per_thread} appends, median of {rounds}; ours "
        f"{[round(x) for x in ours]} records/s, raw produce + own delivery callback "
        f"{[round(x) for x in base]} records/s"
    )
    o, b = statistics.median(ours), statistics.median(base)
    return entry("kafka.throughput.64", "records/s", o, b, 0.8)


def bench_recovery_read(
    bootstrap: str, records: int = 30000, keys: int = 300, rounds: int = 5
) -> list[dict]:
    writer = _store(bootstrap)
    topic = writer.topic
    # Keys of one partition, as after a restart every key of a partition recovers.
    names = (f"user-{n}" for n in range(10**9))
    ours_keys = []
    while len(ours_keys) < keys:
        name = next(names)
        if writer.partition_of(name) == 0:
            ours_keys.append(name)
    codec = RecordCodec()
    raw = _raw_producer(bootstrap)
    for i in range(records):  # fill fast: async produce, one flush
        key = ours_keys[i % keys]
        raw.produce(topic, codec.encode(record(key, i // keys)), key.encode(), partition=0)
        if i % 1000 == 0:
            raw.poll(0)
    raw.flush(60)
    writer.close()

    def ours_round() -> float:
        reader = KafkaStore(KafkaStoreConfig(bootstrap_servers=bootstrap, topic=topic))
        return timed_recovery(reader, ours_keys, records)

    def raw_round(decode: bool = False) -> float:
        """The raw loop; with ``decode``, each consumed batch's records also decoded in one
        MessagePack call (what any reader handing journal records to Python pays at least)."""
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "bench-raw",
                "enable.auto.commit": False,
                "enable.partition.eof": True,
            }
        )
        gc.collect()  # as before each of our reads (timed_recovery)
        start = time.perf_counter()
        low, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, low)])
        seen = 0
        done = False
        while not done:
            values = []
            for message in consumer.consume(min(10000, high - low - seen) or 1, timeout=1.0):
                if message.error():
                    done = message.error().code() == KafkaError._PARTITION_EOF
                    if done:
                        break
                    raise RuntimeError(message.error())
                values.append(message.value())
                seen += 1
                if message.offset() >= high - 1:
                    done = True
            if decode:
                codec.decode_many(values, str)
        elapsed = time.perf_counter() - start
        consumer.close()
        return elapsed

    times: list[float] = []
    bases: list[float] = []
    decodes: list[float] = []
    for _ in range(rounds):  # interleaved rounds, median of each side
        times.append(ours_round())
        bases.append(raw_round())
        decodes.append(raw_round(decode=True))
    ours, base, decoded = (statistics.median(t) for t in (times, bases, decodes))
    print(
        f"recovery: {records} records of {keys} keys in one partition; medians of {rounds} "
        f"rounds: read_key took {ours * 1000:.0f} ms (one offsets query and one pass for the "
        f"partition), the raw loop {base * 1000:.0f} ms, {decoded * 1000:.0f} ms with each "
        f"batch decoded; per round (ms): ours {[round(t * 1000) for t in times]}, raw "
        f"{[round(t * 1000) for t in bases]}, decoded {[round(t * 1000) for t in decodes]}"
    )
    return [
        entry("kafka.recovery.read", "records/s", records / ours, records / base, 0.5),
        entry("kafka.recovery.read.decoded", "records/s", records / ours, records / decoded,
              0.5),
    ]  # fmt: skip


BENCHMARKS = {
    "kafka.append": lambda ctx: bench_append_latency(ctx.kafka),
    "kafka.throughput.64": lambda ctx: bench_throughput(ctx.kafka),
    "kafka.recovery.read": lambda ctx: bench_recovery_read(ctx.kafka),
}

if __name__ == "__main__":
    from benchmarks.run import main

    with BenchContext():
        main(["--only", "kafka."])
