"""Encoding of user values: call results, arguments, memory, event attributes, inputs.

A journaled value comes back as an equal value of the same type, or it is refused
when it is journaled (docs/concepts.md, "Values"):

- plain MessagePack: None, bool, int, float, str, bytes, list, and dicts whose keys
  are of those scalar types;
- MessagePack extension types that keep the type: tuple, set, frozenset, dicts with
  other keys, datetime, date, time, timedelta, Decimal, UUID, and instances of Enums,
  dataclasses, named tuples and pydantic models. Classes are looked up by name among
  modules already imported: journal bytes never make this process import anything;
- anything else only when pickle was enabled, because unpickling bytes read from a
  shared topic runs code chosen by whoever wrote them.

Sets are written in a canonical order, so a value has the same bytes in every
process whatever its ``PYTHONHASHSEED``. The live value an action sees is decoded
from its bytes, so a first run and its replay observe identical data.

:meth:`ValueCodec.canonical` encodes a value for identities and digests: the same,
but dict entries too are sorted by their encoded bytes, so equal values have equal
bytes however they were built.
"""

from __future__ import annotations

import dataclasses
import datetime
import decimal
import enum
import hashlib
import logging
import pickle
import sys
import uuid
import zoneinfo
from typing import Any

import msgspec
from pydantic import BaseModel

from actionjournal.durable.errors import (
    CorruptRecordError,
    EncodingError,
    PayloadTooLargeError,
    PickleDisabledError,
)
from actionjournal.durable.guards import GuardObserver, where

log = logging.getLogger("actionjournal.guards")

# MessagePack extension codes. Never reuse or renumber one: journals hold them.
_PYDANTIC = 1
_PICKLE = 2
_TUPLE = 3
_SET = 4
_FROZENSET = 5
_DICT = 6  # a dict whose keys a MessagePack map cannot hold as they are; every canonical dict
_DATETIME = 7
_DATE = 8
_TIME = 9
_TIMEDELTA = 10
_DECIMAL = 11
_UUID = 12
_ENUM = 13
_DATACLASS = 14
_NAMEDTUPLE = 15

_SCALARS = frozenset({type(None), bool, int, float, str, bytes})
_SUPPORTED = (
    "Journal None, bool, int, float, str, bytes, list, dict, tuple, set, frozenset, datetime, "
    "date, time, timedelta, Decimal, UUID, or instances of Enums, dataclasses, named tuples and "
    "pydantic models (docs/concepts.md, Values); or enable journal.allow_pickle (requires "
    "journal.signing_key)"
)


def type_name(obj_type: type) -> str:
    return f"{obj_type.__module__}.{obj_type.__qualname__}"


def loaded_type(name: str) -> type | None:
    """Find a type by dotted name among modules already imported.

    Journal data never triggers an import: the code that defined the type has
    been imported by the agent if the type is legitimately in use.
    """
    module_name, _, qualname = name.rpartition(".")
    while module_name:
        module = sys.modules.get(module_name)
        if module is not None:
            obj: Any = module
            for part in qualname.split("."):
                obj = getattr(obj, part, None)
                if obj is None:
                    return None
            return obj if isinstance(obj, type) else None
        module_name, _, head = module_name.rpartition(".")
        qualname = f"{head}.{qualname}"
    return None


