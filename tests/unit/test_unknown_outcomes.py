"""A call whose CallStarted is journaled but whose outcome is not: reconcilers and policies."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from actionjournal import (
    Agent,
    Failed,
    InputEvent,
    LocalRunner,
    NotStarted,
    ReconcileError,
    Recovered,
    StillRunning,
    UnknownOutcomeError,
    action,
    current_call,
)
from actionjournal.durable.errors import ActionFailedError
from actionjournal.reconcilers import reconciled_by, reconciler
from actionjournal.stores import MemoryStore
from tests.docs import docs_sample

EXECUTED: list[str] = []
SEEN: list[object] = []


def pay(order: str) -> str:
    EXECUTED.append(order)
    return f"paid {order}"


class Payer(Agent):
    def __init__(self, **call_options) -> None:
        self.options = call_options

    @action(InputEvent)
    def handle(self, event, ctx):
        try:
            SEEN.append(ctx.durable_execute(pay, event.input, **self.options))
        except Exception as exc:
            SEEN.append(exc)
            raise
        raise RuntimeError("crash after the call")


class AsyncPayer(Payer):
    @action(InputEvent)
    async def handle(self, event, ctx):
        SEEN.append(await ctx.durable_execute_async(pay, event.input, **self.options))
        raise RuntimeError("crash after the call")


@pytest.fixture(autouse=True)
def _reset():
    EXECUTED.clear()
    SEEN.clear()


def crash_with_unknown_outcome(store: MemoryStore, agent: Agent) -> None:
    """Run once, then drop the CallFinished: as if the process died during the call."""
    with pytest.raises(ActionFailedError):
        asyncio.run(LocalRunner(agent, store).run([("k", "o-1")]))
    store.entries = [e for e in store.entries if not _is_call_finished(store, e[3])]
    EXECUTED.clear()
    SEEN.clear()


def _is_call_finished(store: MemoryStore, data: bytes) -> bool:
    return type(store.codec.decode(data)).__name__ == "CallFinished"


def recover(store: MemoryStore, agent: Agent) -> LocalRunner:
    runner = LocalRunner(agent, store)
    with pytest.raises(ActionFailedError) as info:
        asyncio.run(runner.run([("k", "o-1")]))
    runner.failure = info.value
    return runner


def test_recovered_value_is_used_and_journaled():
    asked = []
    store = MemoryStore()

    def reconciler(info):
        asked.append(info)
        return Recovered("paid o-1 (from the payment API)")

    crash_with_unknown_outcome(store, Payer(reconciler=reconciler))
    runner = recover(store, Payer(reconciler=reconciler))
    assert EXECUTED == [] and SEEN == ["paid o-1 (from the payment API)"]
    assert runner.counts["reconciled"] == 1 and runner.counts["unknown"] == 1
    assert asked[0].args == ("o-1",) and asked[0].attempt == 1 and len(asked[0].call_id) == 32
    recover(store, Payer(reconciler=reconciler))  # now replayed from the journal
    assert len(asked) == 1 and SEEN[-1] == "paid o-1 (from the payment API)"


def test_recovered_failure_is_raised_and_journaled():
    store = MemoryStore()

    def reconciler(info):
        return Failed(ValueError("card declined"))

    crash_with_unknown_outcome(store, Payer(reconciler=reconciler))
    recover(store, Payer(reconciler=reconciler))
    assert EXECUTED == [] and isinstance(SEEN[0], ValueError)
    recover(store, Payer(reconciler=lambda info: pytest.fail("asked again")))
    assert str(SEEN[-1]) == "card declined"


def test_not_started_runs_the_call_now():
    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(reconciler=lambda info: NotStarted()))
    recover(store, Payer(reconciler=lambda info: NotStarted()))
    assert EXECUTED == ["o-1"] and SEEN == ["paid o-1"]


def test_still_running_is_asked_again_until_settled():
    answers = [StillRunning(0.01), StillRunning(0.01), Recovered("done")]
    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(reconciler=lambda info: NotStarted()))
    recover(store, Payer(reconciler=lambda info: answers.pop(0)))
    assert answers == [] and SEEN == ["done"] and EXECUTED == []


def test_never_settling_fails_with_reconcile_error_instead_of_looping():
    store = MemoryStore()
    opts = {"reconciler": lambda info: StillRunning(0.02), "reconcile_timeout": 0.1}
    crash_with_unknown_outcome(store, Payer(**opts))
    runner = recover(store, Payer(**opts))
    assert isinstance(runner.failure.__cause__, ReconcileError)
    assert "still running after" in str(runner.failure.__cause__)
    assert EXECUTED == []


def test_reconciler_that_raises_fails_the_action_clearly():
    def broken(info):
        raise ConnectionError("payment API unreachable")

    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(reconciler=broken))
    runner = recover(store, Payer(reconciler=broken))
    cause = runner.failure.__cause__
    assert isinstance(cause, ReconcileError) and "payment API unreachable" in str(cause)
    assert EXECUTED == []


def test_async_reconciler_with_async_call():
    async def reconciler(info):
        await asyncio.sleep(0)
        return Recovered("async recovered")

    store = MemoryStore()
    crash_with_unknown_outcome(store, AsyncPayer(reconciler=reconciler))
    recover(store, AsyncPayer(reconciler=reconciler))
    assert SEEN == ["async recovered"] and EXECUTED == []


def test_policy_fail_raises_unknown_outcome_error():
    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(on_unknown="fail"))
    runner = recover(store, Payer(on_unknown="fail"))
    cause = runner.failure.__cause__
    assert isinstance(cause, UnknownOutcomeError)
    assert "call id" in str(cause) and "register a reconciler" in str(cause)
    assert EXECUTED == []


def probe(info):
    return Recovered(f"probed {info.args[0]}")


@reconciled_by(probe)
def pay_with_probe(order: str) -> str:
    EXECUTED.append(order)
    return f"paid {order}"


class ByFunction(Agent):
    @action(InputEvent)
    def handle(self, event, ctx):
        SEEN.append(ctx.durable_execute(pay_with_probe, event.input))
        raise RuntimeError("crash after the call")


class ByName(Agent):
    @reconciler("payments")
    def payments(self, info):
        return Recovered(f"by name {info.args[0]}")

    @action(InputEvent)
    def handle(self, event, ctx):
        SEEN.append(ctx.durable_execute(pay, event.input, reconciler="payments"))
        raise RuntimeError("crash after the call")


@pytest.mark.parametrize(
    ("agent", "expected"), [(ByFunction, "probed o-1"), (ByName, "by name o-1")]
)
def test_reconciler_from_the_function_or_registered_by_name(agent, expected):
    store = MemoryStore()
    crash_with_unknown_outcome(store, agent())
    recover(store, agent())
    assert SEEN == [expected] and EXECUTED == []


def test_unknown_reconciler_name_is_a_clear_error():
    class Typo(Agent):
        @action(InputEvent)
        def handle(self, event, ctx):
            ctx.durable_execute(pay, event.input, reconciler="paymnets")

    with pytest.raises(ActionFailedError) as info:
        asyncio.run(LocalRunner(Typo(), MemoryStore()).run([("k", "o-1")]))
    assert "reconciler='paymnets'" in str(info.value.__cause__)
    assert "no reconciler of that name" in str(info.value.__cause__)
    assert EXECUTED == []


class PaymentDeclined(Exception):
    pass


def test_flink_agents_zero_argument_reconciler_returns_the_value_or_raises_the_failure():
    """Item 13: Flink Agents' form. Its value is the call's (Recovered), what it raises is
    the call's failure (Failed): both journaled, so later restores replay them."""

    def recovered():
        info = current_call()  # the call being reconciled, as inside the call
        return f"recovered {info.args[0]}"

    def declined():
        raise PaymentDeclined("card declined")

    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(reconciler=recovered))
    recover(store, Payer(reconciler=recovered))
    assert SEEN == ["recovered o-1"] and EXECUTED == []
    recover(store, Payer(reconciler=lambda: pytest.fail("asked again")))
    assert SEEN[-1] == "recovered o-1"

    store = MemoryStore()
    crash_with_unknown_outcome(store, Payer(reconciler=declined))
    recover(store, Payer(reconciler=declined))
    assert type(SEEN[-1]) is PaymentDeclined and str(SEEN[-1]) == "card declined"
    recover(store, Payer(reconciler=lambda: pytest.fail("asked again")))
    assert type(SEEN[-1]) is PaymentDeclined and EXECUTED == []


