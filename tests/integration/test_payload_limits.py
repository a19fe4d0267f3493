"""What the journal cannot hold, on a real Kafka broker (issue 15.3): the payload limit comes
from the topic, and a result over it is journaled as the call's final failure, so it never
runs again. Calls go to a real HTTP service that counts them.
"""

from __future__ import annotations

import asyncio

import pytest

from actionjournal import (
    Agent,
    InputEvent,
    JournalConfig,
    LocalRunner,
    OutputEvent,
    PayloadTooLargeError,
    action,
)
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CallFinished, RunFailed
from actionjournal.testing.service import CountingService
from tests.integration.test_kafka_store import create_topic
from tests.retry_agent import call_service

pytestmark = pytest.mark.kafka

LIMIT = 200_000  # the topic's max.message.bytes


class Report(Agent):
    """One call whose result is ``size`` bytes for input "big", small otherwise."""

    uid = "report"

    def __init__(self, url: str, durable_id: str | None = None) -> None:
        self.url = url
        self.durable_id = durable_id

    @action(InputEvent)
    async def handle(self, event, ctx):
        name, size = event.input
        value = await ctx.durable_execute_async(
            sized, self.url, name, size, durable_id=self.durable_id
        )
        ctx.send_event(OutputEvent(len(value)))


def sized(url: str, name: str, size: int) -> str:
    return call_service(url, name, name) + "x" * size


def run(runner: LocalRunner, inputs, snap=None) -> None:
    if snap is not None and snap.exists():
        asyncio.run(runner.run_source(inputs))
    else:
        asyncio.run(runner.run(inputs, snapshot_path=snap, snapshot_every=1 if snap else 0))


def test_the_topic_limit_lowers_the_payload_limit_and_a_result_over_it_never_reruns(
    kafka_store, kafka_admin, topic, tmp_path
):
    create_topic(kafka_admin, topic, 4, **{"max.message.bytes": str(LIMIT)})
    store = kafka_store(topic)
    assert store.max_record_bytes == LIMIT - 128  # read from the topic at open
    inputs = [("a", ("small-a", 10)), ("big", ("big", 300_000)), ("b", ("small-b", 10))]
    snap = tmp_path / "snap"
    with CountingService() as service:
        runner = LocalRunner(Report(service.url), store, on_run_failure="dead-letter")
        run(runner, inputs, snap)
        assert sorted(e.output for _, e in runner.outputs) == [17, 17]  # the other keys
        (letter,) = runner.dead_letters
        assert letter.error_type == "actionjournal.durable.errors.PayloadTooLargeError"
        assert f"the most kafka journal {topic} takes in one record ({LIMIT - 128} bytes)" in (
            letter.error
        )
        assert "journal.max_payload_bytes=2097152 is higher" in letter.error
        # A restore from before the run finished replays the failure: the call is not re-run.
        restored = LocalRunner.restore(
            snap, Report(service.url), kafka_store(topic), on_run_failure="dead-letter"
        )
        run(restored, inputs, snap)
        assert service.calls_by_name() == {"small-a": 1, "big": 1, "small-b": 1}
    records = store.read_key("default", "report", key_id("big"), None)
    (finished,) = [r for r in records if isinstance(r, CallFinished)]
    assert finished.error.type == "actionjournal.durable.errors.PayloadTooLargeError"
    assert [r.final for r in records if isinstance(r, RunFailed)] == [True]


def test_a_record_the_topic_refuses_is_journaled_as_the_calls_failure(
    kafka_store, kafka_admin, topic
):
    # The value fits the payload limit, but with a 6,000-character durable id the record
    # does not fit the topic: the store refuses it, and the call's failure is journaled.
    create_topic(kafka_admin, topic, 4, **{"max.message.bytes": "20000"})
    store = kafka_store(topic)
    with CountingService() as service:
        agent = Report(service.url, durable_id="d" * 6000)
        runner = LocalRunner(agent, store, JournalConfig())
        with pytest.raises(Exception) as failed:
            run(runner, [("big", ("big", 14_000))])
        assert isinstance(failed.value.__cause__, PayloadTooLargeError)
        assert "over the limit of 19872 bytes (topic max.message.bytes=20000)" in str(failed.value)
        again = LocalRunner(Report(service.url, durable_id="d" * 6000), kafka_store(topic))
        with pytest.raises(Exception, match="replaying its journaled failure"):
            run(again, [("big", ("big", 14_000))])
        assert service.calls_by_name() == {"big": 1}
    (finished,) = [
        r
        for r in store.read_key("default", "report", key_id("big"), None)
        if isinstance(r, CallFinished)
    ]
    assert finished.error.type == "actionjournal.durable.errors.RecordTooLargeError"
