"""Memory as Flink Agents addresses it: objects with fields, over the engine's memory.

A ``MemoryObject`` is a live handle on an object at a path of short-term or sensory
memory: ``get`` of a nested object gives another handle, and every ``set`` or
``new_object`` through any handle is an update of the running action, journaled with
it and replayed with it. A handle is valid while its action runs.

Flink Agents keeps a dict set as a value apart from an object made with ``new_object``;
the engine keeps both as dicts, so a dict value is stored wrapped under one reserved
field and comes back as the dict that was set.
"""

from __future__ import annotations

from enum import Enum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from actionjournal.flink_agents.api.memory_reference import MemoryRef
    from actionjournal.operator.memory import Memory

NESTED_OBJECT = "NestedObject"  # what get_fields shows for a field holding an object
_DICT_VALUE = "__flink_agents_dict_value__"


class MemoryType(Enum):
    SENSORY = "sensory"
    SHORT_TERM = "short_term"


class MemoryObject:
    """An object in memory: its fields hold values or other objects.

    Paths are relative to this object and dotted (``"order.items"``); a ``MemoryRef``
    holds an absolute path.
    """

    def __init__(self, memory: Memory, prefix: str, memory_type: MemoryType) -> None:
        self._memory = memory
        self._prefix = prefix
        self._type = memory_type

    def get(self, path_or_ref: str | MemoryRef | dict[str, Any]) -> Any:
        """The value at the path (or reference), a ``MemoryObject`` for an object, or None."""
        path = self._path_of(path_or_ref)
        kind = self._memory.kind(path)
        if kind is None:
            return None
        if kind == "object" and not self._is_dict_value(path):
            return MemoryObject(self._memory, path, self._type)
        value = self._memory.get(path)
        return value[_DICT_VALUE] if kind == "object" else value

    def set(self, path: str, value: Any) -> MemoryRef:
        """Set a field to a value, making missing objects on the way; a reference to it.

        Setting a value where an object is raises ``ValueError`` (its fields would be lost).
        """
        from actionjournal.flink_agents.api.memory_reference import MemoryRef

        if isinstance(value, MemoryObject):
            raise TypeError(
                f"memory path {path!r}: a MemoryObject is not a value; make a nested object "
                "with new_object(path) instead"
            )
        full = self._full(path)
        self._check_through(full)
        if self._memory.kind(full) == "object":
            if not self._is_dict_value(full):
                raise ValueError(
                    f"Cannot overwrite object field '{full}' with primitive: its fields "
                    f"{self._memory.field_names(full)[:5]} would be lost. Set a field inside "
                    "it, or use another path"
                )
            if not isinstance(value, dict):
                self._memory.delete(full)  # a dict value is a value: another may replace it
        self._memory.set(full, {_DICT_VALUE: value} if isinstance(value, dict) else value)
        return MemoryRef(memory_type=self._type, path=full)

    def new_object(self, path: str, *, overwrite: bool = False) -> MemoryObject:
        """The object at ``path``, made if missing (an object already there is kept).

        A value there raises ``ValueError``, unless ``overwrite`` replaces it.
        """
        full = self._full(path)
        self._check_through(full)
        kind = self._memory.kind(full)
        holds_value = kind == "value" or (kind == "object" and self._is_dict_value(full))
        if holds_value and not overwrite:
            raise ValueError(
                f"Field '{full}' exists but is not an object: it holds a value. Pass "
                "overwrite=True to replace it, or use another path"
            )
        if holds_value:
            self._memory.delete(full)
        if kind is None or holds_value:
            self._memory.new_object(full)
        return MemoryObject(self._memory, full, self._type)

    def delete(self, path: str) -> bool:
        """Remove the value or object (with all it holds) at ``path``; whether there was one.
        Journaled with the action like ``set``. Not in upstream's 0.3 API (nor its main
        branch yet, which deletes from long-term memory only): actionjournal's."""
        full = self._full(path)
        if self._memory.kind(full) is None:
            return False
        self._memory.delete(full)
        return True

    def is_exist(self, path: str) -> bool:
        return self._memory.kind(self._full(path)) is not None

    def get_field_names(self) -> list[str]:
        """Names of this object's fields, sorted."""
        return sorted(self._memory.field_names(self._prefix))

    def get_fields(self) -> dict[str, Any]:
        """This object's fields: values as they are, objects as ``"NestedObject"``."""
        fields = {}
        for name in self.get_field_names():
            value = self.get(name)
            fields[name] = NESTED_OBJECT if isinstance(value, MemoryObject) else value
        return fields

    def __repr__(self) -> str:
        return f"MemoryObject({self._type.value}, {self._prefix or '<root>'!r})"

    def _full(self, path: str) -> str:
        if not path:
            return self._prefix
        return f"{self._prefix}.{path}" if self._prefix else path

    def _path_of(self, path_or_ref: Any) -> str:
        if isinstance(path_or_ref, str):
            return self._full(path_or_ref)
        if isinstance(path_or_ref, dict) and "path" in path_or_ref:  # a MemoryRef as JSON
            return str(path_or_ref["path"])
        path = getattr(path_or_ref, "path", None)
        if not isinstance(path, str):
            raise TypeError(f"get takes a path (str) or a MemoryRef, got {path_or_ref!r}")
        return path

    def _check_through(self, full: str) -> None:
        parts = full.split(".")
        for i in range(1, len(parts)):
            parent = ".".join(parts[:i])
            if self._is_dict_value(parent):
                raise ValueError(
                    f"memory path {full!r} goes through {parent!r}, which holds a value (a "
                    "dict), not an object. Set the whole dict again, or make an object there "
                    "with new_object(..., overwrite=True)"
                )

    def _is_dict_value(self, path: str) -> bool:
        return self._memory.kind(f"{path}.{_DICT_VALUE}" if path else _DICT_VALUE) is not None
