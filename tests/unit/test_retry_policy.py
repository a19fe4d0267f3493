"""RetryPolicy: its waits, which failures it retries (real httpx errors from real servers), how
it is set, how ``record_failures`` relates to it, and that a backoff never blocks other keys.
"""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from pydantic import ValidationError

from actionjournal import (
    Agent,
    ConfigurationError,
    InputEvent,
    JournalConfig,
    LocalRunner,
    OutputEvent,
    RetryPolicy,
    action,
)
from actionjournal.durable.identity import key_id
from actionjournal.durable.records import CallAttemptFailed
from actionjournal.durable.retry import is_transient
from actionjournal.stores import SqliteStore
from actionjournal.testing.service import CountingService
from tests.retry_agent import Checkout, call_service

QUICK = RetryPolicy(3, 0.01, 1.0, 0.01)


def test_waits_grow_by_the_backoff_up_to_the_cap():
    policy = RetryPolicy(6, 0.5, 2.0, 3.0)
    assert [policy.wait(n) for n in range(1, 6)] == [0.5, 1.0, 2.0, 3.0, 3.0]
    assert RetryPolicy(backoff=10.0, max_interval=7.0).wait(10_000) == 7.0  # no overflow
    jittered = RetryPolicy(5, 1.0, 2.0, 60.0, jitter=0.5)
    assert all(1.0 <= jittered.wait(2) <= 2.0 for _ in range(200))  # [2 * (1 - 0.5), 2]
    assert len({jittered.wait(2) for _ in range(20)}) > 1


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"max_attempts": 0}, "max_attempts"),
        ({"backoff": 0.5}, "backoff"),
        ({"initial_interval": -1}, "initial_interval"),
        ({"jitter": 2}, "jitter"),
        ({"retryable": (int,)}, "retryable"),
        ({"attempts": 3}, "attempts"),
    ],
)
def test_bad_settings_fail_with_their_name(settings, field):
    with pytest.raises(ValidationError, match=field):
        JournalConfig.model_validate({"retry": settings})


def test_the_default_rule_on_real_failures():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]  # nothing listens there once the block ends
    with pytest.raises(httpx.ConnectError) as refused:
        httpx.get(f"http://127.0.0.1:{closed}/")
    assert is_transient(refused.value)
    with CountingService() as service:
        for status, transient in ((503, True), (429, True), (500, True), (404, False)):
            service.fail(f"s{status}", times=None, status=status)
            reply = httpx.post(f"{service.url}/calls/s{status}", json={"call_id": "c"})
            with pytest.raises(httpx.HTTPStatusError) as answered:
                reply.raise_for_status()
            assert is_transient(answered.value) is transient, status
        service.hold("slow")
        with pytest.raises(httpx.ReadTimeout) as slow:
            httpx.post(f"{service.url}/calls/slow", json={"call_id": "d"}, timeout=0.2)
        service.release("slow")
    assert is_transient(slow.value)
    assert is_transient(ConnectionError()) and is_transient(TimeoutError())
    assert not is_transient(ValueError("bad")) and not is_transient(KeyError("k"))

    class Declined(Exception):
        retryable = False

    class Busy(ValueError):
        retryable = True

    assert not is_transient(type("Refused", (ConnectionError,), {"retryable": False})())
    assert is_transient(Busy()) and not is_transient(Declined())
    policy = RetryPolicy(non_retryable=(ConnectionRefusedError,))
    assert not policy.retries(ConnectionRefusedError()) and policy.retries(ConnectionResetError())
    only = RetryPolicy(retryable=(KeyError,))
    assert only.retries(KeyError()) and not only.retries(ConnectionError())


def test_a_call_takes_its_own_policy_and_a_bad_one_is_refused(tmp_path):
    class Patient(Agent):
        uid = "checkout"

        def __init__(self, url, retry):
            self.url = url
            self.retry = retry

        @action(InputEvent)
        async def handle(self, event, ctx):
            value = await ctx.durable_execute_async(
                call_service, self.url, "charge", event.input, retry=self.retry
            )
            ctx.send_event(OutputEvent(value))

    config = JournalConfig(retry=RetryPolicy(max_attempts=1))  # the job: never retry
    with CountingService() as service:
        service.fail("charge", times=3)
        runner = LocalRunner(
            Patient(service.url, RetryPolicy(4, 0.01, 1.0)), SqliteStore(tmp_path / "a.db"), config
        )
        asyncio.run(runner.run([("k", "o-1")]))
        assert [e.output for _, e in runner.outputs] == ["o-1"]
        assert list(service.attempts("charge").values()) == [[0, 1, 2, 3]]
        bad = LocalRunner(
            Patient(service.url, {"max_attempts": 2}), SqliteStore(tmp_path / "b.db"), config
        )
        with pytest.raises(Exception) as refused:
            asyncio.run(bad.run([("k", "o-2")]))
    assert isinstance(refused.value.__cause__, ConfigurationError)
    assert "retry={'max_attempts': 2} of durable call" in str(refused.value.__cause__)


