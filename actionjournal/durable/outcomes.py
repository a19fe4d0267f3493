"""What a reconciler answers about a call whose outcome is unknown.

A call is *unknown* when its ``CallStarted`` is journaled but no outcome is:
the process died while it ran. Re-running it blindly could pay twice, so its
reconciler is asked what actually happened.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CallInfo:
    """Identity of a durable call, given to the called function and to reconcilers."""

    call_id: str
    """Stable across restarts and processes: use it as the idempotency key."""
    durable_id: str | None
    function_id: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    attempt: int
    key_id: str
    seq: int
    action: str


@dataclass(frozen=True)
class Recovered:
    """The call had finished with this value."""

    value: Any


@dataclass(frozen=True)
class Failed:
    """The call had finished with this error."""

    error: BaseException


@dataclass(frozen=True)
class NotStarted:
    """The call never took effect: it is safe to run it now."""


@dataclass(frozen=True)
class StillRunning:
    """The call is still running elsewhere: ask again after ``retry_after`` seconds."""

    retry_after: float = 1.0


Outcome = Recovered | Failed | NotStarted | StillRunning
