"""``LoopBudget``: how much an agent loop (a chat request and the tool rounds it leads to)
may spend, kept in the journal so a crash never gives a loop its budget back.

Not in Flink Agents 0.3.1 (its 1.0 plan lists loop budgets); docs/chat.md describes it.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

BudgetResource = Literal["rounds", "tokens", "wall_time"]


class LoopBudget(BaseModel):
    """Limits of one agent loop; ``None`` leaves a resource unlimited."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int | None = Field(
        default=None,
        gt=0,
        description="Model answers the loop may ask for (each tool round is one answer).",
    )
    tokens: int | None = Field(
        default=None,
        gt=0,
        description="Tokens the model reported using (prompt plus completion), summed over "
        "the loop's answers; no round starts once they reach this.",
    )
    wall_time: float | None = Field(
        default=None,
        gt=0,
        description="Seconds from the loop's first round (a journaled clock reading), the "
        "time a job was down included: a deadline.",
    )
    on_exhausted: Literal["stop", "final_round"] = Field(
        default="stop",
        description="'stop': answer at once with what the loop has; 'final_round': ask the "
        "model once more, told to answer now without tools.",
    )