class _Refused(Exception):
    """A value that cannot be journaled; ``path`` locates it inside the value."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.path: list[str] = []


class ValueCodec:
    def __init__(
        self,
        *,
        allow_pickle: bool = False,
        max_payload_bytes: int | None = None,
        payload_warn_bytes: int | None = None,
        observer: GuardObserver | None = None,
        limit_reason: str | None = None,
    ) -> None:
        self.allow_pickle = allow_pickle
        self.max_payload_bytes = max_payload_bytes
        self.limit_reason = limit_reason  # why the limit is lower than the setting
        self.payload_warn_bytes = payload_warn_bytes
        self.observer = observer  # told of every guard hit (the engine's metrics)
        self._plain = msgspec.msgpack.Encoder().encode  # of trees made by _lower
        self._sorted = msgspec.msgpack.Encoder(order="sorted").encode  # canonical plain data
        self._decoder = msgspec.msgpack.Decoder(ext_hook=self._ext_hook)
        self._legacy_encoder = msgspec.msgpack.Encoder(enc_hook=self._legacy_hook, order="sorted")

    # -- values ---------------------------------------------------------------

    def encode(self, value: Any, what: object = "value") -> bytes:
        """Encode ``value``; ``what`` names it in errors (e.g. "result of my_mod:charge")."""
        data = self._encode(value, what, canonical=False)
        size = len(data)
        if (self.payload_warn_bytes is not None and size > self.payload_warn_bytes) or (
            self.max_payload_bytes is not None and size > self.max_payload_bytes
        ):
            self._guard(what, size)
        return data

    def canonical(self, value: Any, what: object = "value") -> bytes:
        """Bytes for identities and digests: equal values give equal bytes in every process.

        Not meant to be decoded; types need not be reachable by name, only named.
        """
        return self._encode(value, what, canonical=True)

    def decode(self, data: bytes) -> Any:
        try:
            return self._decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(f"journaled value does not decode: {exc}") from None

    def exact(self, value: Any) -> bytes | None:
        """The value's bytes, or ``None`` when it cannot be journaled; no size guard (for
        comparing values, and for an exception's args and attributes)."""
        try:
            return self._encode(value, "value", canonical=False)
        except EncodingError:
            return None

    def roundtrip(self, value: Any, what: object = "value") -> tuple[bytes, Any]:
        data = self.encode(value, what)
        return data, self.decode(data)

    def legacy_digest(self, value: Any) -> str | None:
        """The argument digest of records written before digests were canonical (they have
        no version prefix), to recognise them; ``None`` when it cannot be computed."""
        try:
            data = self._legacy_encoder.encode(value)
        except (TypeError, ValueError, OverflowError):
            return None
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    def _encode(self, value: Any, what: object, canonical: bool) -> bytes:
        try:
            if _plain_data(value):  # the common case, encoded as it is (no extension type)
                try:
                    return self._sorted(value) if canonical else self._plain(value)
                except TypeError:  # canonical: keys of mixed types do not sort; see below
                    pass
            return self._plain(self._lower(value, canonical))
        except _Refused as refused:
            at = f" at {''.join(refused.path)}" if refused.path else ""
            raise EncodingError(
                f"cannot journal {what}{where()}: the value{at} is refused: {refused.reason}. "
                f"{_SUPPORTED}"
            ) from None
        except (TypeError, ValueError, OverflowError) as exc:  # e.g. an int beyond 64 bits
            raise EncodingError(f"cannot journal {what}{where()}: {exc}. {_SUPPORTED}") from None

    def _guard(self, what: object, size: int) -> None:
        """``size`` is over a payload threshold: warn, or fail with PayloadTooLargeError."""
        if self.max_payload_bytes is not None and size > self.max_payload_bytes:
            if self.observer is not None:
                self.observer.guard_hit("payload_bytes", "fail")
            limit = self.limit_reason or f"journal.max_payload_bytes={self.max_payload_bytes}"
            raise PayloadTooLargeError(
                f"{what}{where()} encodes to {size} bytes, over {limit}; store large data "
                "elsewhere and journal a reference"
            )
        if self.observer is not None:
            self.observer.guard_hit("payload_bytes", "warn")
        log.warning(
            "%s%s encodes to %d bytes, over journal.payload_warn_bytes=%d (it fails over "
            "journal.max_payload_bytes=%s); consider storing large data elsewhere and "
            "journaling a reference",
            what,
            where(),
            size,
            self.payload_warn_bytes,
            self.max_payload_bytes,
        )

    # -- values to MessagePack trees ------------------------------------------

    def _lower(self, value: Any, canonical: bool) -> Any:
        """``value`` as a tree the plain encoder takes: scalars, lists, str-keyed dicts, Ext."""
        kind = type(value)
        if kind in _SCALARS:
            return value
        if kind is list:
            return [self._item(v, f"[{i}]", canonical) for i, v in enumerate(value)]
        if kind is dict:
            return self._lower_dict(value, canonical)
        if kind is tuple:
            return self._ext(
                _TUPLE, [self._item(v, f"[{i}]", canonical) for i, v in enumerate(value)]
            )
        if kind is set or kind is frozenset:
            items = sorted(self._plain(self._item(v, "{...}", canonical)) for v in value)
            return self._ext(_SET if kind is set else _FROZENSET, [msgspec.Raw(b) for b in items])
        if kind is datetime.datetime:
            fields = [value.year, value.month, value.day, value.hour, value.minute, value.second]
            return self._ext(_DATETIME, [*fields, value.microsecond, value.fold, _zone(value)])
        if kind is datetime.date:
            return self._ext(_DATE, [value.year, value.month, value.day])
        if kind is datetime.time:
            fields = [value.hour, value.minute, value.second, value.microsecond, value.fold]
            return self._ext(_TIME, [*fields, _zone(value)])
        if kind is datetime.timedelta:
            return self._ext(_TIMEDELTA, [value.days, value.seconds, value.microseconds])
        if kind is decimal.Decimal:
            return msgspec.msgpack.Ext(_DECIMAL, str(value).encode())
        if kind is uuid.UUID:
            return msgspec.msgpack.Ext(_UUID, value.bytes)
        return self._lower_object(value, canonical)

    def _lower_object(self, value: Any, canonical: bool) -> Any:
        kind = type(value)
        if isinstance(value, enum.Enum):
            return self._typed(_ENUM, kind, self._item(value.value, ".value", canonical), canonical)
        if isinstance(value, tuple) and hasattr(kind, "_fields") and hasattr(kind, "_make"):
            items = [
                self._item(v, f".{f}", canonical) for f, v in zip(kind._fields, value, strict=True)
            ]
            return self._typed(_NAMEDTUPLE, kind, items, canonical)
        if dataclasses.is_dataclass(value) and not isinstance(value, type):
            names = [f.name for f in dataclasses.fields(value)]
            pairs = [(k, self._item(getattr(value, k), f".{k}", canonical)) for k in names]
            payload = self._sorted_map(pairs) if canonical else dict(pairs)
            return self._typed(_DATACLASS, kind, payload, canonical)
        if isinstance(value, BaseModel):
            dump = value.model_dump(mode="json")
            return self._typed(
                _PYDANTIC, kind, self._lower(dump, True) if canonical else dump, canonical
            )
        if self.allow_pickle:
            return msgspec.msgpack.Ext(_PICKLE, pickle.dumps(value, protocol=5))
        raise _Refused(f"type {type_name(kind)} is not supported")

    def _item(self, value: Any, step: str, canonical: bool) -> Any:
        if type(value) in _SCALARS:
            return value
        try:
            return self._lower(value, canonical)
        except _Refused as refused:
            refused.path.insert(0, step)
            raise

    def _lower_dict(self, value: dict[Any, Any], canonical: bool) -> Any:
        if not canonical and all(type(k) in _SCALARS for k in value):
            return {k: self._item(v, f"[{k!r}]", False) for k, v in value.items()}
        pairs = [
            (self._item(k, f"(key {k!r})", canonical), self._item(v, f"[{k!r}]", canonical))
            for k, v in value.items()
        ]
        if canonical:
            return self._sorted_map(pairs)
        return self._ext(_DICT, [x for pair in pairs for x in pair])

    def _sorted_map(self, pairs: list[tuple[Any, Any]]) -> msgspec.msgpack.Ext:
        """Canonical form of lowered (key, value) pairs: sorted by their encoded bytes."""
        encoded = sorted((self._plain(k), self._plain(v)) for k, v in pairs)
        return self._ext(_DICT, [msgspec.Raw(x) for pair in encoded for x in pair])

    def _ext(self, code: int, payload: Any) -> msgspec.msgpack.Ext:
        return msgspec.msgpack.Ext(code, self._plain(payload))

    def _typed(self, code: int, kind: type, payload: Any, canonical: bool) -> msgspec.msgpack.Ext:
        """A value of a user class, journaled with the class's name to find it on decoding."""
        name = type_name(kind)
        if not canonical and loaded_type(name) is not kind:
            raise _Refused(
                f"its class {name} cannot be found by that name (is it defined inside a "
                "function?), so it could not be rebuilt after a restart: define it at module level"
            )
        return self._ext(code, [name, payload])

    # -- MessagePack trees to values ------------------------------------------

    def _ext_hook(self, code: int, data: memoryview) -> Any:
        try:
            return self._from_ext(code, data)
        except (
            TypeError,
            ValueError,
            KeyError,
            OverflowError,
            zoneinfo.ZoneInfoNotFoundError,
        ) as exc:
            raise CorruptRecordError(
                f"journaled value of extension type {code} does not decode: {exc!r}"
            ) from None

    def _from_ext(self, code: int, data: memoryview) -> Any:
        if code == _DECIMAL:
            return decimal.Decimal(bytes(data).decode())
        if code == _UUID:
            return uuid.UUID(bytes=bytes(data))
        if code == _PICKLE:
            if not self.allow_pickle:
                raise PickleDisabledError(
                    "journaled value is pickled but journal.allow_pickle is off; enable it only "
                    "if you trust every writer of this journal (and set journal.signing_key)"
                )
            return pickle.loads(data)
        payload = self._decoder.decode(data)
        if code == _TUPLE:
            return tuple(payload)
        if code == _SET:
            return set(payload)
        if code == _FROZENSET:
            return frozenset(payload)
        if code == _DICT:
            return dict(zip(payload[::2], payload[1::2], strict=True))
        if code == _DATETIME:
            *fields, fold, zone = payload
            # the encoder writes the fields before tzinfo, so they never reach it
            return datetime.datetime(*fields, tzinfo=_unzone(zone), fold=fold)  # type: ignore[misc]
        if code == _DATE:
            return datetime.date(*payload)
        if code == _TIME:
            *fields, fold, zone = payload
            return datetime.time(*fields, tzinfo=_unzone(zone), fold=fold)  # type: ignore[misc]
        if code == _TIMEDELTA:
            return datetime.timedelta(*payload)
        if code in (_PYDANTIC, _ENUM, _DATACLASS, _NAMEDTUPLE):
            return _rebuild_typed(code, *payload)
        raise CorruptRecordError(f"unknown MessagePack extension code {code}")

    def _legacy_hook(self, obj: Any) -> Any:
        if isinstance(obj, BaseModel):
            payload = msgspec.msgpack.encode([type_name(type(obj)), obj.model_dump(mode="json")])
            return msgspec.msgpack.Ext(_PYDANTIC, payload)
        if self.allow_pickle:
            return msgspec.msgpack.Ext(_PICKLE, pickle.dumps(obj, protocol=5))
        raise TypeError(f"unsupported type {type_name(type(obj))}")


