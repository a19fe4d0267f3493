"""Where a call's reconciler comes from: the call, the function, or the agent by name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from actionjournal.durable.errors import ConfigurationError

F = TypeVar("F", bound=Callable[..., Any])
_ATTR = "__actionjournal_reconciler__"
NAME_ATTR = "__actionjournal_reconciler_name__"


def reconciled_by(reconciler: Callable[..., Any]) -> Callable[[F], F]:
    """Give a function its reconciler once, for every durable call of it::

    @reconciled_by(probe_payment)
    def charge(order_id, amount): ...
    """

    def mark(fn: F) -> F:
        setattr(fn, _ATTR, reconciler)
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
    given: Callable[..., Any] | str | None, fn: Callable[..., Any], named: dict[str, Callable]
) -> Callable[..., Any] | None:
    """The reconciler of one call: given per call (callable or name), else the function's own."""
    if isinstance(given, str):
        if given not in named:
            known = ", ".join(sorted(named)) or "none"
            raise ConfigurationError(
                f"no reconciler named {given!r} in this agent (registered: {known}); "
                "decorate an agent method with @reconciler(name)"
            )
        return named[given]
    if given is not None:
        return given
    return getattr(fn, _ATTR, None)
