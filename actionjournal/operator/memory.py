"""Agent memory with path access, recording every update for replay."""

from __future__ import annotations

import copy
from typing import Any, Literal

from actionjournal.durable.records import MemoryOp
from actionjournal.durable.values import ValueCodec

_MISSING = object()


class Memory:
    """Nested key/value memory addressed by dotted paths (``"order.items"``).

    Short-term memory is kept per key across runs; sensory memory is cleared
    when a run ends. Values are stored as their journaled form, so what an
    action reads on its first run equals what it reads after a replay.
    """

    def __init__(
        self,
        scope: Literal["short_term", "sensory"],
        data: dict[str, Any],
        values: ValueCodec,
        ops: list[MemoryOp],
    ) -> None:
        self._scope = scope
        self._data = data
        self._values = values
        self._ops = ops  # the current action's op list; swapped per action execution

    def get(self, path: str, default: Any = None) -> Any:
        node: Any = self._data
        for part in _split(path):
            if not isinstance(node, dict) or part not in node:
                return default
            node = node[part]
        return copy.deepcopy(node)

    def __contains__(self, path: str) -> bool:
        return self.get(path, _MISSING) is not _MISSING

    def set(self, path: str, value: Any) -> None:
        data, value = self._values.roundtrip(value, f"memory value at {path!r}")
        self._ops.append(MemoryOp(self._scope, "set", path, data))
        apply_set(self._data, path, value)

    def delete(self, path: str) -> None:
        self._ops.append(MemoryOp(self._scope, "delete", path))
        apply_delete(self._data, path)

    def new_object(self, path: str, overwrite: bool = False) -> None:
        """Create an empty nested object at ``path`` (kept if present, unless ``overwrite``)."""
        if not overwrite and isinstance(self.get(path), dict):
            return
        self._ops.append(MemoryOp(self._scope, "new_object", path))
        apply_set(self._data, path, {})

    def to_dict(self) -> dict[str, Any]:
        return copy.deepcopy(self._data)


def apply_op(data: dict[str, Any], op: MemoryOp, values: ValueCodec) -> None:
    if op.op == "set":
        assert op.value is not None
        apply_set(data, op.path, values.decode(op.value))
    elif op.op == "delete":
        apply_delete(data, op.path)
    else:
        apply_set(data, op.path, {})


def apply_set(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, leaf = _split(path)
    node = data
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[leaf] = value


def apply_delete(data: dict[str, Any], path: str) -> None:
    *parents, leaf = _split(path)
    node: Any = data
    for part in parents:
        node = node.get(part) if isinstance(node, dict) else None
    if isinstance(node, dict):
        node.pop(leaf, None)


def _split(path: str) -> list[str]:
    parts = path.split(".")
    if not path or any(not p for p in parts):
        raise ValueError(f"invalid memory path {path!r}: use dotted names like 'order.items'")
    return parts
