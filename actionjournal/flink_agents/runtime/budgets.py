"""What an agent loop with a :class:`LoopBudget` has spent, kept in sensory memory.

Sensory memory is journaled with each action and re-applied on replay, and every number
here comes from journaled call results (the model's answers, and clock readings made as
durable calls), so a crash and a replay give a loop back nothing: a resumed loop goes on
from what it had spent, and decides as it decided before.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from actionjournal.durable.stats import JournalMetrics
from actionjournal.flink_agents.api.agents.budget import BudgetResource, LoopBudget
from actionjournal.flink_agents.api.chat_message import ChatMessage, MessageRole
from actionjournal.flink_agents.api.runner_context import RunnerContext

_SPENT = "_LOOP_BUDGET_CONTEXT"  # initial request id -> what its loop spent
WRAP_UP = (
    "The budget of this conversation is exhausted ({resource}). Do not call any tool: "
    "answer now, as well as you can with what you have."
)


class Spent:
    """Rounds and tokens a loop spent, when its clock started, and whether it ran out."""

    def __init__(self, saved: dict[str, Any] | None = None) -> None:
        saved = saved or {}
        self.rounds: int = saved.get("rounds", 0)
        self.tokens: int = saved.get("tokens", 0)
        self.started: float | None = saved.get("started")
        self.exhausted: BudgetResource | None = saved.get("exhausted")
        self.final: bool = saved.get("final", False)

    def saved(self) -> dict[str, Any]:
        return dict(vars(self))

    def report(self) -> dict[str, Any]:
        """What a response of an exhausted loop carries in ``extra_args``."""
        return {
            "budget_exhausted": self.exhausted,
            "budget_spent": {"rounds": self.rounds, "tokens": self.tokens},
        }


def load(ctx: RunnerContext, loop: str) -> Spent:
    return Spent((ctx.sensory_memory.get(_SPENT) or {}).get(loop))


def save(ctx: RunnerContext, loop: str, spent: Spent) -> None:
    loops = ctx.sensory_memory.get(_SPENT) or {}
    loops[loop] = spent.saved()
    ctx.sensory_memory.set(_SPENT, loops)


async def spent(ctx: RunnerContext, loop: str, budget: LoopBudget) -> Spent:
    """What ``loop`` spent before its next round; marks the resource that ran out, once."""
    spent = load(ctx, loop)
    if spent.exhausted is None:
        now = None
        if budget.wall_time is not None:  # a journaled reading: a replay sees the same time
            now = await ctx.durable_execute_async(time.time)
            if spent.started is None:
                spent.started = now
        spent.exhausted = _exhausted(budget, spent, now)
        if spent.exhausted is not None:
            metrics_of(ctx).budget_exhausted(spent.exhausted)
        save(ctx, loop, spent)
    return spent


def answered(ctx: RunnerContext, loop: str, response: ChatMessage) -> Spent:
    """Count the model's answer (journaled, so a replay counts the same) against ``loop``."""
    spent = load(ctx, loop)
    spent.rounds += 1
    spent.tokens += tokens_of(response)
    save(ctx, loop, spent)
    return spent


def _exhausted(budget: LoopBudget, spent: Spent, now: float | None) -> BudgetResource | None:
    if budget.rounds is not None and spent.rounds >= budget.rounds:
        return "rounds"
    if budget.tokens is not None and spent.tokens >= budget.tokens:
        return "tokens"
    wall_time, started = budget.wall_time, spent.started
    if wall_time is not None and now is not None and started is not None:
        return "wall_time" if now - started >= wall_time else None
    return None


def tokens_of(response: ChatMessage) -> int:
    """Prompt plus completion tokens the model reported (0 when it reported none)."""
    extra = response.extra_args
    return int(extra.get("promptTokens") or 0) + int(extra.get("completionTokens") or 0)


def wrap_up(resource: str) -> ChatMessage:
    return ChatMessage(role=MessageRole.USER, content=WRAP_UP.format(resource=resource))


def metrics_of(ctx: RunnerContext) -> JournalMetrics:
    return ctx._ctx.metrics


class Counted:
    """``ask`` (a setup's ``chat``) that counts each answer in the metrics when the model
    gives it, never when the answer is replayed. Its function id is ``ask``'s (through
    ``__func__``), so a call journaled without a budget is the same call."""

    def __init__(self, ask: Callable[..., ChatMessage], metrics: JournalMetrics) -> None:
        self.ask = ask
        self.metrics = metrics
        self.__func__ = getattr(ask, "__func__", ask)

    def __call__(self, *args: Any, **kwargs: Any) -> ChatMessage:
        response = self.ask(*args, **kwargs)
        self.metrics.budget_spent(1, tokens_of(response))
        return response
