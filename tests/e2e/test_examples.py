"""The reference examples in real PyFlink jobs, with a crash between the parallel branch
calls and the aggregation call. Each Flink job costs about 10 s, so there are few."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from pathlib import Path

import pytest

from actionjournal import LocalRunner
from actionjournal.stores import MemoryStore
from actionjournal.testing.model_server import ModelServer
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
