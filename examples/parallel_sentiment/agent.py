"""The parallel sentiment agent (REFERENCES, "Parallel calls").

A review is judged on taste and on service at the same time: one action emits an
intermediate event, two actions listen on it and each sends a chat request; a response
handler collects both aspects in sensory memory and, once both are in, sends one
aggregation request. Wall clock is about slowest branch + aggregation, not the sum.

Every chat request is a durable call: after a crash, answers already received are
replayed from the journal and the model is not asked again.

Agents live in an importable module (not the job script): Flink workers unpickle the
agent by module name, and journaled pydantic results are rebuilt from loaded modules.
"""

from __future__ import annotations

import os
from typing import Any, Literal

from pydantic import BaseModel, Field

from actionjournal import Event, InputEvent, OutputEvent, RunnerContext, action
from actionjournal.chat import ChatAgent, ChatModel, ChatRequestEvent, ChatResponseEvent, OllamaChat

ASPECTS = ("taste", "service")


class AspectScore(BaseModel):
    """One aspect of a review, judged on its own."""

    score: int = Field(ge=1, le=5, description="1 = very bad ... 5 = excellent")
    reason: str = Field(description="one short sentence")


class Verdict(BaseModel):
    """The overall judgement, made from the two aspect scores."""

    sentiment: Literal["positive", "mixed", "negative"]
    score: int = Field(ge=1, le=5)
    summary: str = Field(description="one sentence for the restaurant owner")


SYSTEM = (
    "You judge restaurant reviews. Answer only with JSON matching the given schema, no other text."
)


def judge_request(aspect: str, review: dict[str, Any]) -> ChatRequestEvent:
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": f"Judge only the {aspect} described in this review, from 1 to 5, "
            f"with one short reason.\n\nReview: {review['text']}",
        },
    ]
    return ChatRequestEvent(f"{aspect}_judge", messages, schema=AspectScore, request_id=aspect)


def verdict_request(review: dict[str, Any], aspects: dict[str, Any]) -> ChatRequestEvent:
    scores = "\n".join(f"- {a}: {s['score']}/5 ({s['reason']})" for a, s in sorted(aspects.items()))
    messages = [
        {"role": "system", "content": SYSTEM},
        {
            "role": "user",
            "content": "Give an overall verdict on this review from its aspect scores."
            f"\n\nReview: {review['text']}\n\nAspect scores:\n{scores}",
        },
    ]
    return ChatRequestEvent("summarizer", messages, schema=Verdict, request_id="verdict")


class ParallelSentiment(ChatAgent):
    """Input: ``{"id", "restaurant", "text"}``, keyed by restaurant. Output: the review's
    aspects, its verdict, and the restaurant's running average (short-term memory)."""

    uid = "parallel-sentiment"

    def __init__(self, chat_models: dict[str, ChatModel]) -> None:
        self.chat_models = chat_models

    @action(InputEvent)
    async def receive(self, event: InputEvent, ctx: RunnerContext) -> None:
        ctx.sensory_memory.set("review", event.input)
        ctx.send_event(Event("review_received", {"review": event.input}))

    # Two actions on the same event: their requests go out together.
    @action("review_received")
    async def judge_taste(self, event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(judge_request("taste", event.attributes["review"]))

    @action("review_received")
    async def judge_service(self, event: Event, ctx: RunnerContext) -> None:
        ctx.send_event(judge_request("service", event.attributes["review"]))

    @action(ChatResponseEvent)
    async def collect(self, event: ChatResponseEvent, ctx: RunnerContext) -> None:
        """Fan-in. ``async`` on purpose: two answers arriving together are collected one
        after the other on the run's event loop, so exactly one of them sees both."""
        review = ctx.sensory_memory.get("review")
        if event.request_id == "verdict":
            ctx.send_event(OutputEvent(self._output(ctx, review, event.parsed)))
            return
        ctx.sensory_memory.set(f"aspects.{event.request_id}", event.parsed.model_dump())
        aspects = ctx.sensory_memory.get("aspects", {})
        if set(aspects) == set(ASPECTS):
            ctx.send_event(verdict_request(review, aspects))

    def _output(self, ctx: RunnerContext, review: dict[str, Any], verdict: Verdict) -> dict:
        # Short-term memory outlives the run: a per-restaurant tally across reviews.
        tally = ctx.short_term_memory.get("tally", {"reviews": 0, "total": 0})
        tally = {"reviews": tally["reviews"] + 1, "total": tally["total"] + verdict.score}
        ctx.short_term_memory.set("tally", tally)
        return {
            "id": review["id"],
            "restaurant": review["restaurant"],
            "aspects": ctx.sensory_memory.get("aspects"),
            "verdict": verdict.model_dump(),
            "restaurant_average": round(tally["total"] / tally["reviews"], 2),
        }


def restaurant_of(review: dict[str, Any]) -> str:
    """The key: reviews of one restaurant run in order, different restaurants in parallel."""
    return review["restaurant"]


TEST_MODELS = {
    "taste_judge": "taste-judge",
    "service_judge": "service-judge",
    "summarizer": "summarizer",
}
"""Resource name -> model id on the local test server (one id each, so latencies differ)."""

TEST_LATENCY = {"taste-judge": 0.4, "service-judge": 0.3, "summarizer": 0.3}
"""Seconds per request on the test server: a run takes about 0.4 + 0.3, not 1.0."""


def chat_models(endpoint: str | None = None, model: str | None = None) -> dict[str, ChatModel]:
    """The agent's models: every resource on ``endpoint`` with ``model`` (a real Ollama),
    or, when ``model`` is None, the test server's model ids."""
    endpoint = endpoint or os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434")
    return {
        name: OllamaChat(endpoint=endpoint, model=model or test_id, timeout=120)
        for name, test_id in TEST_MODELS.items()
    }


REVIEWS = [
    {"id": 1, "restaurant": "trattoria", "text": "The pasta was divine, but we waited an hour."},
    {"id": 2, "restaurant": "noodle-bar", "text": "Friendly staff, bland broth."},
    {"id": 3, "restaurant": "trattoria", "text": "Great tiramisu and a waiter who cared."},
    {"id": 4, "restaurant": "noodle-bar", "text": "Cold noodles, rude cashier, never again."},
    {"id": 5, "restaurant": "trattoria", "text": "Pizza burnt, but the owner apologised."},
    {"id": 6, "restaurant": "noodle-bar", "text": "Best ramen in town, quick service."},
]
