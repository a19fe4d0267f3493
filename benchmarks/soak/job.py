"""The job the soak submits to its session cluster with ``flink run --python``.

The agent is docs/deploying.md's (``examples/kafka_orders/agent.py``, shipped with
``--pyFiles``): two durable calls per order to the counting service, each settled by asking
the service after a crash, and a per-customer count in short-term memory. Around it, the
settings a production job runs with: RocksDB with incremental checkpoints, retained
checkpoints (cleanup plans from the oldest of them, a resumed soak restores the newest),
the journal on a replicated topic that has to keep two copies of every append.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from agent import Orders  # shipped to the workers with --pyFiles
from pyflink.common import Configuration
from pyflink.datastream import StreamExecutionEnvironment

from actionjournal import JournalConfig
from actionjournal.flink import AgentsConfig, AgentsExecutionEnvironment, kafka_sink, kafka_source
from actionjournal.stores import KafkaStoreConfig


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True)
    p.add_argument("--input", required=True)
    p.add_argument("--output", required=True)
    p.add_argument("--journal", required=True, help="the journal's topic")
    p.add_argument("--journal-partitions", type=int, required=True)
    p.add_argument("--namespace", required=True)
    p.add_argument("--service", required=True, help="URL of the counting service")
    p.add_argument("--checkpoint-interval", type=int, required=True, help="seconds")
    p.add_argument("--retained", type=int, required=True, help="checkpoints kept")
    args = p.parse_args(argv)

    config = Configuration()
    for key, value in {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": "true",
        "execution.checkpointing.num-retained": str(args.retained),
        # kept when the soak cancels the job, so that a resumed soak restores the newest
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
    }.items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.enable_checkpointing(args.checkpoint_interval * 1000)  # transactions commit with them
    store = KafkaStoreConfig(
        bootstrap_servers=args.bootstrap,
        topic=args.journal,
        partitions=args.journal_partitions,
        replication_factor=3,
        min_insync_replicas=2,
    )
    agents_config = AgentsConfig(journal=JournalConfig(namespace=args.namespace), store=store)
    agents = AgentsExecutionEnvironment.get_execution_environment(env, agents_config)
    orders = kafka_source(env, args.input, bootstrap_servers=args.bootstrap, start="earliest")
    job = agents.from_datastream(orders).apply(Orders(args.service))
    kafka_sink(job, args.output, bootstrap_servers=args.bootstrap)
    env.execute("soak")


if __name__ == "__main__":
    main()
