"""A durable call's options, and the value object the call decision passes around."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import msgspec

from actionjournal.durable.config import UnknownOutcomePolicy
from actionjournal.durable.outcomes import CallInfo
from actionjournal.durable.retry import RetryPolicy

Reconciler = Callable[[CallInfo], Any]  # returns an Outcome, or an awaitable of one

CallHead = tuple[str, str, int, str, int, str, int, str, str, str | None, str]
"""namespace, operator_uid, epoch, key_id, seq (the run), action_id, index, call_id,
function_id, durable_id, arg_digest: the first fields of every record of a call."""


@dataclass(frozen=True)
class CallOptions:
    """A durable call's options (``ctx.durable_execute(fn, ..., durable_id=...)``)."""

    durable_id: str | None = None
    reconciler: Reconciler | None = None
    on_unknown: UnknownOutcomePolicy | None = None
    record_failures: bool = True
    reconcile_timeout: float = 300.0
    retry: RetryPolicy | None = None  # None: the job's journal.retry


OPTIONS = tuple(f.name for f in dataclasses.fields(CallOptions))
"""The option names of a durable call: a keyword close to one is named as the one meant."""


class Call(msgspec.Struct, frozen=True):
    """One durable call as the decision sees it, fixed when the call is made: the function
    and its arguments, its options, and what identifies it in the journal.

    ``head`` is what each of its records starts with (the run's identity, then the fields of
    :class:`~actionjournal.durable.records.CallRecord`), made once, in record order. A
    msgspec Struct: one is made per durable call, and a frozen dataclass costs several times
    as much to make.
    """

    fn: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    options: CallOptions
    index: int  # its position in its action execution, taken when the call is made
    function_id: str
    arg_digest: str
    call_id: str
    policy: str  # the on_unknown policy in effect: rerun, reconcile or fail
    head: CallHead

    @property
    def name(self) -> str:
        """How messages name it: ``durable call mod:fn (call id ...)``."""
        return f"durable call {self.function_id} (call id {self.call_id})"

    def __str__(self) -> str:  # messages take the call itself, made into text only if shown
        return self.name


class Named:
    """``prefix`` and a call, made into text only when a message shows it (most never do)."""

    __slots__ = ("call", "prefix")

    def __init__(self, prefix: str, call: object) -> None:
        self.prefix, self.call = prefix, call

    def __str__(self) -> str:
        return f"{self.prefix}{self.call}"