def test_async_zero_argument_reconciler_in_an_async_action():
    async def recovered():
        await asyncio.sleep(0)
        return "async recovered"

    store = MemoryStore()
    crash_with_unknown_outcome(store, AsyncPayer(reconciler=recovered))
    recover(store, AsyncPayer(reconciler=recovered))
    assert SEEN == ["async recovered"] and EXECUTED == []


class TwoBranches(Agent):
    """One async action fails while the other's call is in flight: the run stops both."""

    fail = True

    @action(InputEvent)
    async def pays(self, event, ctx):
        SEEN.append(await ctx.durable_execute_async(slow_pay, event.input, on_unknown="fail"))

    @action(InputEvent)
    async def checks(self, event, ctx):
        await asyncio.sleep(0.05)  # the call of `pays` is in flight meanwhile
        if TwoBranches.fail:
            raise RuntimeError("the other branch fails")


async def slow_pay(order: str) -> str:
    await asyncio.sleep(30)
    return pay(order)


def test_a_call_stopped_with_its_run_keeps_no_outcome_and_says_so():
    """Item 14: a call cancelled because its whole action is being stopped (another action
    of the run failed) is not journaled as cancelled: its outcome is unknown, and the retry
    says what happened."""
    store = MemoryStore()
    TwoBranches.fail = True
    with pytest.raises(ActionFailedError):
        asyncio.run(LocalRunner(TwoBranches(), store).run([("k", "o-1")]))
    kinds = [type(store.codec.decode(e[3])).__name__ for e in store.entries]
    assert "CallStarted" in kinds and "CallFinished" not in kinds
    TwoBranches.fail = False
    runner = recover(store, TwoBranches())
    cause = runner.failure.__cause__
    assert isinstance(cause, UnknownOutcomeError)
    assert "the process stopped, or the action was stopped, while it ran" in str(cause)
    assert EXECUTED == []


