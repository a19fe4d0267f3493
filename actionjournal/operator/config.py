"""What a run that fails does: the run failure policy and its options."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

RunFailurePolicy = Literal["fail", "dead-letter", "retry-then-dead-letter"]


class RunFailureOptions(BaseModel):
    """The run failure policy's options, as :class:`LocalRunner` takes them (the same as
    :class:`AgentsConfig`'s): checked when given."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    on_run_failure: RunFailurePolicy = "fail"
    run_failure_restarts: int = Field(3, ge=1)