def test_record_failures_false_leaves_the_final_failure_out_and_the_next_try_retries(tmp_path):
    probed = []

    class Probed(Checkout):
        @action(InputEvent)
        async def handle(self, event, ctx):
            def probe(info):
                probed.append(info.attempt)
                from actionjournal import NotStarted

                return NotStarted()

            value = await ctx.durable_execute_async(
                call_service, self.url, "charge", event.input, record_failures=False,
                reconciler=probe,
            )  # fmt: skip
            ctx.send_event(OutputEvent(value))

    store = SqliteStore(tmp_path / "j.db")
    snap = tmp_path / "snap"
    config = JournalConfig(retry=QUICK)
    with CountingService() as service:
        service.fail("charge", times=3)  # the first try of the run uses all 3 attempts
        first = LocalRunner(Probed(service.url), store, config)
        with pytest.raises(Exception, match="not journaled, record_failures=False"):
            asyncio.run(first.run([("k", "o-1")], snapshot_path=snap, snapshot_every=1))
        again = LocalRunner.restore(snap, Probed(service.url), store, config)
        asyncio.run(again.run_source([("k", "o-1")]))
        assert [e.output for _, e in again.outputs] == ["o-1"]
        # The next try: the round's failures may have taken effect, so the reconciler is asked
        # (not as an unknown outcome: the round's end is journaled); NotStarted: a new round.
        assert probed == [3]
        assert list(service.attempts("charge").values()) == [[0, 1, 2, 3]]
    failed = [r for r in store.read_key("default", "checkout", key_id("k"), None)]
    ends = [r.retry_at is None for r in failed if isinstance(r, CallAttemptFailed)]
    assert ends == [False, False, True]  # the third failure ended the round, not journaled


class PerKey(Checkout):
    """Checkout, its charge at a path per key (so one key's charge can fail)."""

    @action(InputEvent)
    async def handle(self, event, ctx):
        reserved = await ctx.durable_execute_async(call_service, self.url, "reserve", event.input)
        charged = await ctx.durable_execute_async(
            call_service, self.url, f"charge-{ctx.key}", reserved
        )
        ctx.send_event(OutputEvent(charged))


class SyncPerKey(Checkout):
    """The same from a ``def`` action: the blocking driver, backoff in a worker thread."""

    @action(InputEvent)
    def handle(self, event, ctx):
        reserved = ctx.durable_execute(call_service, self.url, "reserve", event.input)
        charged = ctx.durable_execute(call_service, self.url, f"charge-{ctx.key}", reserved)
        ctx.send_event(OutputEvent(charged))


@pytest.mark.parametrize("agent", [PerKey, SyncPerKey], ids=["async", "sync"])
def test_a_call_in_its_backoff_holds_up_no_other_key(agent, tmp_path):
    store = SqliteStore(tmp_path / "j.db")
    config = JournalConfig(retry=RetryPolicy(3, 3600.0, 1.0, 3600.0))  # an hour's backoff

    def waiting(key: str) -> bool:
        records = store.read_key("default", "checkout", key_id(key), None)
        return any(isinstance(r, CallAttemptFailed) for r in records)

    async def until(condition) -> None:
        while not condition():
            await asyncio.sleep(0.01)

    async def go(service: CountingService) -> list:
        runner = LocalRunner(agent(service.url), store, config)
        runner.submit("slow", "s-1")
        await until(lambda: waiting("slow"))  # its charge failed: an hour until the next try
        runner.submit("fast", "f-1")
        await until(lambda: runner.outputs)
        outputs = [(key, event.output) for key, event in runner.outputs]
        tasks = list(runner._active.values())
        for task in tasks:  # the job stops: the waiting call stops with it
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        return outputs

    with CountingService() as service:
        service.fail("charge-slow", times=None)
        assert asyncio.run(go(service)) == [("fast", "f-1")]
        assert list(service.attempts("charge-slow").values()) == [[0]]  # still waiting
