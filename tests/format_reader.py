"""A journal record reader written from docs/journal-format.md alone, as a team reading the
journal from another language would: no actionjournal import, no msgspec, MessagePack
decoded with ``struct``. The record layouts are the page's tables, read from the page, so
the page is the only source of truth here (tests/test_journal_format.py checks the page
against the code and this reader against records the code wrote).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PAGE = Path(__file__).resolve().parents[1] / "docs" / "journal-format.md"
MISSING = object()  # a field the array ends before


class FormatError(Exception):
    """The bytes are not a record as the page describes it."""


# -- MessagePack (the subset of the spec that journals can hold) ------------------------------


@dataclass(frozen=True)
class Ext:
    code: int
    data: bytes


def unpack(data: bytes) -> Any:
    """The one MessagePack value ``data`` holds."""
    value, end = _value(data, 0)
    if end != len(data):
        raise FormatError(f"{len(data) - end} bytes after the MessagePack value")
    return value


_FIXED = {0xC0: None, 0xC2: False, 0xC3: True}
_NUMBERS = {  # first byte: struct format of what follows
    0xCA: ">f", 0xCB: ">d", 0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q",
    0xD0: ">b", 0xD1: ">h", 0xD2: ">i", 0xD3: ">q",
}  # fmt: skip
_SIZED = {  # first byte: (kind, width of the length)
    0xC4: ("bin", 1), 0xC5: ("bin", 2), 0xC6: ("bin", 4),
    0xD9: ("str", 1), 0xDA: ("str", 2), 0xDB: ("str", 4),
    0xDC: ("array", 2), 0xDD: ("array", 4), 0xDE: ("map", 2), 0xDF: ("map", 4),
    0xC7: ("ext", 1), 0xC8: ("ext", 2), 0xC9: ("ext", 4),
}  # fmt: skip
_FIXEXT = {0xD4: 1, 0xD5: 2, 0xD6: 4, 0xD7: 8, 0xD8: 16}


def _take(data: bytes, at: int, n: int) -> bytes:
    if at + n > len(data):
        raise FormatError(f"MessagePack value cut short at byte {at}")
    return data[at : at + n]


def _value(data: bytes, at: int) -> tuple[Any, int]:
    first = _take(data, at, 1)[0]
    at += 1
    if first <= 0x7F:
        return first, at
    if first >= 0xE0:
        return first - 0x100, at
    if 0x80 <= first <= 0x8F:
        return _items("map", first & 0x0F, data, at)
    if 0x90 <= first <= 0x9F:
        return _items("array", first & 0x0F, data, at)
    if 0xA0 <= first <= 0xBF:
        n = first & 0x1F
        return _take(data, at, n).decode(), at + n
    if first in _FIXED:
        return _FIXED[first], at
    if first in _NUMBERS:
        fmt = _NUMBERS[first]
        size = struct.calcsize(fmt)
        return struct.unpack(fmt, _take(data, at, size))[0], at + size
    if first in _FIXEXT:
        n = _FIXEXT[first]
        return Ext(struct.unpack(">b", _take(data, at, 1))[0], _take(data, at + 1, n)), at + 1 + n
    if first not in _SIZED:
        raise FormatError(f"byte 0x{first:02x} at {at - 1} starts no MessagePack value")
    kind, width = _SIZED[first]
    n = int.from_bytes(_take(data, at, width), "big")
    at += width
    if kind == "str":
        return _take(data, at, n).decode(), at + n
    if kind == "bin":
        return _take(data, at, n), at + n
    if kind == "ext":
        code = struct.unpack(">b", _take(data, at, 1))[0]
        return Ext(code, _take(data, at + 1, n)), at + 1 + n
    return _items(kind, n, data, at)


def _items(kind: str, n: int, data: bytes, at: int) -> tuple[Any, int]:
    items = []
    for _ in range(2 * n if kind == "map" else n):
        item, at = _value(data, at)
        items.append(item)
    if kind == "array":
        return items, at
    return dict(zip(items[::2], items[1::2], strict=True)), at


# -- the page ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # as the page writes it: "str", "bin or nil", "array of MemoryOp", ...
    absent: str  # "required" or the default: "", false, nil, 0, empty, empty array


@dataclass(frozen=True)
class RecordType:
    name: str
    code: int
    tag: str
    fields: tuple[Field, ...]  # the whole array: tag, common prefix, then the type's own


@dataclass(frozen=True)
class Spec:
    version: int
    prefix: tuple[Field, ...]  # what every record starts with: tag, namespace, ...
    types: dict[int, RecordType]  # by code
    nested: dict[str, tuple[Field, ...]]
    extensions: dict[int, str]  # value extension code: Python type
    summary: dict[int, tuple[str, str]]  # the Record types table: code: (tag, name)
    stores: dict[str, list[tuple[str, str]]]  # "SQLite": [(column or part, type or content)]


_RECORD = re.compile(r'^### (\w+) \(code (\d+), tag "(\w+)"\)$')
_NESTED = re.compile(r"^### (\w+) \(nested\)$")
_PREFIX = "### Every record (common prefix)"
_VERSION = re.compile(r"^Current format version: \*\*(\d+)\*\*\.$", re.M)


def _tables(lines: list[str]) -> dict[str, list[list[str]]]:
    """The first table after each heading, without its header and rule rows."""
    found: dict[str, list[list[str]]] = {}
    heading = None
    for line in lines:
        if line.startswith("#"):
            heading = line.strip()
        elif line.startswith("|") and heading is not None:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows = found.setdefault(heading, [])
            rows.append(cells)
        elif not line.strip() and heading in found:
            heading = None  # the table ended
    return {h: rows[2:] for h, rows in found.items()}


def _fields(rows: list[list[str]], first: int, where: str) -> tuple[Field, ...]:
    fields = []
    for i, (number, name, kind, absent, *_) in enumerate(rows):
        if int(number) != first + i:
            raise FormatError(f"{where}: row {name} is numbered {number}, not {first + i}")
        fields.append(Field(name, kind, absent.strip('"') if absent == '""' else absent))
    return tuple(fields)


def read_page(page: Path = PAGE) -> Spec:
    text = page.read_text()
    version = _VERSION.search(text)
    if version is None:
        raise FormatError(f"{page} does not say 'Current format version: **N**.'")
    tables = _tables(text.splitlines())
    prefix = _fields(tables[_PREFIX], 0, _PREFIX)
    types, nested, extensions, summary, stores = {}, {}, {}, {}, {}
    for heading, rows in tables.items():
        if match := _RECORD.match(heading):
            name, code, tag = match.group(1), int(match.group(2)), match.group(3)
            own = _fields(rows, len(prefix), heading)
            types[code] = RecordType(name, code, tag, prefix + own)
        elif match := _NESTED.match(heading):
            nested[match.group(1)] = _fields(rows, 0, heading)
        elif heading == "## Values":
            extensions = {int(row[0]): row[1] for row in rows}
        elif heading == "## Record types":
            summary = {int(row[0]): (row[1].strip("`"), row[2]) for row in rows}
        elif heading in ("### Kafka", "### Fluss", "### SQLite"):
            stores[heading.removeprefix("### ")] = [(r[0].replace("`", ""), r[1]) for r in rows]
    return Spec(int(version.group(1)), prefix, types, nested, extensions, summary, stores)


# -- records -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Decoded:
    type: RecordType
    signed: bool
    fields: dict[str, Any]  # nested structures as dicts too; absent fields with their defaults
    payload: list[Any]  # the payload array as it is


_DEFAULTS = {"": "", "false": False, "nil": None, "0": 0, "empty": b"", "empty array": []}
_SCALARS = {"str": str, "bin": bytes, "float": float, "bool": bool}


def read_record(spec: Spec, data: bytes, key: bytes | None = None) -> Decoded:
    """One record, checked as the page says; ``key``: the signing key of a signed journal."""
    if data[:2] != b"AJ" or len(data) < 5:
        raise FormatError(f"not a journal record: starts with {data[:4]!r}")
    version, code, flags = data[2], data[3], data[4]
    if version > spec.version:
        raise FormatError(f"format version {version} is newer than {spec.version}")
    if flags & ~0x01:
        raise FormatError(f"unknown flags 0x{flags:02x}")
    signed = bool(flags & 0x01)
    end = len(data) - 32 if signed else len(data)
    if key is not None:
        if not signed:
            raise FormatError("unsigned record in a signed journal")
        if not hmac.compare_digest(hmac.digest(key, data[:end], hashlib.sha256), data[end:]):
            raise FormatError("signature does not match")
    if code not in spec.types:
        raise FormatError(f"type code {code} is not on the page")
    kind = spec.types[code]
    payload = unpack(data[5:end])
    if not isinstance(payload, list) or not payload or payload[0] != kind.tag:
        raise FormatError(f"payload of a {kind.name} does not start with tag {kind.tag!r}")
    return Decoded(kind, signed, _struct(spec, kind.fields, payload, kind.name), payload)


def _struct(spec: Spec, fields: tuple[Field, ...], items: list[Any], where: str) -> dict:
    if not isinstance(items, list):
        raise FormatError(f"{where}: {items!r} is not an array")
    out = {}
    for i, field in enumerate(fields):
        if i < len(items):
            out[field.name] = _typed(spec, field.type, items[i], f"{where}.{field.name}")
        elif field.absent == "required":
            raise FormatError(f"{where}: the array ends before required field {field.name}")
        else:
            out[field.name] = _DEFAULTS[field.absent]
    return out  # elements past the last known field are ignored, as the page says


def _typed(spec: Spec, kind: str, value: Any, where: str) -> Any:
    if kind.endswith(" or nil"):
        return None if value is None else _typed(spec, kind.removesuffix(" or nil"), value, where)
    if kind.startswith("array of "):
        if not isinstance(value, list):
            raise FormatError(f"{where}: {value!r} is not an array")
        item = kind.removeprefix("array of ")
        return [_typed(spec, item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if kind in spec.nested:
        return _struct(spec, spec.nested[kind], value, where)
    if kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind in _SCALARS:
        ok = isinstance(value, _SCALARS[kind])
    else:
        raise FormatError(f"{where}: the page's type {kind!r} is not one it defines")
    if not ok:
        raise FormatError(f"{where}: {value!r} is not a {kind}")
    return value


def kafka_partition(key_id: str, partitions: int) -> int:
    """The page's rule: BLAKE2b (8 bytes) of the UTF-8 key id, big-endian, modulo partitions."""
    digest = hashlib.blake2b(key_id.encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") % partitions
