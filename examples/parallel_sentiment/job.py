"""Example 1 as a PyFlink job: ``python examples/parallel_sentiment/job.py``.

Runs the parallel sentiment agent on a local MiniCluster with checkpoints and the
embedded SQLite journal. Without ``OLLAMA_HOST`` it starts the local test model server
(deterministic answers, the latencies in ``agent.TEST_LATENCY``); with ``OLLAMA_HOST``
set it asks that Ollama server, model ``OLLAMA_MODEL`` (default ``qwen3:8b``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make `examples` importable here...
    sys.path.insert(0, str(ROOT))
# ...and in the Flink Python workers, which unpickle the agent by module name.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
)

from actionjournal.chat import ChatModel  # noqa: E402
from examples.parallel_sentiment.agent import (  # noqa: E402
    REVIEWS,
    TEST_LATENCY,
    ParallelSentiment,
    chat_models,
    restaurant_of,
)


def run_job(
    reviews: Sequence[dict[str, Any]],
    models: dict[str, ChatModel],
    directory: Path,
    store_factory: Callable[[Any], Any] | None = None,
    *,
    per_second: float = 20.0,
) -> list[dict[str, Any]]:
    """Run the agent over ``reviews`` in a PyFlink job; its outputs, in arrival order.

    After a failure Flink restores the last checkpoint and runs that finished after it
    emit again (same ids): deduplicate by review id downstream.
    """
    from pyflink.common import Types

    from actionjournal.flink import AgentsConfig, AgentsExecutionEnvironment
    from actionjournal.stores import SqliteStoreConfig
    from actionjournal.testing import local_env, paced_source

    env = local_env(directory / "checkpoints", checkpoint_interval_ms=300, restarts=2)
    config = AgentsConfig(store=SqliteStoreConfig(path=str(directory / "journal.db")))
    agents = AgentsExecutionEnvironment.get_execution_environment(env, config)
    # A source that rewinds to its checkpointed position, so a restore re-reads exactly
    # the reviews consumed after the checkpoint (from_collection would replay them all).
    source = paced_source(env, [json.dumps(r) for r in reviews], per_second)
    parsed = source.map(json.loads, output_type=Types.PICKLED_BYTE_ARRAY())
    verdicts = (
        agents.from_datastream(parsed, key_selector=restaurant_of)
        .apply(ParallelSentiment(models), store_factory=store_factory)  # tests inject crashes
        .to_datastream()
    )
    with verdicts.execute_and_collect("parallel-sentiment") as results:
        return list(results)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument(
        "--dir", type=Path, help="keep checkpoints and journal here (default: a temp dir, deleted)"
    )
    args = p.parse_args(argv)
    with contextlib.ExitStack() as stack:
        directory = args.dir or Path(
            stack.enter_context(tempfile.TemporaryDirectory(prefix="parallel-sentiment-"))
        )
        directory.mkdir(parents=True, exist_ok=True)
        started = time.monotonic()
        host = os.environ.get("OLLAMA_HOST")
        if host:
            model = os.environ.get("OLLAMA_MODEL", "qwen3:8b")
            print(f"asking Ollama at {host}, model {model}")
            outputs = run_job(REVIEWS, chat_models(host, model), directory)
            asked = ""
        else:
            from actionjournal.testing import ModelServer

            server = stack.enter_context(ModelServer(latency=TEST_LATENCY))
            print(
                f"asking the local test model server at {server.url} "
                "(set OLLAMA_HOST to ask a real one)"
            )
            outputs = run_job(REVIEWS, chat_models(server.url), directory)
            asked = f"; the server answered {server.count()} requests, asked twice: "
            asked += str(len(server.repeated()))
        for out in sorted({o["id"]: o for o in outputs}.values(), key=lambda o: o["id"]):
            aspects = ", ".join(f"{a} {s['score']}/5" for a, s in sorted(out["aspects"].items()))
            verdict = out["verdict"]
            print(
                f"review {out['id']} ({out['restaurant']}): {aspects} -> "
                f"{verdict['sentiment']} {verdict['score']}/5: {verdict['summary']} "
                f"(restaurant average {out['restaurant_average']})"
            )
        kept = f"; journal: {directory / 'journal.db'}" if args.dir else ""
        print(f"{len(outputs)} verdicts in {time.monotonic() - started:.1f} s{asked}{kept}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
