"""The reference examples in real PyFlink jobs, with a crash between the parallel branch
calls and the aggregation call. Each Flink job costs about 10 s, so there are few."""

from __future__ import annotations

import asyncio
import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from actionjournal import LocalRunner
from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.service import CountingService
from examples.parallel_sentiment.agent import ParallelSentiment, chat_models, restaurant_of
from examples.parallel_sentiment.job import run_job
from tests.e2e.chat_support import KillOnceAtAggregation

pytestmark = [pytest.mark.flink, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
LATENCY = {"taste-judge": 0.05, "service-judge": 0.03, "summarizer": 0.03}
# One restaurant: its runs are strictly sequential, so when the worker is killed only the
# crashed review is in flight and every request the server saw twice would be a repeat.
REVIEWS = [
    {"id": i, "restaurant": "trattoria", "text": text}
    for i, text in enumerate(
        [
            "The pasta was divine, but we waited an hour.",
            "Great tiramisu and a waiter who cared.",
            "Pizza burnt, but the owner apologised.",
            "Lovely wine list, slow kitchen.",
        ]
    )
]


def uninterrupted(reviews) -> list[dict]:
    with ModelServer(latency=LATENCY) as server:
        runner = LocalRunner(ParallelSentiment(chat_models(server.url)), MemoryStore())
        asyncio.run(runner.run([(restaurant_of(r), r) for r in reviews]))
    return [event.output for _, event in runner.outputs]


def by_id(outputs: list[dict]) -> dict[int, dict]:
    found: dict[int, dict] = {}
    for out in outputs:  # a run that finished after the restored checkpoint emits again
        assert found.setdefault(out["id"], out) == out, "a re-emitted output differs"
    return found


def test_parallel_sentiment_killed_between_branches_and_aggregation(tmp_path):
    expected = by_id(uninterrupted(REVIEWS))
    factory = KillOnceAtAggregation(str(tmp_path / "killed"), str(tmp_path / "journal.db"))
    with ModelServer(latency=LATENCY) as server:
        outputs = run_job(REVIEWS, chat_models(server.url), tmp_path, factory, per_second=5)
        server.wait_idle()
        repeated = server.repeated()
        branch_requests = server.count(model="taste-judge") + server.count(model="service-judge")
    assert (tmp_path / "killed.killed").exists(), "the worker was not killed"
    assert by_id(outputs) == expected, "the output differs from an uninterrupted run"
    assert branch_requests == 2 * len(REVIEWS)
    assert not repeated, f"requests asked again after the recovery: {repeated}"


@pytest.mark.parametrize(
    ("script", "prefix", "expect", "last"),
    [
        (
            "examples/parallel_sentiment/job.py",
            "parallel-sentiment-",
            ["review 6 (noodle-bar)"],
            r"6 verdicts in [0-9.]+ s; the server answered 18 requests, asked twice: 0",
        ),
        (
            "examples/ticket_triage/job.py",
            "ticket-triage-",
            ["investigator answered ticket 1"],
            r"5 tickets in [0-9.]+ s",
        ),
    ],
)
def test_example_scripts_run_against_the_local_servers(tmp_path, script, prefix, expect, last):
    """As docs/chat-models.md runs them: no --dir, so their temp dir must be gone after."""
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "TMPDIR": str(temp)}  # no OLLAMA_HOST
    done = subprocess.run(
        [sys.executable, str(ROOT / script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    for text in expect:
        assert text in done.stdout, done.stdout
    assert re.fullmatch(last, done.stdout.splitlines()[-1]), done.stdout
    assert not [p.name for p in temp.iterdir() if p.name.startswith(prefix)], "left behind"


def kafka_topics(bootstrap: str, *names: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in names]).values():
        future.result()


def send(bootstrap: str, topic: str, records: list[tuple[str, object]]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for key, value in records:
        producer.produce(topic, key=key, value=json.dumps(value))
    producer.flush(30)


@pytest.mark.kafka
def test_refund_approval_job_waits_for_approvals_read_from_kafka(tmp_path, aj_kafka_bootstrap):
    """Requests and approvals from Kafka topics, outcomes to one, exactly once: an approved
    refund is paid once, a rejected one not, an unanswered one escalates when its (short)
    timeout passes, and its approval arriving after that runs nothing."""
    from actionjournal.testing.flink import local_env
    from actionjournal.tools.waits.read import find_waits
    from examples.refund_approval import job as refund_job
    from examples.refund_approval.agent import REQUESTS

    suffix = uuid.uuid4().hex[:8]
    requests, approvals, outcomes = (f"refund-{t}-{suffix}" for t in ("in", "ok", "out"))
    kafka_topics(aj_kafka_bootstrap, requests, approvals, outcomes)
    send(aj_kafka_bootstrap, requests, [(r["id"], r) for r in REQUESTS])
    consumer = Consumer(
        {
            "bootstrap.servers": aj_kafka_bootstrap,
            "group.id": f"reader-{suffix}",
            "isolation.level": "read_committed",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([outcomes])
    seen: dict[tuple[str, str], dict] = {}

    def wait_for(*wanted: tuple[str, str]) -> None:
        deadline = time.monotonic() + 180  # a bound on waiting, not a speed target
        while not set(wanted) <= set(seen) and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and not message.error():
                outcome = json.loads(message.value())
                seen.setdefault((outcome["id"], outcome["status"]), outcome)
        assert set(wanted) <= set(seen), f"missing outcomes; got {sorted(seen)}"

    journal = tmp_path / "refunds.db"
    with CountingService() as payments:
        args = refund_job.parser().parse_args(
            ["--bootstrap", aj_kafka_bootstrap, "--requests", requests, "--approvals",
             approvals, "--outcomes", outcomes, "--payments", payments.url,
             "--approval-timeout", "12", "--journal", str(journal)]
        )  # fmt: skip
        env = local_env(tmp_path / "checkpoints")
        client = refund_job.build(args, env).execute_async("refund-approval")
        try:
            wait_for(*[(r["id"], "proposed") for r in REQUESTS])
            signal = {i: seen[(i, "proposed")]["signal"] for i in ("r-1", "r-2", "r-3")}
            send(aj_kafka_bootstrap, approvals, [
                ("r-1", {"signal_id": signal["r-1"], "value": {"approved": True}}),
                ("r-2", {"signal_id": signal["r-2"], "value": {"approved": False}}),
                ("r-2", "not an answer"),  # skipped with a warning, the job goes on
            ])  # fmt: skip
            wait_for(("r-1", "refunded"), ("r-2", "rejected"), ("r-3", "escalated"))
            send(
                aj_kafka_bootstrap,
                approvals,
                [("r-3", {"signal_id": signal["r-3"], "value": True})],
            )
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                store = SqliteStore(journal)
                try:
                    signals = find_waits(store, "default", None).signal_list()
                finally:
                    store.close()
                late = [s for s in signals if s.late_answers]
                if late:
                    break
                time.sleep(0.5)
        finally:
            client.cancel().result()
            consumer.close()
        calls = payments.calls_by_name()
    assert [s.id for s in late] == [signal["r-3"]]
    assert calls == {"refund": 1, "escalate": 1}
    assert seen[("r-1", "refunded")]["amount"] == 120
