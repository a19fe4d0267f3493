"""Arguments a durable call passes must bind to its function's signature, checked before
anything is journaled: a misspelled option (``on_unknwn="fail"``) would otherwise reach the
function as a keyword, its ``TypeError`` would be journaled as the call's final outcome, and
the fixed code would then diverge from the journal."""

from __future__ import annotations

import difflib
import inspect
import weakref
from collections.abc import Callable, Iterable
from types import FunctionType
from typing import Any

from actionjournal.durable.errors import CallArgumentsError

# Plain functions' signatures, looked up once each (inspect.signature costs ~10 µs).
_signatures: weakref.WeakKeyDictionary[Callable[..., Any], inspect.Signature | None] = (
    weakref.WeakKeyDictionary()
)


def _signature(fn: Callable[..., Any]) -> inspect.Signature | None:
    """``fn``'s signature, or ``None`` when Python cannot tell it (some builtins)."""
    cacheable = type(fn) is FunctionType
    if cacheable and fn in _signatures:
        return _signatures[fn]
    try:
        signature: inspect.Signature | None = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    if cacheable:
        _signatures[fn] = signature
    return signature


def _fits(fn: FunctionType, positional: int, named: dict[str, Any]) -> bool:
    """A quick yes for a plain function whose code object shows the arguments fit; a no is
    only "look closer" (defaults, keyword-only parameters)."""
    code = fn.__code__
    if named or code.co_kwonlyargcount:
        return False
    if code.co_flags & inspect.CO_VARARGS:
        return positional >= code.co_argcount - len(fn.__defaults__ or ())
    defaults = len(fn.__defaults__ or ())
    return code.co_argcount - defaults <= positional <= code.co_argcount


def check_binds(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    where: tuple[str, str],
    options: Iterable[str],
) -> None:
    """Raise :class:`CallArgumentsError` naming the argument when ``fn(*args, **kwargs)``
    would not bind; a keyword close to one of ``options`` is named as the option meant.
    ``where``: the call's function id and its action's name, for the message."""
    if type(fn) is FunctionType and _fits(fn, len(args), kwargs):
        return
    signature = _signature(fn)
    if signature is None:
        return
    try:
        signature.bind(*args, **kwargs)
    except TypeError as exc:
        hint = ""
        known = set(signature.parameters)
        for name in kwargs:
            if name in known:
                continue
            close = difflib.get_close_matches(name, list(options), n=1, cutoff=0.75)
            if close:
                hint = f" Did you mean the option `{close[0]}`? (`{name}` is not one of them)"
                break
        raise CallArgumentsError(
            f"durable call {where[0]} of action {where[1]} was refused before it ran, and "
            f"nothing was journaled: its arguments do not fit {fn!r}'s signature "
            f"{signature}: {exc}.{hint}"
        ) from None
