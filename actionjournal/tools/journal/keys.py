"""Finding a key as users type it, and showing key values where the journal holds them.

Key ids are digests of *typed* keys, so ``c1`` names several keys: the string ``'c1'``, the
bytes ``b'c1'`` (what a Kafka source keyed by the record key gives), and a number where the
text is one. Without ``--key-type`` the tools try each form users mean by the text and use
the one the journal holds, saying which. Key values themselves are in the journal only
where a record carries them (a dead-lettered run's ``RunFailed``); elsewhere the tools show
the key id.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from typing import Any

from actionjournal.durable.identity import key_id
from actionjournal.durable.records import RunFailed
from actionjournal.durable.store import Inspectable
from actionjournal.durable.values import ValueCodec
from actionjournal.tools import reading
from actionjournal.tools.reading import Unreadable
from actionjournal.tools.toolkit import ProgressBar, ToolError, UsageError

AUTO = "auto"
KEY_TYPES: dict[str, Callable[[str], Any]] = {
    "str": str,
    "bytes": str.encode,
    "int": int,
    "float": float,
    "json": json.loads,
    "literal": ast.literal_eval,
}


class KeyForm:
    """One reading of ``--key``: its value, its type's name and its key id."""

    def __init__(self, kind: str, value: Any) -> None:
        self.kind = kind
        self.value = value
        self.key_id = key_id(value)

    def __str__(self) -> str:
        return f"{type(self.value).__name__} {self.value!r}"


def forms(text: str, kind: str = AUTO) -> list[KeyForm]:
    """The keys ``--key text --key-type kind`` may mean; with ``auto``, every reading of the
    text (a string, its UTF-8 bytes, a number, JSON, a Python literal, a JSON list as a
    tuple), each key once."""
    if kind != AUTO:
        try:
            value = KEY_TYPES[kind](text)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError) as exc:
            raise UsageError(f"--key {text!r} is not a valid {kind}: {exc}") from None
        try:
            return [KeyForm(kind, value)]
        except TypeError as exc:
            raise UsageError(f"--key {text!r}: {exc}") from None
    found: dict[str, KeyForm] = {}
    for name in KEY_TYPES:
        try:
            values = [KEY_TYPES[name](text)]
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            continue
        if isinstance(values[0], list):
            values.append(tuple(values[0]))  # a key selector's tuple, typed as JSON
        for value in values:
            try:
                form = KeyForm(name, value)
            except TypeError:  # a type keys cannot have (a set, None...)
                continue
            found.setdefault(form.key_id, form)
    return list(found.values())


def present(
    store: Inspectable,
    namespace: str,
    ids: Iterable[str],
    skipped: list[Unreadable],
    progress: bool | None = None,
) -> set[str]:
    """Which of ``ids`` have records in the namespace (of any operator): each partition read
    once, and only until all of its ids were seen."""
    wanted: dict[int, set[str]] = {}
    for key in ids:
        wanted.setdefault(store.partition_of(key), set()).add(key)
    seen: set[str] = set()
    for partition, keys in sorted(wanted.items()):
        bar = ProgressBar(f"searching partition {partition}", progress)
        try:
            for item in reading.scan(store, partition, namespace, None, skipped, progress=bar):
                record = item.record
                if record is not None and record.key_id in keys:
                    seen.add(record.key_id)
                    if keys <= seen:
                        break
        finally:
            bar.close()
    return seen


def matching_form(
    store: Inspectable,
    namespace: str,
    text: str,
    where: str,
    skipped: list[Unreadable],
    progress: bool | None = None,
) -> KeyForm:
    """The one reading of ``--key text`` whose key has records; an error naming the forms
    tried when none has, or the ones found when several have."""
    tried = forms(text)
    found = present(store, namespace, (f.key_id for f in tried), skipped, progress)
    matched = [f for f in tried if f.key_id in found]
    if len(matched) == 1:
        return matched[0]
    if not matched:
        raise ToolError(
            f"no records of key {text!r} in namespace {namespace!r} of {where}; tried "
            + ", ".join(map(str, tried))
            + " (`actionjournal journal keys` lists the keys; --key-id takes an id)"
        )
    raise ToolError(
        f"key {text!r} names {len(matched)} keys in namespace {namespace!r}: "
        + ", ".join(map(str, matched))
        + "; choose one with --key-type "
        + " or ".join(f.kind for f in matched)
    )


def shown_key(data: bytes | None) -> str | None:
    """A key value as journaled (``RunFailed.key``) as its Python literal; ``None`` when the
    record has none or it cannot be decoded without running code (pickle)."""
    if data is None:
        return None
    try:
        return repr(ValueCodec(allow_pickle=False).decode(data))
    except Exception:
        return None


def journaled_key(record: object) -> str | None:
    """The key's literal when ``record`` carries the key value."""
    return shown_key(record.key) if isinstance(record, RunFailed) else None
