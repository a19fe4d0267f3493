"""Agents written as Flink Agents users write them, importing only actionjournal.flink_agents.

Our own code in upstream's API (issue 18): the unit, crash and PyFlink tests run them.
Services they call are real local HTTP services that count executions; the URLs come
from the agents' configuration (``ctx.config``) or, for tools, from the environment.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import ClassVar

import httpx
from pydantic import BaseModel

from actionjournal.flink_agents.api.agents.agent import Agent
from actionjournal.flink_agents.api.agents.budget import LoopBudget
from actionjournal.flink_agents.api.agents.react_agent import ReActAgent
from actionjournal.flink_agents.api.decorators import action
from actionjournal.flink_agents.api.events.event import Event, InputEvent, OutputEvent
from actionjournal.flink_agents.api.execution_environment import AgentsExecutionEnvironment
from actionjournal.flink_agents.api.resource import ResourceDescriptor, ResourceName, ResourceType
from actionjournal.flink_agents.api.runner_context import RunnerContext
from actionjournal.flink_agents.api.tools.tool import Tool

SCORED: Counter[str] = Counter()  # calls of score_aspect in this process


# -- a unified-event workflow -------------------------------------------------------------


class UnifiedEventAgent(Agent):
    @action(InputEvent.EVENT_TYPE)
    @staticmethod
    def on_input(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(
            Event(type="Intermediate", attributes={"msg": InputEvent.from_event(event).input})
        )

    @action("Intermediate")
    @staticmethod
    async def on_intermediate(event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(OutputEvent(output=f"processed:{event.get_attr('msg')}"))


# -- typed events fanned out, aggregated in short-term memory ---------------------------


class AspectRequest(Event):
    EVENT_TYPE: ClassVar[str] = "aspect_request"

    def __init__(self, review: str, aspect: str, text: str) -> None:
        super().__init__(
            type=AspectRequest.EVENT_TYPE,
            attributes={"review": review, "aspect": aspect, "text": text},
        )


class AspectScored(Event):
    EVENT_TYPE: ClassVar[str] = "aspect_scored"

    def __init__(self, review: str, aspect: str, score: int) -> None:
        super().__init__(
            type=AspectScored.EVENT_TYPE,
            attributes={"review": review, "aspect": aspect, "score": score},
        )


class Verdict(BaseModel):
    review: str
    scores: dict[str, int]
    restaurant_average: float


def score_aspect(aspect: str, text: str) -> int:
    """A deterministic stand-in for a model: 1..5 from the words of the review."""
    SCORED[aspect] += 1
    return 1 + sum(map(ord, f"{aspect}:{text}")) % 5


class ReviewFanOut(Agent):
    """Each review fans out to one typed event per aspect (scored concurrently), and the
    scores are collected in short-term memory; the key (a restaurant) keeps a tally."""

    ASPECTS: ClassVar[tuple[str, ...]] = ("taste", "service", "price")

    @action(InputEvent)
    @staticmethod
    def split(event: Event, ctx: RunnerContext) -> None:
        review = InputEvent.from_event(event).input
        for aspect in ReviewFanOut.ASPECTS:
            ctx.send_event(AspectRequest(review["id"], aspect, review["text"]))

    @action(AspectRequest)
    @staticmethod
    async def score(event: Event, ctx: RunnerContext) -> None:
        assert isinstance(event, AspectRequest)
        aspect, text = event.get_attr("aspect"), event.get_attr("text")
        score = await ctx.durable_execute_async(score_aspect, aspect, text)
        ctx.send_event(AspectScored(event.get_attr("review"), aspect, score))

    @action(AspectScored.EVENT_TYPE)
    @staticmethod
    def collect(event: Event, ctx: RunnerContext) -> None:
        memory = ctx.short_term_memory
        review = memory.new_object(f"reviews.{event.get_attr('review')}")
        review.set(event.get_attr("aspect"), event.get_attr("score"))
        if len(review.get_field_names()) < len(ReviewFanOut.ASPECTS):
            return
        scores = review.get_fields()
        tally = memory.get("tally") or memory.new_object("tally")
        tally.set("reviews", (tally.get("reviews") or 0) + 1)
        tally.set("points", (tally.get("points") or 0) + sum(scores.values()))
        average = tally.get("points") / tally.get("reviews") / len(scores)
        verdict = Verdict(
            review=event.get_attr("review"), scores=scores, restaurant_average=average
        )
        ctx.send_event(OutputEvent(output=verdict))


# -- rows of a table in, rows out ------------------------------------------------------


class RowUpper(Agent):
    """Receives a PyFlink ``Row`` (``from_table``) and answers one (``to_table``)."""

    @action(InputEvent)
    @staticmethod
    def upper(event: Event, ctx: RunnerContext) -> None:
        from pyflink.common import Row

        row = InputEvent.from_event(event).input
        assert isinstance(row, Row), type(row)
        ctx.send_event(OutputEvent(output=Row(id=row.id, text=row.text.upper())))


# -- a payment with upstream's zero-argument reconciler ---------------------------------

KILL_AFTER_CHARGE = "PORTING_KILL_AFTER_CHARGE"  # an order id: die once it was charged


def charge(url: str, order: str, amount: int) -> dict:
    reply = httpx.post(f"{url}/calls/charge", json={"call_id": f"charge-{order}", "value": amount})
    reply.raise_for_status()
    if os.environ.get(KILL_AFTER_CHARGE) == order:
        os.kill(os.getpid(), 9)  # charged, but the result is never journaled
    return {"order": order, "charged": reply.json()["value"]}


def charged(url: str, order: str) -> dict:
    """What the payment service says about ``order``; raises when it never arrived."""
    reply = httpx.get(f"{url}/calls/charge-{order}")
    if reply.status_code == 404:
        raise LookupError(f"order {order} was never charged")
    return {"order": order, "charged": reply.json()["value"]}


class Payments(Agent):
    uid = "payments"

    @action(InputEvent)
    @staticmethod
    def pay(event: Event, ctx: RunnerContext) -> None:
        order = InputEvent.from_event(event).input
        url = ctx.config.get_str("payments.url")
        reconcile = ctx.config.get_bool("payments.reconcile", True)
        receipt = ctx.durable_execute(
            charge,
            url,
            order["id"],
            order["amount"],
            reconciler=(lambda: charged(url, order["id"])) if reconcile else None,
        )
        ctx.send_event(OutputEvent(output=receipt))


# -- a ReAct agent whose tools call a service ------------------------------------------


class SupportTools:
    """Tools of the support agent; they call the service at ``url`` (which counts calls).

    ``kill_at``: the tool that SIGKILLs its process instead of calling the service, once
    (while ``marker`` does not exist yet; it is created just before).
    """

    def __init__(self, url: str, kill_at: str | None = None, marker: str | None = None) -> None:
        self.url = url
        self.kill_at = kill_at
        self.marker = marker

    def lookup_order(self, order_id: str) -> str:
        """Find an order.

        Parameters
        ----------
        order_id : str
            The order's id.
        """
        return self._call("lookup_order", {"order": order_id, "amount": 30})

    def refund(self, order_id: str, amount: int) -> str:
        """Refund an order.

        Parameters
        ----------
        order_id : str
            The order to refund.
        amount : int
            How much to refund.
        """
        return self._call("refund", {"order": order_id, "refunded": amount})

    def _call(self, name: str, value: object) -> str:
        if name == self.kill_at and not (self.marker and Path(self.marker).exists()):
            if self.marker:
                Path(self.marker).write_text(f"killed at {name} in pid {os.getpid()}\n")
            os.kill(os.getpid(), 9)
        from actionjournal import current_call

        call = current_call()
        assert call is not None, "a tool runs as a durable call"
        body = {"call_id": call.call_id, "value": value}
        reply = httpx.post(f"{self.url}/calls/{name}", json=body, timeout=30)
        reply.raise_for_status()
        return str(reply.json()["value"])

    def register(self, env: AgentsExecutionEnvironment) -> None:
        """Declare both tools in ``env``, as upstream's examples do."""
        env.add_resource("lookup_order", ResourceType.TOOL, Tool.from_callable(self.lookup_order))
        env.add_resource("refund", ResourceType.TOOL, Tool.from_callable(self.refund))


TOOL_PLAN = [  # one round: the model asks for both tools at once, run one after the other
    [
        {"name": "lookup_order", "arguments": {"order_id": "o-1"}},
        {"name": "refund", "arguments": {"order_id": "o-1", "amount": 30}},
    ]
]


def support_agent(protocol: str, budget: LoopBudget | None = None) -> ReActAgent:
    """A ReAct agent on the connection ``model_server`` (declared by the environment)."""
    setup = (
        ResourceName.ChatModel.OLLAMA_SETUP
        if protocol == "ollama"
        else ResourceName.ChatModel.OPENAI_COMPLETIONS_SETUP
    )
    return ReActAgent(
        chat_model=ResourceDescriptor(
            clazz=setup,
            connection="model_server",
            model="support",
            tools=["lookup_order", "refund"],
        ),
        budget=budget,
    )


def model_server_connection(protocol: str, url: str) -> ResourceDescriptor:
    if protocol == "ollama":
        return ResourceDescriptor(clazz=ResourceName.ChatModel.OLLAMA_CONNECTION, base_url=url)
    return ResourceDescriptor(
        clazz=ResourceName.ChatModel.OPENAI_COMPLETIONS_CONNECTION,
        api_base_url=f"{url}/v1",
        api_key="test",
    )
