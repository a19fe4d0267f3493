"""PyFlink ``Row`` values in events: Flink Agents lets them travel in attributes.

The journal holds plain data, so a ``Row`` is written as a tagged dict and rebuilt as a
``Row`` when an action receives it. Nothing here imports PyFlink: a process that never
imported it has no ``Row`` to convert.
"""

from __future__ import annotations

import sys
from typing import Any

_TAG = "__pyflink_row__"


def _row_class() -> Any:
    module = sys.modules.get("pyflink.common.types")
    return getattr(module, "Row", None) if module is not None else None


def to_journal(value: Any) -> Any:
    """``value`` with every ``Row`` in it (nested in dicts and lists) as a tagged dict."""
    row = _row_class()
    return value if row is None else _tag(value, row)


def from_journal(value: Any) -> Any:
    """``value`` with every tagged dict rebuilt as a ``Row``."""
    return _walk(value, _TAG, lambda d: _build(d[_TAG][0], [from_journal(v) for v in d[_TAG][1]]))


def from_json(value: Any) -> Any:
    """Rows in Flink Agents' JSON form ``{"type": "Row", "values": [...], "fields": [...]}``."""
    return _walk(value, "values", lambda d: _build(d.get("fields"), d["values"]), "Row")


def json_fallback(value: Any) -> Any:
    """A ``Row`` in Flink Agents' JSON form (``model_dump_json``'s fallback); else refused."""
    row = _row_class()
    if row is not None and isinstance(value, row):
        fields = getattr(value, "_fields", None)
        return {"type": "Row", "values": value._values} | (
            {"fields": list(fields)} if fields else {}
        )
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def upstream_output(value: Any) -> Any:
    """A journaled output as upstream's Flink job emits it: the JSON form of the output
    (upstream passes events between Python and Java as JSON), so a pydantic model arrives
    as a dict; ``Row`` values are rebuilt, as upstream rebuilds them."""
    value = from_journal(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    from pydantic_core import to_jsonable_python

    return from_json(to_jsonable_python(value, fallback=json_fallback))


def _tag(value: Any, row: Any) -> Any:
    if isinstance(value, row):
        fields = getattr(value, "_fields", None)
        return {_TAG: [list(fields) if fields else None, [_tag(v, row) for v in value._values]]}
    if isinstance(value, dict):
        return {k: _tag(v, row) for k, v in value.items()}
    if isinstance(value, list):
        return [_tag(v, row) for v in value]
    return value


def _walk(value: Any, key: str, build: Any, type_name: str | None = None) -> Any:
    if isinstance(value, dict):
        if key in value and (type_name is None or value.get("type") == type_name):
            return build(value)
        return {k: _walk(v, key, build, type_name) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, key, build, type_name) for v in value]
    return value


def _build(fields: list[str] | None, values: list[Any]) -> Any:
    from pyflink.common import Row

    return Row(**dict(zip(fields, values, strict=True))) if fields else Row(*values)
