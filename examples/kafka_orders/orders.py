"""Orders into Kafka for the job of docs/deploying.md, and its results out.

    python examples/kafka_orders/orders.py produce --bootstrap HOST:PORT --first 0 --count 16
    python examples/kafka_orders/orders.py read --bootstrap HOST:PORT --expect 16

``produce`` creates the topics ``orders`` and ``charged`` (4 partitions each) when missing,
then writes orders ``{"id", "customer", "item"}`` keyed by customer (one key's orders in one
partition, in order). ``read`` reads ``charged`` as a ``read_committed`` consumer from the
start until ``--expect`` orders have their result, prints them, and exits 1 if a result
came more than once (or not within ``--timeout`` seconds).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

CUSTOMERS = 8


def produce(bootstrap: str, topics: list[str], first: int, count: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = admin.list_topics(timeout=30).topics
    new = [NewTopic(t, 4, 1) for t in topics if t not in existing]
    for future in admin.create_topics(new).values() if new else ():
        future.result()
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(first, first + count):
        order = {"id": i, "customer": f"c{i % CUSTOMERS}", "item": f"item-{i}"}
        producer.produce(topics[0], key=order["customer"], value=json.dumps(order))
    if producer.flush(30):
        sys.exit(f"error: orders not delivered to {bootstrap} within 30 s")
    print(f"produced orders {first}..{first + count - 1} to {topics[0]}")


def read(bootstrap: str, topic: str, expect: int, timeout: float) -> int:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "orders-reader",
            "isolation.level": "read_committed",  # what the exactly-once sink committed
            "enable.auto.commit": False,
        }
    )
    partitions = consumer.list_topics(topic, timeout=30).topics[topic].partitions
    consumer.assign([TopicPartition(topic, p, 0) for p in partitions])  # from the start
    seen: Counter[int] = Counter()
    deadline = time.monotonic() + timeout
    while len(seen) < expect and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is None or message.error():
            if message is not None and message.error().code() != KafkaError._PARTITION_EOF:
                print(f"warning: {message.error()}", file=sys.stderr)
            continue
        result = json.loads(message.value())
        seen[result["id"]] += 1
        print(f"{message.key().decode()}: {result}")
    consumer.close()
    twice = sorted(i for i, n in seen.items() if n > 1)
    print(
        f"{len(seen)} of {expect} orders have their result; "
        + (f"more than once: {twice}" if twice else "none twice")
    )
    if len(seen) < expect:
        print(f"error: not all results within {timeout:.0f} s", file=sys.stderr)
    return 1 if twice or len(seen) < expect else 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("command", choices=("produce", "read"))
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    p.add_argument("--input", default="orders", help="topic of orders (produce)")
    p.add_argument("--output", default="charged", help="topic of results")
    p.add_argument("--first", type=int, default=0, help="produce: the first order id")
    p.add_argument("--count", type=int, default=16, help="produce: how many orders")
    p.add_argument("--expect", type=int, default=16, help="read: results to wait for")
    p.add_argument("--timeout", type=float, default=300, help="read: seconds to wait")
    args = p.parse_args()
    if args.command == "produce":
        produce(args.bootstrap, [args.input, args.output], args.first, args.count)
        return 0
    return read(args.bootstrap, args.output, args.expect, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
