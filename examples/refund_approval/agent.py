"""The refund approval agent: it proposes a refund and waits for a person, up to a day.

1. ``propose``: a refund request comes in (a dict, or a Kafka record of JSON); the agent
   proposes an amount by the shop's policy, remembers the proposal, and expects the
   signal ``approval``. The proposal leaves as an output with the signal's id, for
   whoever approves (a person, through a UI that answers with a ``SignalInput``).
2. ``decide``: the approval arrives in time: an approved refund is paid (a durable call
   to the payments service, made once even across crashes), a rejected one is not.
3. ``escalate``: nobody answered within ``timeout`` (a day by default): the case goes to
   a supervisor (a durable call too). An approval that comes later runs nothing; it is
   journaled and shows in ``actionjournal signals list``.

Nothing runs while it waits: no action is held open, the key takes other inputs, and
checkpoints, restores and upgrades keep the expectation in the key's state.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import httpx

from actionjournal import (
    Agent,
    InputEvent,
    OutputEvent,
    SignalReceived,
    SignalTimedOut,
    action,
    current_call,
)

MAX_WITHOUT_RECEIPT = 50  # the policy: without a receipt, refund at most this much


def call(url: str, step: str, value: Any) -> Any:
    """A request to the payments (or escalation) service, with the call's idempotency key."""
    call_id = current_call().call_id
    reply = httpx.post(f"{url}/calls/{step}", json={"call_id": call_id, "value": value}, timeout=60)
    reply.raise_for_status()
    return reply.json()["value"]


def request_of(element: Any) -> dict[str, Any]:
    """A refund request: a dict, or a Kafka record (``KafkaMessage``) holding its JSON."""
    if isinstance(element, dict):
        return element
    return dict(json.loads(element.text))


def proposal(request: dict[str, Any]) -> int:
    """The shop's policy: the whole amount with a receipt, else up to 50."""
    amount = int(request["amount"])
    return amount if request.get("receipt") else min(amount, MAX_WITHOUT_RECEIPT)


class RefundApproval(Agent):
    """Input: ``{"id", "customer", "amount", "receipt"}``, keyed by request. Outputs:
    ``proposed`` (with the signal to answer), then ``refunded``, ``rejected`` or
    ``escalated``."""

    uid = "refund-approval"  # the Flink operator uid and part of the journal's identity

    def __init__(self, payments_url: str, timeout: timedelta = timedelta(hours=24)) -> None:
        self.payments_url = payments_url
        self.timeout = timeout

    @action(InputEvent)
    def propose(self, event: InputEvent, ctx: Any) -> None:
        request = request_of(event.input)
        amount = proposal(request)
        signal = ctx.expect_signal("approval", timeout=self.timeout)
        ctx.short_term_memory.set(signal.id, {"id": request["id"], "amount": amount})
        ctx.send_event(
            OutputEvent(
                {
                    "id": request["id"],
                    "status": "proposed",
                    "amount": amount,
                    "signal": signal.id,
                    "deadline": signal.deadline.isoformat(),
                }
            )
        )

    @action(SignalReceived)
    def decide(self, event: SignalReceived, ctx: Any) -> None:
        case = ctx.short_term_memory.get(event.signal_id)
        answer = event.value if isinstance(event.value, dict) else {"approved": event.value}
        if answer.get("approved") is True:
            receipt = ctx.durable_execute(call, self.payments_url, "refund", case)
            outcome = {"status": "refunded", "receipt": receipt}
        else:
            outcome = {"status": "rejected", "reason": answer.get("reason", "")}
        ctx.send_event(OutputEvent({"id": case["id"], "amount": case["amount"], **outcome}))

    @action(SignalTimedOut)
    def escalate(self, event: SignalTimedOut, ctx: Any) -> None:
        case = ctx.short_term_memory.get(event.signal_id)
        ticket = ctx.durable_execute(call, self.payments_url, "escalate", case)
        outcome = {"status": "escalated", "ticket": ticket}
        ctx.send_event(OutputEvent({"id": case["id"], "amount": case["amount"], **outcome}))


REQUESTS = [
    {"id": "r-1", "customer": "ann", "amount": 120, "receipt": True},
    {"id": "r-2", "customer": "bob", "amount": 80, "receipt": False},
    {"id": "r-3", "customer": "cem", "amount": 30, "receipt": False},
]
"""Three requests: in the examples ann's refund is approved, bob's rejected, and nobody
answers cem's in time."""


def request_key(element: Any) -> Any:
    """The agent key of a request: its id (a Kafka record's key, as kafka_source keys it)."""
    return element["id"] if isinstance(element, dict) else element.key
