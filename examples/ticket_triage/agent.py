"""The ticket triage agent: a chat model, a tool, and a remote agent job.

1. ``triage``: a structured chat call (category, urgency, summary) and a tool call
   (the customer's account, from a local function standing in for a CRM), in parallel.
2. ``resolve``: urgent tickets and enterprise customers go to a remote investigator
   agent (:class:`~actionjournal.reconcilers.RemoteAgentJob`); then a writer model
   drafts the reply.

Each of these is a durable call. After a crash, answers already received are replayed;
a remote run that was going when the process died is re-attached (its thread is named
after the call's stable id), never posted again.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any, Literal

from pydantic import BaseModel

from actionjournal import Agent, Event, InputEvent, OutputEvent, RunnerContext, action
from actionjournal.chat import ChatModel, OllamaChat
from actionjournal.reconcilers import RemoteAgentJob


class Triage(BaseModel):
    category: Literal["billing", "bug", "account", "other"]
    urgency: Literal["low", "high"]
    summary: str


ACCOUNTS = {
    "acme": {"plan": "enterprise", "since": 2019},
    "globex": {"plan": "team", "since": 2022},
    "initech": {"plan": "free", "since": 2024},
}


def lookup_account(customer: str) -> dict[str, Any]:
    """The tool: the customer's account. A local function here; a CRM request in real life,
    which is why it runs as a durable call (answered once, replayed after a crash)."""
    return {"customer": customer, **ACCOUNTS.get(customer, {"plan": "unknown", "since": None})}


class TicketTriage(Agent):
    """Input: ``{"id", "customer", "text"}``, keyed by customer. Output: the triage, the
    account, the investigator's finding (if escalated) and the drafted reply."""

    uid = "ticket-triage"

    def __init__(self, chat_models: dict[str, ChatModel], investigator: RemoteAgentJob) -> None:
        self.chat_models = chat_models
        self.investigator = investigator

    @action(InputEvent)
    async def triage(self, event: InputEvent, ctx: RunnerContext) -> None:
        ticket = event.input
        prompt = (
            "Triage this support ticket: category, urgency and a one-line summary. "
            f"Answer with JSON only.\n\nTicket: {ticket['text']}"
        )
        triage, account = await asyncio.gather(
            ctx.chat_async("triage", prompt, schema=Triage),
            ctx.durable_execute_async(lookup_account, ticket["customer"]),
        )
        attributes = {"ticket": ticket, "triage": triage.model_dump(), "account": account}
        ctx.send_event(Event("triaged", attributes))

    @action("triaged")
    async def resolve(self, event: Event, ctx: RunnerContext) -> None:
        ticket, triage, account = (event.attributes[k] for k in ("ticket", "triage", "account"))
        finding = None
        if triage["urgency"] == "high" or account["plan"] == "enterprise":
            finding = await self.investigator.run(
                ctx, f"ticket {ticket['id']} from {ticket['customer']}: {triage['summary']}"
            )
        reply = await ctx.chat_async(
            "writer",
            [
                {"role": "system", "content": "You write short, friendly support replies."},
                {
                    "role": "user",
                    "content": f"Ticket: {ticket['text']}\nCategory: {triage['category']}\n"
                    f"Investigation: {finding or 'none'}\nWrite the reply.",
                },
            ],
        )
        ctx.send_event(
            OutputEvent(
                {
                    "id": ticket["id"],
                    "customer": ticket["customer"],
                    "triage": triage,
                    "plan": account["plan"],
                    "escalated": finding is not None,
                    "finding": finding,
                    "reply": reply.content,
                }
            )
        )


def customer_of(ticket: dict[str, Any]) -> str:
    return ticket["customer"]


TEST_LATENCY = {"triage": 0.2, "writer": 0.2}


def chat_models(endpoint: str | None = None, model: str | None = None) -> dict[str, ChatModel]:
    """Both resources on ``endpoint`` with ``model`` (a real Ollama), or, when ``model`` is
    None, the test server's model ids ``triage`` and ``writer``."""
    endpoint = endpoint or os.environ.get("OLLAMA_HOST", "http://127.0.0.1:11434")
    return {
        name: OllamaChat(endpoint=endpoint, model=model or name, timeout=120)
        for name in ("triage", "writer")
    }


def investigator(base_url: str) -> RemoteAgentJob:
    return RemoteAgentJob(base_url, "investigator", timeout=30.0)


TICKETS = [
    {"id": 1, "customer": "acme", "text": "Our invoices since March show the wrong VAT."},
    {"id": 2, "customer": "globex", "text": "Export to CSV crashes with a 500 error."},
    {"id": 3, "customer": "initech", "text": "How do I change my email address?"},
    {"id": 4, "customer": "globex", "text": "Two admins cannot log in since this morning."},
    {"id": 5, "customer": "acme", "text": "Please add our new office to the account."},
]
