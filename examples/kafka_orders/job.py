"""Orders from a Kafka topic, through the agent, exactly once to another topic.

Submit it to a cluster with PyFlink's CLI (docs/deploying.md)::

    flink run --detached --python examples/kafka_orders/job.py \\
        --pyFiles examples/kafka_orders/agent.py --bootstrap 127.0.0.1:9092 ...
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from agent import Orders  # shipped to the workers with --pyFiles
from pyflink.datastream import StreamExecutionEnvironment

from actionjournal.flink import AgentsConfig, AgentsExecutionEnvironment, kafka_sink, kafka_source
from actionjournal.stores import KafkaStoreConfig, SqliteStoreConfig


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    p.add_argument("--input", default="orders", help="topic of orders, keyed by customer")
    p.add_argument("--output", default="charged", help="topic of results")
    p.add_argument("--service", required=True, help="URL of the order service")
    p.add_argument(
        "--journal",
        default="kafka:orders-journal",
        help="kafka:<topic> on the same brokers, or sqlite:<path> (one machine only)",
    )
    p.add_argument("--checkpoint-interval", type=int, default=2000, help="milliseconds")
    p.add_argument("--bounded", action="store_true", help="stop at the input's current end")
    args = p.parse_args(argv)

    backend, _, where = args.journal.partition(":")
    store = (
        SqliteStoreConfig(path=where)
        if backend == "sqlite"
        else KafkaStoreConfig(bootstrap_servers=args.bootstrap, topic=where, partitions=4)
    )
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(args.checkpoint_interval)  # Kafka transactions commit with them
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig(store=store))
    orders = kafka_source(env, args.input, bootstrap_servers=args.bootstrap, bounded=args.bounded)
    job = agents.from_datastream(orders).apply(Orders(args.service))
    kafka_sink(job, args.output, bootstrap_servers=args.bootstrap)
    env.execute("orders")


if __name__ == "__main__":
    main()
