"""The reference examples on the local runner (no Flink): what they answer, that they run
in parallel, and that a restored run asks neither the model nor the remote agent again."""

from __future__ import annotations

import asyncio
import time

from actionjournal import LocalRunner
from actionjournal.stores import SqliteStore
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.remote_agents import RemoteAgentService
from examples.parallel_sentiment.agent import (
    REVIEWS,
    AspectScore,
    ParallelSentiment,
    Verdict,
    chat_models,
    restaurant_of,
)
from examples.refund_approval import local as refund_local
from examples.ticket_triage import agent as triage


def test_parallel_sentiment_runs_branches_in_parallel(tmp_path):
    """Both judges' requests are at the model server at once: it holds them until both
    arrived (sequential branches never get there) and counts the most in flight."""
    judges = ("taste-judge", "service-judge")
    with ModelServer() as server:
        runner = LocalRunner(
            ParallelSentiment(chat_models(server.url)), SqliteStore(tmp_path / "j")
        )

        async def held_judges() -> None:
            for model in judges:
                server.hold(model)
            runner.submit(restaurant_of(REVIEWS[0]), REVIEWS[0])
            deadline = time.monotonic() + 60  # a bound on waiting, not a speed target
            while server.waiting() < 2 and time.monotonic() < deadline:
                await asyncio.sleep(0.01)
            for model in judges:
                server.release(model)
            await runner.drain()

        asyncio.run(held_judges())
        assert server.peak_in_flight == 2, "the judges' requests never were in flight together"
        assert server.count() == 3 and not server.repeated()
    (out,) = [event.output for _, event in runner.outputs]
    assert set(out["aspects"]) == {"taste", "service"}
    assert all(AspectScore.model_validate(a) for a in out["aspects"].values())
    assert Verdict.model_validate(out["verdict"]).score == out["restaurant_average"]


def test_parallel_sentiment_keeps_a_tally_per_restaurant(tmp_path):
    with ModelServer() as server:
        runner = LocalRunner(
            ParallelSentiment(chat_models(server.url)), SqliteStore(tmp_path / "j")
        )
        asyncio.run(runner.run([(restaurant_of(r), r) for r in REVIEWS]))
    outputs = {event.output["id"]: event.output for _, event in runner.outputs}
    for restaurant in {r["restaurant"] for r in REVIEWS}:
        ids = [r["id"] for r in REVIEWS if r["restaurant"] == restaurant]
        scores = [outputs[i]["verdict"]["score"] for i in ids]
        assert outputs[ids[-1]]["restaurant_average"] == round(sum(scores) / len(scores), 2)


def test_ticket_triage_restored_mid_remote_run_asks_nothing_again(tmp_path):
    store = SqliteStore(tmp_path / "journal.db")
    ticket = triage.TICKETS[0]  # acme is an enterprise customer: always escalated
    with (
        ModelServer() as server,
        RemoteAgentService(run_seconds=0.6) as service,
    ):

        def agent() -> triage.TicketTriage:
            return triage.TicketTriage(
                triage.chat_models(server.url), triage.investigator(service.url)
            )

        async def interrupted() -> None:
            runner = LocalRunner(agent(), store)
            runner.submit(triage.customer_of(ticket), ticket)
            while not service.runs:  # the investigator is working: stop everything now
                await asyncio.sleep(0.01)
            runner.snapshot(tmp_path / "snapshot")
            for task in list(runner._active.values()):
                task.cancel()
            await asyncio.sleep(0.05)

        async def restored() -> LocalRunner:
            runner = LocalRunner.restore(tmp_path / "snapshot", agent(), store)
            runner.resume()
            await runner.drain()
            return runner

        asyncio.run(interrupted())
        assert server.count(model="triage") == 1 and server.count(model="writer") == 0
        runner = asyncio.run(restored())
        (out,) = [event.output for _, event in runner.outputs]
        assert list(service.turns.values()) == [1], "the remote agent was asked again"
        assert service.posts and list(service.posts.values()) == [1]
        assert server.count(model="triage") == 1, "the triage answer was asked again"
        assert server.count(model="writer") == 1
    assert out["escalated"] and out["plan"] == "enterprise"
    assert out["finding"].startswith("investigator answered ticket 1 from acme")
    assert out["reply"].startswith("[writer] reply")
    assert runner.counts["replayed"] + runner.counts["actions_replayed"] >= 1


def test_refund_approval_waits_a_simulated_day_across_a_restore(tmp_path):
    """Approved, rejected, and escalated after 24 hours of a ManualClock; the late approval
    runs nothing; the runner was restored from a snapshot while the proposals waited."""
    outcomes, calls, late = refund_local.simulate(tmp_path)
    assert {o["id"]: o["status"] for o in outcomes} == {
        "r-1": "refunded",
        "r-2": "rejected",
        "r-3": "escalated",
    }
    assert {o["id"]: o["amount"] for o in outcomes} == {"r-1": 120, "r-2": 50, "r-3": 30}
    assert calls == {"refund": 1, "escalate": 1} and late == 1
