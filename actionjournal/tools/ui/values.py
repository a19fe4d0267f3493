"""Payload values as the explorer shows them: decoded without pickle, redacted, truncated.

Every value leaves the server through :meth:`Shown.value`, in HTML and JSON alike, so a
field named by ``--redact`` never reaches a page or a script. A path is dotted from the
value's root (``input``, ``key``, ``result``, ``event``, ``memory``, ``error``), ``*``
matches any one name, and a single name (``card_number``) matches that field anywhere.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
from collections.abc import Iterable
from typing import Any

import msgspec
from pydantic import BaseModel

from actionjournal.durable.records import ErrorInfo
from actionjournal.durable.values import ValueCodec

PREVIEW = 200  # characters of a value shown
REDACTED = "[redacted]"
ROOTS = ("input", "key", "result", "event", "memory", "error")


class Shown:
    """How values are shown: the redaction paths and the preview length."""

    def __init__(self, redact: Iterable[str] = (), preview: int = PREVIEW) -> None:
        self.paths = [tuple(p.split(".")) for p in redact if p]
        self.preview = preview
        self._values = ValueCodec(allow_pickle=False)  # reading never runs the journal's code

    def decode(self, data: bytes | None) -> tuple[bool, Any]:
        """``(True, value)``, or ``(False, why)`` when it cannot be shown without pickle."""
        if data is None:
            return True, None
        try:
            return True, self._values.decode(data)
        except Exception as exc:  # pickled, or a class not importable here: never unpickled
            return False, f"<{len(data)} bytes, not shown: {type(exc).__name__}>"

    def plain(self, value: Any, root: str) -> Any:
        """``value`` found at dotted path ``root``, as JSON data with redacted fields
        replaced, not yet truncated."""
        return self._redact(_plain(value), tuple(root.split(".")))

    def value(self, data: bytes | None, root: str) -> str:
        """The preview of encoded ``data`` found under ``root``."""
        ok, value = self.decode(data)
        if not ok:
            return str(value)
        return self.text(value, root)

    def text(self, value: Any, root: str) -> str:
        """The preview of a decoded value: redacted JSON (or repr), truncated."""
        if self.paths and self._hidden(tuple(root.split("."))):
            return REDACTED
        plain = self.plain(value, root)
        try:
            text = msgspec.json.encode(plain).decode()
        except (TypeError, msgspec.EncodeError):
            text = repr(plain)
        return self.cut(text)

    def cut(self, text: str) -> str:
        return text if len(text) <= self.preview else text[: self.preview - 1] + "…"

    def error(self, error: ErrorInfo) -> dict[str, Any]:
        """An error as shown: type, message, its attributes, and its causes."""
        doc: dict[str, Any] = {"type": error.type, "message": self.cut(error.message)}
        if error.state is not None:
            ok, state = self.decode(error.state)
            if ok and isinstance(state, dict) and state:
                doc["attributes"] = {
                    str(k): self.text(v, f"error.{k}")
                    if not self._hidden(("error", str(k)))
                    else REDACTED
                    for k, v in state.items()
                }
        causes: list[dict[str, str]] = []
        cause = error.cause
        while cause is not None and len(causes) < 10:
            causes.append({"type": cause.type, "message": self.cut(cause.message)})
            cause = cause.cause
        if causes:
            doc["causes"] = causes
        return doc

    def _hidden(self, path: tuple[str, ...]) -> bool:
        for pattern in self.paths:
            if len(pattern) == 1 and path[-1] == pattern[0] and len(path) > 1:
                return True
            if len(pattern) == len(path) and all(
                p in ("*", q) for p, q in zip(pattern, path, strict=False)
            ):
                return True
        return False

    def _redact(self, value: Any, path: tuple[str, ...]) -> Any:
        if not self.paths:
            return value
        if isinstance(value, dict):
            return {
                k: REDACTED if self._hidden((*path, str(k))) else self._redact(v, (*path, str(k)))
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self._redact(v, path) for v in value]
        return value


def _plain(value: Any, depth: int = 0) -> Any:
    """JSON data of a decoded value (models, dataclasses and named tuples as their fields)."""
    if depth > 20:
        return "…"
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, BaseModel):
        return _plain(value.model_dump(mode="python"), depth + 1)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {
            f.name: _plain(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value)
        }
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return _plain(value._asdict(), depth + 1)
    if isinstance(value, dict):
        return {str(k): _plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else value
        return [_plain(v, depth + 1) for v in items]
    if isinstance(value, bytes):
        return repr(value[:64]) + ("…" if len(value) > 64 else "")
    if isinstance(value, (datetime.datetime, datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return repr(value)
