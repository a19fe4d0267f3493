"""The job ``scale.recovery.after_tm_kill`` submits to a session cluster (``flink run``).

A paced source of inputs over 100 keys (it rewinds to its checkpointed position after a
failure), checkpoints every second, and either our agent (one instant durable call per run,
a SQLite journal) or the same job without actionjournal: the same call in a keyed Python map
(``--side flink``, Flink's own restart). A map after it reports every output to the
benchmark over a socket (:class:`benchmarks.flink_jobs.Notify`).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

from actionjournal.flink import AgentsConfig
from actionjournal.flink.function import AgentsExecutionEnvironment
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.testing.flink import paced_source
from benchmarks import flink_jobs

PER_SECOND = 50
INPUTS = 100_000  # more than a benchmark runs through


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--side", choices=["ours", "flink"], required=True)
    p.add_argument("--port", type=int, required=True, help="where outputs are reported")
    p.add_argument("--journal", required=True, help="SQLite journal path (ours)")
    args = p.parse_args(argv)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(1000)
    elements = [json.dumps({"k": f"key-{i % 100}", "i": i, "d": 0}) for i in range(INPUTS)]
    source = paced_source(env, elements, PER_SECOND)
    if args.side == "ours":
        config = AgentsConfig(store=SqliteStoreConfig(path=args.journal))
        agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
        out = flink_jobs.ours(agents, source, flink_jobs.Instant())
    else:
        keyed = source.key_by(flink_jobs.key_of)
        out = keyed.map(flink_jobs.instant, output_type=Types.STRING()).uid("flink-map")
    out.map(flink_jobs.Notify(args.port))
    env.execute(f"scale recovery {args.side}")


if __name__ == "__main__":
    main()
