"""The refund approval agent as a PyFlink job on Kafka.

    python examples/refund_approval/job.py --bootstrap 127.0.0.1:9092 --payments URL

Refund requests come from one topic, keyed by request id (value: the request's JSON);
approvals from another, keyed the same way, each value a signal answer
(``{"signal_id": "...", "value": {"approved": true}}``, read with
``SignalInput.from_json``); outcomes (the proposals with their signal ids, then
``refunded``, ``rejected`` or ``escalated``) go to a third topic, exactly once. A proposal
waits ``--approval-timeout`` seconds (a day by default) for its approval. The job runs
until stopped; stop it with a savepoint to keep what waits.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make `examples` importable here...
    sys.path.insert(0, str(ROOT))
# ...and in the Flink Python workers, which unpickle the agent by module name.
os.environ["PYTHONPATH"] = os.pathsep.join(
    p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p
)

from actionjournal import SignalInput  # noqa: E402
from examples.refund_approval.agent import RefundApproval, request_key  # noqa: E402

log = logging.getLogger("refund_approval")


def answer_of(message: Any) -> SignalInput | None:
    """An approval record as the answer to its signal, for the record's key (None, logged,
    for a record that is not an answer: it stays in the topic, the job goes on)."""
    try:
        answer = SignalInput.from_json(message.value or b"")
    except ValueError as exc:
        log.warning("approval at %s/%d offset %d skipped: %s", message.topic,
                    message.partition, message.offset, exc)  # fmt: skip
        return None
    return SignalInput(answer.signal_id, answer.value, key=message.key)


def is_answer(answer: SignalInput | None) -> bool:
    return answer is not None


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--bootstrap", required=True, help="Kafka bootstrap servers")
    p.add_argument("--requests", default="refund-requests", help="topic of refund requests")
    p.add_argument("--approvals", default="refund-approvals", help="topic of approvals")
    p.add_argument("--outcomes", default="refund-outcomes", help="topic of proposals and outcomes")
    p.add_argument("--payments", required=True, help="URL of the payments service")
    p.add_argument("--approval-timeout", type=float, default=86400.0, help="seconds")
    p.add_argument("--journal", default="refunds.db", help="the SQLite journal (one machine)")
    p.add_argument("--checkpoints", help="checkpoint directory (default: Flink's)")
    p.add_argument("--checkpoint-interval", type=int, default=1000, help="milliseconds")
    return p


def build(args: argparse.Namespace, env: Any = None) -> Any:
    """The job on ``env`` (default: a new stream environment); returns the environment."""
    from pyflink.common import Types
    from pyflink.datastream import StreamExecutionEnvironment

    from actionjournal.flink import (
        AgentsConfig,
        AgentsExecutionEnvironment,
        kafka_sink,
        kafka_source,
    )
    from actionjournal.stores import SqliteStoreConfig

    env = env or StreamExecutionEnvironment.get_execution_environment()
    env.enable_checkpointing(args.checkpoint_interval)  # Kafka transactions commit with them
    store = SqliteStoreConfig(path=str(Path(args.journal).resolve()))
    agents = AgentsExecutionEnvironment.get_execution_environment(env, AgentsConfig(store=store))
    servers = args.bootstrap
    requests = kafka_source(env, args.requests, bootstrap_servers=servers, start="earliest")
    approvals = (
        kafka_source(env, args.approvals, bootstrap_servers=servers, start="earliest")
        .map(answer_of, output_type=Types.PICKLED_BYTE_ARRAY())
        .filter(is_answer)
    )
    agent = RefundApproval(args.payments, timedelta(seconds=args.approval_timeout))
    job = agents.from_datastream(requests.union(approvals), key_selector=request_key).apply(agent)
    kafka_sink(job, args.outcomes, bootstrap_servers=servers)
    return env


def main(argv: Sequence[str] | None = None) -> None:
    logging.basicConfig(level=logging.INFO)
    build(parser().parse_args(argv)).execute("refund-approval")


if __name__ == "__main__":
    main()
