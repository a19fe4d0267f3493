"""Agent memory with path access, recording every update for replay."""

from __future__ import annotations

import copy
from typing import Any, Literal

from actionjournal.durable.errors import ContextClosedError
from actionjournal.durable.records import MemoryOp
from actionjournal.durable.values import ValueCodec

_MISSING = object()


class Memory:
    """Nested key/value memory addressed by dotted paths (``"order.items"``).

    Short-term memory is kept per key across runs; sensory memory is cleared
    when a run ends. Values are stored as their journaled form, so what an
    action reads on its first run equals what it reads after a replay.

    A path holds either a value or an object (a dict, made by :meth:`new_object` or
    set as a dict). An update that would turn one into the other raises
    ``ValueError`` instead of silently dropping data, as Flink Agents' memory does:
    ``set`` of a value over an object (its fields would be lost), ``new_object`` over
    a value (unless ``overwrite=True``), and any path through a value
    (``set("a.b", 1)`` when ``a`` holds a value). Delete the path first to change
    what it holds. Replay applies the same rules.
    """

    def __init__(
        self,
        scope: Literal["short_term", "sensory"],
        data: dict[str, Any],
        values: ValueCodec,
        ops: list[MemoryOp],
        owner: str = "",
    ) -> None:
        self._scope = scope
        self._data = data
        self._values = values
        self._ops = ops  # the current action's op list
        self._owner = owner  # "action NAME (key ..., seq ...)", for errors
        self._closed = False

    def close(self) -> None:
        """The action finished: its memory handle may no longer be used."""
        self._closed = True

    def get(self, path: str, default: Any = None) -> Any:
        self._check_open("get")
        node = _lookup(self._data, _split(path))
        return default if node is _MISSING else copy.deepcopy(node)

    def __contains__(self, path: str) -> bool:
        return self.kind(path) is not None

    def kind(self, path: str = "") -> Literal["object", "value"] | None:
        """What ``path`` holds (``""``: the root, an object), without copying it."""
        self._check_open("kind")
        node = self._data if path == "" else _lookup(self._data, _split(path))
        if node is _MISSING:
            return None
        return "object" if isinstance(node, dict) else "value"

    def field_names(self, path: str = "") -> list[str]:
        """The names of the fields of the object at ``path`` (``""``: the root), in the
        order they were made; ``[]`` when ``path`` holds a value or nothing."""
        self._check_open("field_names")
        node = self._data if path == "" else _lookup(self._data, _split(path))
        return list(node) if isinstance(node, dict) else []

    def set(self, path: str, value: Any) -> None:
        self._check_open("set")
        data, value = self._values.roundtrip(value, f"memory value at {path!r}")
        apply_set(self._data, path, value)
        self._ops.append(MemoryOp(self._scope, "set", path, data))

    def delete(self, path: str) -> None:
        self._check_open("delete")
        apply_delete(self._data, path)
        self._ops.append(MemoryOp(self._scope, "delete", path))

    def new_object(self, path: str, overwrite: bool = False) -> None:
        """Create an empty nested object at ``path``.

        An object already there is kept, unless ``overwrite`` (then it is emptied); a
        value already there raises ``ValueError``, unless ``overwrite`` replaces it.
        """
        self._check_open("new_object")
        existing = _lookup(self._data, _split(path))
        if isinstance(existing, dict) and not overwrite:
            return
        if existing is not _MISSING and not isinstance(existing, dict) and overwrite:
            # Recorded as two ops, so a replay passes the same rules without a flag.
            apply_delete(self._data, path)
            self._ops.append(MemoryOp(self._scope, "delete", path))
        apply_new_object(self._data, path)
        self._ops.append(MemoryOp(self._scope, "new_object", path))

    def to_dict(self) -> dict[str, Any]:
        self._check_open("to_dict")
        return copy.deepcopy(self._data)

    def _check_open(self, what: str) -> None:
        if self._closed:
            raise ContextClosedError(
                f"{self._scope} memory {what} through the context of {self._owner or 'an action'}"
                " after the action finished: a context is valid only while its action runs. "
                "Read and update memory inside the action"
            )


def apply_op(data: dict[str, Any], op: MemoryOp, values: ValueCodec) -> None:
    """Replay one recorded update, under the same rules as when it was made."""
    if op.op == "set":
        assert op.value is not None
        apply_set(data, op.path, values.decode(op.value))
    elif op.op == "delete":
        apply_delete(data, op.path)
    else:
        apply_new_object(data, op.path)


def apply_set(data: dict[str, Any], path: str, value: Any) -> None:
    parts = _split(path)
    node = _parent(data, parts, path)
    existing = node.get(parts[-1], _MISSING)
    if isinstance(existing, dict) and not isinstance(value, dict):
        raise ValueError(
            f"memory path {path!r} holds an object with fields {sorted(existing)[:5]}; setting "
            f"it to a {type(value).__name__} would drop them. Delete {path!r} first, or set "
            "a path inside it"
        )
    node[parts[-1]] = value


def apply_new_object(data: dict[str, Any], path: str) -> None:
    parts = _split(path)
    node = _parent(data, parts, path)
    existing = node.get(parts[-1], _MISSING)
    if existing is not _MISSING and not isinstance(existing, dict):
        raise ValueError(
            f"memory path {path!r} holds a value ({type(existing).__name__}), not an object: "
            "new_object would drop it. Delete it first, or pass overwrite=True"
        )
    node[parts[-1]] = {}


def apply_delete(data: dict[str, Any], path: str) -> None:
    *parents, leaf = _split(path)
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _parent(data: dict[str, Any], parts: list[str], path: str) -> dict[str, Any]:
    """The object that holds the last part of ``path``; missing objects are created."""
    node = data
    for i, part in enumerate(parts[:-1]):
        child = node.get(part, _MISSING)
        if child is _MISSING:
            child = node[part] = {}
        elif not isinstance(child, dict):
            where = ".".join(parts[: i + 1])
            raise ValueError(
                f"memory path {path!r} goes through {where!r}, which holds a value "
                f"({type(child).__name__}), not an object. Delete {where!r} first, or "
                "use another path"
            )
        node = child
    return node


def _lookup(data: dict[str, Any], parts: list[str]) -> Any:
    node: Any = data
    for part in parts:
        if not isinstance(node, dict) or part not in node:
            return _MISSING
        node = node[part]
    return node


def _split(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ValueError(f"invalid memory path {path!r}: use dotted names like 'order.items'")
    return parts