def _plain_data(value: Any) -> bool:
    """Only MessagePack's own types: scalars, lists, dicts with scalar keys.

    A container of scalars only, the common case, is checked without a Python-level loop.
    """
    kind = type(value)
    if kind in _SCALARS:
        return True
    if kind is list:
        items: Any = value
    elif kind is dict and _SCALARS.issuperset(map(type, value)):
        items = value.values()
    else:
        return False
    return _SCALARS.issuperset(map(type, items)) or all(map(_plain_data, items))


def _zone(value: datetime.datetime | datetime.time) -> Any:
    """A time zone as journaled: None, [offset seconds, microseconds, name], or a zone key."""
    zone = value.tzinfo
    if zone is None:
        return None
    if type(zone) is datetime.timezone:
        offset = zone.utcoffset(None)
        name = zone.tzname(None)
        default = datetime.timezone(offset).tzname(None)
        return [
            offset.days * 86400 + offset.seconds,
            offset.microseconds,
            None if name == default else name,
        ]
    if type(zone) is zoneinfo.ZoneInfo and zone.key is not None:
        return zone.key
    raise _Refused(
        f"its time zone is a {type_name(type(zone))}: use datetime.timezone or zoneinfo.ZoneInfo"
    )


def _unzone(zone: Any) -> datetime.tzinfo | None:
    if zone is None:
        return None
    if isinstance(zone, str):
        return zoneinfo.ZoneInfo(zone)
    seconds, microseconds, name = zone
    offset = datetime.timedelta(seconds=seconds, microseconds=microseconds)
    return datetime.timezone(offset, name) if name is not None else datetime.timezone(offset)


