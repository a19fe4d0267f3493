"""Where a call's reconciler comes from (the call, the function, or the agent by name), and
its two forms, checked when they are given rather than after a crash."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from actionjournal.durable.agent import NAME_ATTR
from actionjournal.durable.call_options import Reconciler
from actionjournal.durable.effects import is_coroutine_function
from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.outcomes import Failed, NotStarted, Outcome, Recovered, StillRunning

F = TypeVar("F", bound=Callable[..., Any])
_ATTR = "__actionjournal_reconciler__"
_FORMS = (
    "a reconciler takes one argument, the CallInfo, and returns an Outcome (Recovered, Failed, "
    "NotStarted or StillRunning); or none (Flink Agents' form), and returns the call's value "
    "or raises its failure"
)


def reconciled_by(reconciler: Callable[..., Any]) -> Callable[[F], F]:
    """Give a function its reconciler once, for every durable call of it::

    @reconciled_by(probe_payment)
    def charge(order_id, amount): ...
    """
    checked = as_reconciler(reconciler, "the reconciler of @reconciled_by")

    def mark(fn: F) -> F:
        setattr(fn, _ATTR, checked)
        return fn

    return mark


def reconciler(name: str) -> Callable[[F], F]:
    """Register an agent method as the reconciler called ``name``:
    ``ctx.durable_execute(fn, ..., reconciler="payments")``."""

    def mark(fn: F) -> F:
        setattr(fn, NAME_ATTR, name)
        return fn

    return mark


def resolve(
    given: Callable[..., Any] | str | None,
    fn: Callable[..., Any],
    named: dict[str, Callable[..., Any]],
    call: str,
) -> Reconciler | None:
    """The reconciler of one ``call``: given per call (callable or name), else the function's
    own; checked and in its one-argument form."""
    if isinstance(given, str):
        if given not in named:
            known = ", ".join(sorted(named)) or "none"
            raise ConfigurationError(
                f"reconciler={given!r} of {call}: no reconciler of that name in this agent "
                f"(registered: {known}); decorate an agent method with @reconciler(name)"
            )
        return as_reconciler(named[given], f"reconciler {given!r} of {call}")
    if given is not None:
        return as_reconciler(given, f"reconciler={given!r} of {call}")
    return getattr(fn, _ATTR, None)


def as_reconciler(candidate: Any, what: str) -> Reconciler:
    """``candidate`` if it takes the CallInfo; Flink Agents' zero-argument form wrapped."""
    if not callable(candidate):
        raise ConfigurationError(
            f"{what} is neither a callable nor the name of a reconciler registered in the agent: "
            f"{_FORMS}"
        )
    try:
        signature = inspect.signature(candidate)
    except (TypeError, ValueError):  # no signature to check (some builtins): the usual form
        return candidate
    if _accepts(signature, 1):
        return candidate
    if _accepts(signature, 0):
        return _zero_argument(candidate)
    raise ConfigurationError(f"{what} takes {signature}: {_FORMS}")


def _accepts(signature: inspect.Signature, n: int) -> bool:
    try:
        signature.bind(*([None] * n))
    except TypeError:
        return False
    return True


def _zero_argument(reconcile: Callable[[], Any]) -> Reconciler:
    """Flink Agents' form: what it returns is the call's value (``Recovered``), what it raises
    the call's failure (``Failed``). An Outcome it returns is taken as it is."""
    if is_coroutine_function(reconcile):

        async def settle_async(info: Any) -> Outcome:
            return await _settled(reconcile())

        return settle_async

    def settle(info: Any) -> Outcome | Awaitable[Outcome]:
        try:
            value = reconcile()
        except Exception as exc:
            return Failed(exc)
        return _settled(value) if inspect.isawaitable(value) else _outcome(value)

    return settle


async def _settled(awaitable: Awaitable[Any]) -> Outcome:
    try:
        return _outcome(await awaitable)
    except Exception as exc:
        return Failed(exc)


def _outcome(value: Any) -> Outcome:
    if isinstance(value, Recovered | Failed | NotStarted | StillRunning):
        return value
    return Recovered(value)
