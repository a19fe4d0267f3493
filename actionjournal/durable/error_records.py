"""Exceptions of durable calls as the journal keeps them, and as a replay raises them again.

A replayed exception equals the original in type, ``str()``, args and attributes, or it is
a :class:`~actionjournal.durable.errors.RecordedCallError` (docs/concepts.md, "Errors").
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

import msgspec

from actionjournal.durable.errors import ActionJournalError, RecordedCallError
from actionjournal.durable.guards import where
from actionjournal.durable.records import ErrorInfo
from actionjournal.durable.values import ValueCodec, loaded_type, type_name

log = logging.getLogger(__name__)
_warned: set[str] = set()  # exception types this process warned about


def capture_error(values: ValueCodec, exc: BaseException, depth: int = 0) -> ErrorInfo:
    """Record an exception: type, message, args, attributes and cause chain.

    When it could not be rebuilt equal from what is recorded (an attribute that cannot be
    journaled, a class not reachable by its name), args and attributes are left out, so it
    replays as RecordedCallError; that is logged once per exception type, on the first run.
    """
    cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
    info = ErrorInfo(
        type=type_name(type(exc)),
        message=_text(exc),
        args=None,
        cause=capture_error(values, cause, depth + 1) if cause is not None and depth < 8 else None,
        traceback="".join(traceback.format_exception_only(type(exc), exc)).strip(),
    )
    args, state = values.exact(list(exc.args)), values.exact(_state(exc))
    if args is None or state is None:
        _warn(info.type, "its args or attributes hold a value that cannot be journaled")
        return info
    recorded = msgspec.structs.replace(info, args=args, state=state)
    if _rebuilt(values, recorded) is None:
        _warn(info.type, "it is not equal when rebuilt from its args and attributes")
        return info
    return recorded


def rebuild_error(values: ValueCodec, info: ErrorInfo) -> BaseException:
    """The recorded exception, rebuilt equal when it can be; else a RecordedCallError."""
    exc = _rebuilt(values, info) or RecordedCallError(info.type, info.message)
    if info.cause is not None:
        exc.__cause__ = rebuild_error(values, info.cause)
    return exc


def _rebuilt(values: ValueCodec, info: ErrorInfo) -> BaseException | None:
    """``type.__new__`` + args + attributes (the class's constructor only if that is not
    equal), accepted only if type, ``str()``, args and attributes equal the recorded ones."""
    cls = loaded_type(info.type)
    if cls is None or not issubclass(cls, BaseException) or info.args is None:
        return None
    try:
        args = tuple(values.decode(info.args))
        state = values.decode(info.state) if info.state is not None else {}
    except ActionJournalError:
        return None
    for construct in (cls.__new__, lambda cls, *args: cls(*args)):
        try:
            exc = construct(cls, *args)
            exc.args = args
            for name, value in state.items():
                setattr(exc, name, value)
        except Exception:
            continue
        if _equal(values, exc, info):
            return exc
    return None


def _equal(values: ValueCodec, exc: BaseException, info: ErrorInfo) -> bool:
    if _text(exc) != info.message:
        return False
    if info.state is None:  # recorded before attributes were: message and type only
        return True
    return values.exact(list(exc.args)) == info.args and values.exact(_state(exc)) == info.state


def _state(exc: BaseException) -> dict[str, Any]:
    """An exception's attributes: its ``__dict__``, and the file names of an OSError, which
    live outside it and outside its args."""
    state = dict(vars(exc))
    if isinstance(exc, OSError):
        state.update({k: getattr(exc, k) for k in ("filename", "filename2") if getattr(exc, k)})
    return state


def _text(exc: BaseException) -> str:
    try:
        return str(exc)
    except Exception:
        return f"<{type_name(type(exc))} whose str() raised>"


def _warn(name: str, reason: str) -> None:
    if name in _warned:
        return
    _warned.add(name)
    log.warning(
        "exception %s%s cannot be journaled so that a replay raises it again: %s. After a "
        "restart its replay raises RecordedCallError instead; raise an exception whose args "
        "and attributes are plain data, or pass record_failures=False to the call",
        name,
        where(),
        reason,
    )
