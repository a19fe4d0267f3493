"""The soak's traffic: orders in at a steady pace, results watched as they come out, and the
topics read whole at the end to count what was lost or duplicated.

Inputs are examples/kafka_orders' orders (``{"id", "customer", "item"}``, keyed by
customer). Their send time is the record's timestamp (the producer's clock), so nothing
about them has to be kept on the side: the input topic is the record of what was sent.
Two watchers read the output topic: ``read_committed`` (what a consumer downstream of the
exactly-once sink sees, after the checkpoint that commits it) and ``read_uncommitted``
(when the agent produced it). Each keeps the first arrival of every order id in a file, so a
resumed soak keeps the arrivals of its earlier sessions.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from actionjournal.stores.kafka.logs import client_logging

KEY_STRIDE = 7919  # prime, so i * KEY_STRIDE mod keys visits every key before repeating one
JOURNAL_SEGMENT_BYTES = 1024 * 1024


def customer(order_id: int, keys: int) -> str:
    return f"c{order_id * KEY_STRIDE % keys}"


def create_topics(bootstrap: str, topics: dict[str, int], journal: str) -> None:
    """The soak's topics, three copies of each, two in sync; the journal's segments small,
    so that a cleanup's deletes give disk space back within the run."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **client_logging()})
    existing = admin.list_topics(timeout=30).topics
    new = [
        NewTopic(
            name,
            partitions,
            3,
            config={
                "min.insync.replicas": "2",
                **({"segment.bytes": str(JOURNAL_SEGMENT_BYTES)} if name == journal else {}),
            },
        )
        for name, partitions in topics.items()
        if name not in existing
    ]
    for future in admin.create_topics(new).values() if new else ():
        future.result()


class Orders(threading.Thread):
    """Produces orders ``first``, ``first + 1``, ... at ``rate`` per second until stopped."""

    def __init__(self, bootstrap: str, topic: str, rate: float, keys: int, first: int) -> None:
        super().__init__(name="soak-orders", daemon=True)
        self.topic, self.rate, self.keys = topic, rate, keys
        self.next_id = first
        self.delivered = 0
        self.failed: list[str] = []
        self._stopping = threading.Event()
        self._producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                **client_logging(),
            }
        )

    def run(self) -> None:
        first, started = self.next_id, time.monotonic()
        while not self._stopping.is_set():
            due = started + (self.next_id - first) / self.rate
            wait = due - time.monotonic()
            if wait > 0:
                self._producer.poll(min(wait, 0.2))
                continue
            order = {"id": self.next_id, "customer": customer(self.next_id, self.keys)}
            order["item"] = f"item-{self.next_id}"
            try:
                self._producer.produce(
                    self.topic, key=order["customer"], value=json.dumps(order),
                    on_delivery=self._delivered,
                )  # fmt: skip
            except BufferError:  # the local queue is full (brokers unreachable): wait
                self._producer.poll(0.5)
                continue
            self.next_id += 1
            self._producer.poll(0)

    def _delivered(self, error: KafkaError | None, _: object) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.failed.append(str(error))

    def stop(self) -> None:
        """Stop producing and wait until every order sent is acknowledged (or failed)."""
        self._stopping.set()
        self.join(30)
        self._producer.flush(180)


class Watcher(threading.Thread):
    """The first arrival time of each order id in the output topic, at one isolation level,
    appended to ``path`` (``id time`` lines) and loaded from it when resuming."""

    def __init__(self, bootstrap: str, topic: str, isolation: str, path: Path) -> None:
        super().__init__(name=f"soak-watch-{isolation}", daemon=True)
        self.path = path
        self.arrivals: dict[int, float] = {}
        with contextlib.suppress(FileNotFoundError):
            for line in path.read_text().splitlines():
                order_id, at = line.split()
                self.arrivals.setdefault(int(order_id), float(at))
        self._stopping = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"soak-watch-{isolation}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
                **client_logging(),
            }
        )
        self._consumer.assign(_all_partitions(self._consumer, topic))

    def run(self) -> None:
        with open(self.path, "a") as out:
            while not self._stopping.is_set():
                messages = self._consumer.consume(500, 0.5)
                now = time.time()
                for message in messages:
                    if message.error():
                        continue
                    order_id = int(json.loads(message.value())["id"])
                    if order_id not in self.arrivals:
                        self.arrivals[order_id] = now
                        out.write(f"{order_id} {now:.3f}\n")
                out.flush()
        self._consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(30)


def _all_partitions(consumer: Consumer, topic: str) -> list[TopicPartition]:
    deadline = time.monotonic() + 60
    while True:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is not None and metadata.error is None and metadata.partitions:
            return [TopicPartition(topic, p, 0) for p in sorted(metadata.partitions)]
        if time.monotonic() > deadline:
            raise RuntimeError(f"topic {topic} has no partitions after 60 s")
        time.sleep(0.5)


def read_all(bootstrap: str, topic: str, isolation: str) -> Iterator[tuple[int, float]]:
    """Every record of ``topic`` up to its end now: (order id, record timestamp in s)."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"soak-read-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            **client_logging(),
        }
    )
    try:
        partitions = _all_partitions(consumer, topic)
        ends = {}
        for tp in partitions:
            low, high = consumer.get_watermark_offsets(tp, timeout=30)
            if high > low:
                ends[tp.partition] = high
        consumer.assign([tp for tp in partitions if tp.partition in ends])
        done: set[int] = set()
        deadline = time.monotonic() + 600
        while len(done) < len(ends):
            if time.monotonic() > deadline:
                raise RuntimeError(f"reading {topic} did not reach its end within 600 s")
            for message in consumer.consume(1000, 1.0):
                if message.error():
                    if message.error().code() == KafkaError._PARTITION_EOF:
                        done.add(message.partition())
                    continue
                yield int(json.loads(message.value())["id"]), message.timestamp()[1] / 1000
                if message.offset() + 1 >= ends[message.partition()]:
                    done.add(message.partition())
    finally:
        consumer.close()


def last_id(bootstrap: str, topic: str) -> int:
    """The highest order id in ``topic`` (-1 when empty): where a resumed soak goes on."""
    return max(
        (order_id for order_id, _ in read_all(bootstrap, topic, "read_uncommitted")), default=-1
    )
