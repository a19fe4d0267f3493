"""Identities of keys, actions, calls and events.

All identities are digests of stable, typed data, never of ``id()``, ``hash()``
or random ids, so they are the same in every process and after every restart.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from types import FunctionType
from typing import Any

import msgspec

_key_encoder = msgspec.msgpack.Encoder(order="sorted")


def _framed(parts: tuple[str | bytes, ...]) -> bytes:
    """The parts, each prefixed with its length (so no two sequences collide)."""
    framed: list[bytes] = []
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        framed += (len(data).to_bytes(4, "big"), data)
    return b"".join(framed)


def _digest(*parts: str | bytes) -> str:
    return hashlib.blake2b(_framed(parts), digest_size=16).hexdigest()


def _typed(value: Any) -> Any:
    """Tag every level with its type so 1, "1", 1.0, True and (1,) never collide."""
    if isinstance(value, (list, tuple)):
        return [type(value).__name__, [_typed(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[_typed(k), _typed(v)] for k, v in value.items()]]
    return [type(value).__name__, value]


def key_id(key: Any) -> str:
    """Digest of the typed, canonical bytes of a Flink key."""
    try:
        data = _key_encoder.encode(_typed(key))
    except TypeError:
        raise TypeError(
            f"key of type {type(key).__name__} is not supported: use str, int, float, bool, bytes "
            "or tuples/lists of them"
        ) from None
    return _digest(b"key", data)


def function_id(fn: Callable[..., Any]) -> str:
    """``module:qualname`` of the function (partials and bound methods unwrapped)."""
    if type(fn) is FunctionType:  # the common case, answered directly
        return f"{fn.__module__ or '?'}:{fn.__qualname__ or type(fn).__qualname__}"
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{name}"


def bound_arguments(fn: Callable[..., Any]) -> tuple[list[Any], dict[str, Any]]:
    """Arguments bound by ``functools.partial`` (nested ones too): part of what a call is."""
    args: list[Any] = []
    kwargs: dict[str, Any] = {}
    while isinstance(fn, functools.partial):
        args[:0] = fn.args
        kwargs = {**fn.keywords, **kwargs}
        fn = fn.func
    return args, kwargs


ARGS_DIGEST_VERSION = "2"  # digests without a version predate canonical encoding (format 1)


_ARGS = [_framed((b"args", str(n))) for n in range(16)]  # the head, by number of positionals


def arguments_digest(positional: int, parts: list[bytes]) -> str:
    """Digest of a call's arguments: ``positional`` canonical values, then name/value pairs."""
    head = _ARGS[positional] if positional < 16 else _framed((b"args", str(positional)))
    if len(parts) == 1:  # the common case, framed inline
        framed = head + len(parts[0]).to_bytes(4, "big") + parts[0]
    else:
        framed = head + _framed(tuple(parts))
    return f"{ARGS_DIGEST_VERSION}:{hashlib.blake2b(framed, digest_size=16).hexdigest()}"


def is_legacy_digest(digest: str) -> bool:
    """An argument digest recorded before digests were canonical (it has no version)."""
    return ":" not in digest


def event_fingerprint(event_type: str, attributes: bytes) -> str:
    """``attributes``: the canonical bytes of the event's attributes (format-1 journals
    used their journaled bytes, see ``operator.run``)."""
    return _digest(b"event", event_type, attributes)


def action_id(seq: int, action: str, trigger_fingerprint: str, ordinal: int) -> str:
    """One action execution: (run, action name, trigger-event fingerprint, ordinal)."""
    return _digest(b"action", str(seq), action, trigger_fingerprint, str(ordinal))


def event_id(operator_uid: str, key_id: str, parent: str, index: int) -> str:
    """Ids of events derive from the operator, the key and what produced them (the action
    execution that sent them, or ``"input"``), so they survive replay and never collide
    across keys or operators. Replayed events keep the id journaled with them."""
    return _digest(b"event-id", operator_uid, key_id, parent, str(index))


def wait_id(operator_uid: str, key_id: str, action_id: str, index: int) -> str:
    """A timer or signal an action asked for without naming it: the operator, the key, the
    action execution and the request's place among the action's timer and signal requests
    (a replayed action has the same id; a process hash never enters it)."""
    return _digest(b"wait", operator_uid, key_id, action_id, str(index))


def call_id(
    namespace: str, operator_uid: str, epoch: int, key: str, seq: int, action: str, call: str
) -> str:
    """The stable id (idempotency key) of one durable call; a new epoch makes new ids."""
    return call_ids(namespace, operator_uid, epoch, key, seq, action)(call)


def call_ids(
    namespace: str, operator_uid: str, epoch: int, key: str, seq: int, action: str
) -> Callable[[str], str]:
    """:func:`call_id` of each call of one action execution: what they share is hashed once."""
    shared = hashlib.blake2b(
        _framed((b"call", namespace, operator_uid, str(epoch), key, str(seq), action)),
        digest_size=16,
    )

    def of(call: str) -> str:
        digest = shared.copy()
        data = call.encode()
        digest.update(len(data).to_bytes(4, "big") + data)  # _framed((call,))
        return digest.hexdigest()

    return of


def input_digest(canonical: bytes) -> str:
    """Digest of a run's input, from its canonical bytes."""
    return _digest(b"input", canonical)