_TYPED_KINDS = {
    _PYDANTIC: ("pydantic model", BaseModel),
    _ENUM: ("Enum", enum.Enum),
    _DATACLASS: ("dataclass", object),
    _NAMEDTUPLE: ("named tuple", tuple),
}


def _rebuild_typed(code: int, name: str, payload: Any) -> Any:
    what, base = _TYPED_KINDS[code]
    cls: Any = loaded_type(name)
    if cls is None or not issubclass(cls, base):
        raise CorruptRecordError(
            f"journaled {what} {name} is not defined in this process; import the module that "
            "defines it before the agent runs"
        )
    if code == _PYDANTIC:
        return cls.model_validate(payload)
    if code == _ENUM:
        return cls(payload)
    if code == _NAMEDTUPLE:
        return cls._make(payload)
    if not (isinstance(cls, type) and dataclasses.is_dataclass(cls)):
        raise CorruptRecordError(f"journaled dataclass {name} is no longer a dataclass")
    names = {f.name for f in dataclasses.fields(cls)}
    if names != set(payload):
        raise CorruptRecordError(
            f"journaled dataclass {name} has fields {sorted(payload)}, but the class now has "
            f"{sorted(names)}; journaled values of it cannot be rebuilt"
        )
    obj = cls.__new__(cls)
    for field, value in payload.items():  # as journaled, without running __init__ again
        object.__setattr__(obj, field, value)
    return obj