def test_the_zero_argument_sample_of_the_docs_runs_as_written():
    """docs/reconcilers.md, Flink Agents' form: killed after the charge, before its outcome
    was journaled, the restore asks `recovered_charge` and charges nothing again."""
    block = docs_sample("reconcilers.md", "CHARGES")
    namespace: dict[str, Any] = {"__name__": "docs_reconcilers"}
    exec(block, namespace)
    store = MemoryStore()
    asyncio.run(LocalRunner(namespace["Shop"](), store).run([("k", {"id": 1})]))
    store.entries = [  # as if the process died after the charge, before its outcome
        e for e in store.entries if type(store.codec.decode(e[3])).__name__ == "CallStarted"
    ]
    runner = LocalRunner(namespace["Shop"](), store)
    asyncio.run(runner.run([("k", {"id": 1})]))
    assert [event.output for _, event in runner.outputs] == [{"charge_id": "ch-1"}]
    assert runner.counts["reconciled"] == 1 and runner.counts["executed"] == 0
    assert len(namespace["CHARGES"]) == 1


class TimesOut(Agent):
    """Gives a slow call 1 s, then takes another path; fails afterwards (a later crash)."""

    @action(InputEvent)
    async def handle(self, event, ctx):
        call = ctx.durable_execute_async(slow_pay, event.input, on_unknown="fail")
        try:
            SEEN.append(await asyncio.wait_for(call, 1.0))
        except TimeoutError:
            SEEN.append("timed out")
        raise RuntimeError("crash after the timeout")


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="wait_for cancels the action's task")
def test_a_call_asyncio_wait_for_cancelled_replays_the_timeout():
    """Item 14 (docs/concepts.md, Cancelled calls): on Python 3.11 asyncio.wait_for runs the
    call in a task of its own and cancels it: journaled as cancelled, so the retry takes the
    same path instead of failing with UnknownOutcomeError."""
    store = MemoryStore()
    for _ in range(2):
        with pytest.raises(ActionFailedError) as info:
            asyncio.run(LocalRunner(TimesOut(), store).run([("k", "o-1")]))
        assert str(info.value.__cause__) == "crash after the timeout"
    assert SEEN == ["timed out", "timed out"] and EXECUTED == []
    errors = [getattr(store.codec.decode(e[3]), "error", None) for e in store.entries]
    assert [e.type for e in errors if e is not None] == ["asyncio.exceptions.CancelledError"]


class HoldsCallStarted(MemoryStore):
    """Holds the append of the first CallStarted until released, to cancel a call then."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def append(self, record):
        if type(record).__name__ == "CallStarted" and not self.entered.is_set():
            self.entered.set()
            self.release.wait(10)
        return super().append(record)


class CancelsWhileStarting(Agent):
    def __init__(self, store: HoldsCallStarted) -> None:
        self.store = store

    @action(InputEvent)
    async def handle(self, event, ctx):
        task = asyncio.ensure_future(
            ctx.durable_execute_async(slow_pay, event.input, on_unknown="fail")
        )
        await asyncio.to_thread(self.store.entered.wait, 10)  # its CallStarted is being appended
        task.cancel()
        self.store.release.set()
        try:
            await task
        except asyncio.CancelledError:
            SEEN.append("cancelled")
        raise RuntimeError("crash after the cancel")


def test_a_call_cancelled_while_its_start_is_journaled_is_journaled_cancelled_after_it():
    """Item 14: the cancel waits for the CallStarted append to end, then journals the
    cancellation after it, so the retry replays the cancel instead of an unknown outcome."""
    store = HoldsCallStarted()
    for _ in range(2):
        with pytest.raises(ActionFailedError) as info:
            asyncio.run(LocalRunner(CancelsWhileStarting(store), store).run([("k", "o-1")]))
        assert str(info.value.__cause__) == "crash after the cancel"
    kinds = [type(store.codec.decode(e[3])).__name__ for e in store.entries]
    assert kinds == ["CallStarted", "CallFinished"]
    assert SEEN == ["cancelled", "cancelled"] and EXECUTED == []
