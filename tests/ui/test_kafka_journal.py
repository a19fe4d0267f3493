"""The explorer on a Kafka journal: indexed once, then followed live as the job appends."""

from __future__ import annotations

import asyncio
import time

import pytest

from actionjournal import Agent, InputEvent, JournalConfig, LocalRunner, OutputEvent, action
from actionjournal.stores.kafka import KafkaStore

pytestmark = [pytest.mark.kafka, pytest.mark.slow]


def shout(text: str) -> str:
    return text.upper()


class Shouter(Agent):
    uid = "shouter"

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.send_event(OutputEvent(ctx.durable_execute(shout, event.input)))


def _run(store: KafkaStore, inputs: list[tuple[str, str]]) -> None:
    asyncio.run(LocalRunner(Shouter(), store, JournalConfig()).run(inputs))


def test_a_kafka_journal_is_followed_live(aj_kafka, start_ui):
    store = KafkaStore(aj_kafka)
    try:
        _run(store, [(f"k{i}", f"hello {i}") for i in range(8)])
        server = start_ui(
            ["--store", "kafka", "--bootstrap", aj_kafka.bootstrap_servers, "--topic",
             aj_kafka.topic]
        )  # fmt: skip
        with server.client() as c:
            first = c.get("/api/runs").json()["page"]["runs"]
            assert len(first) == 8 and {r["status"] for r in first} == {"completed"}
            assert len({r["partition"] for r in first}) > 1  # keys over several partitions
            run = c.get(f"/api/runs/{first[0]['id']}").json()["timeline"]
            assert [c["status"] for c in run["calls"]] == ["finished"]
            assert run["events"][0]["attributes"].startswith('{"output":"HELLO')
            indexed = c.get("/api/status").json()["records_indexed"]
            _run(store, [(f"new{i}", "again") for i in range(3)])  # the job goes on
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                runs = c.get("/api/runs", params={"q": "new1"}).json()["page"]["runs"]
                if runs and runs[0]["status"] == "completed":  # seen whole, not half-way
                    break
                time.sleep(0.2)
            assert len(runs) == 1 and runs[0]["status"] == "completed"
            while time.monotonic() < deadline:
                total = c.get("/api/runs", params={"status": "completed"}).json()["page"]["runs"]
                if len(total) == 11:
                    break
                time.sleep(0.2)
            assert len(total) == 11
            status = c.get("/api/status").json()
            assert status["records_indexed"] == indexed + 3 * 3  # only what was appended
            health = c.get("/api/health").json()
            assert len(health["partitions"]) == 4
    finally:
        store.close()
