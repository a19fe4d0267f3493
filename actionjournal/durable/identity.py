"""Identities of keys, actions, calls and events.

All identities are digests of stable, typed data, never of ``id()``, ``hash()``
or random ids, so they are the same in every process and after every restart.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable
from typing import Any

import msgspec

_key_encoder = msgspec.msgpack.Encoder(order="sorted")


def _digest(*parts: str | bytes) -> str:
    h = hashlib.blake2b(digest_size=16)
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(4, "big"))
        h.update(data)
    return h.hexdigest()


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
    while isinstance(fn, functools.partial):
        fn = fn.func
    fn = getattr(fn, "__func__", fn)
    module = getattr(fn, "__module__", None) or "?"
    name = getattr(fn, "__qualname__", None) or type(fn).__qualname__
    return f"{module}:{name}"


def event_fingerprint(event_type: str, attributes: bytes) -> str:
    return _digest(b"event", event_type, attributes)


def action_id(seq: int, action: str, trigger_fingerprint: str, ordinal: int) -> str:
    """One action execution: (run, action name, trigger-event fingerprint, ordinal)."""
    return _digest(b"action", str(seq), action, trigger_fingerprint, str(ordinal))


def event_id(operator_uid: str, key_id: str, parent: str, index: int) -> str:
    """Ids of events derive from the operator, the key and what produced them (the action
    execution that sent them, or ``"input"``), so they survive replay and never collide
    across keys or operators. Replayed events keep the id journaled with them."""
    return _digest(b"event-id", operator_uid, key_id, parent, str(index))


def call_id(
    namespace: str, operator_uid: str, epoch: int, key: str, seq: int, action: str, call: str
) -> str:
    """The stable id (idempotency key) of one durable call; a new epoch makes new ids."""
    return _digest(b"call", namespace, operator_uid, str(epoch), key, str(seq), action, call)


def input_digest(data: bytes) -> str:
    return _digest(b"input", data)
