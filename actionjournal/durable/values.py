"""Encoding of user values (call results, arguments, memory, event attributes).

Plain data goes through MessagePack as is. Pydantic models travel with a type
tag and are rebuilt by ``model_validate``. Anything else is refused unless
pickle was enabled, because unpickling bytes read from a shared topic runs code
chosen by whoever wrote them.

What comes back is what a MessagePack round trip gives: tuples and sets come
back as lists. The live value an action sees is decoded the same way, so a
first run and its replay observe identical data.
"""

from __future__ import annotations

import hashlib
import logging
import pickle
import sys
import traceback
from typing import Any

import msgspec
from pydantic import BaseModel

from actionjournal.durable.errors import (
    CorruptRecordError,
    EncodingError,
    PayloadTooLargeError,
    PickleDisabledError,
    RecordedCallError,
)
from actionjournal.durable.guards import GuardObserver, where
from actionjournal.durable.records import ErrorInfo

log = logging.getLogger("actionjournal.guards")

_EXT_PYDANTIC = 1
_EXT_PICKLE = 2


def type_name(obj_type: type) -> str:
    return f"{obj_type.__module__}.{obj_type.__qualname__}"


def _loaded_type(name: str) -> type | None:
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


class ValueCodec:
    def __init__(
        self,
        *,
        allow_pickle: bool = False,
        max_payload_bytes: int | None = None,
        payload_warn_bytes: int | None = None,
        observer: GuardObserver | None = None,
    ) -> None:
        self.allow_pickle = allow_pickle
        self.max_payload_bytes = max_payload_bytes
        self.payload_warn_bytes = payload_warn_bytes
        self.observer = observer  # told of every guard hit (the engine's metrics)
        self._encoder = msgspec.msgpack.Encoder(enc_hook=self._enc_hook)
        self._digest_encoder = msgspec.msgpack.Encoder(enc_hook=self._enc_hook, order="sorted")
        self._decoder = msgspec.msgpack.Decoder(ext_hook=self._ext_hook)

    # -- values ---------------------------------------------------------------

    def encode(self, value: Any, what: str = "value") -> bytes:
        """Encode ``value``; ``what`` names it in errors (e.g. "result of my_mod:charge")."""
        try:
            data = self._encoder.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise EncodingError(
                f"cannot journal {what} of type {type(value).__name__}: {exc}. Return plain data "
                "(dict, list, str, int, float, bool, None, bytes), a pydantic model, or enable "
                "journal.allow_pickle (requires journal.signing_key)"
            ) from None
        size = len(data)
        if (self.payload_warn_bytes is not None and size > self.payload_warn_bytes) or (
            self.max_payload_bytes is not None and size > self.max_payload_bytes
        ):
            self._guard(what, size)
        return data

    def _guard(self, what: str, size: int) -> None:
        """``size`` is over a payload threshold: warn, or fail with PayloadTooLargeError."""
        if self.max_payload_bytes is not None and size > self.max_payload_bytes:
            if self.observer is not None:
                self.observer.guard_hit("payload_bytes", "fail")
            raise PayloadTooLargeError(
                f"{what}{where()} encodes to {size} bytes, over journal.max_payload_bytes="
                f"{self.max_payload_bytes}; store large data elsewhere and journal a reference"
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

    def decode(self, data: bytes) -> Any:
        try:
            return self._decoder.decode(data)
        except msgspec.DecodeError as exc:
            raise CorruptRecordError(f"journaled value does not decode: {exc}") from None

    def roundtrip(self, value: Any, what: str = "value") -> tuple[bytes, Any]:
        data = self.encode(value, what)
        return data, self.decode(data)

    def digest(self, value: Any) -> str:
        """A stable digest (same in every process) used to detect changed arguments."""
        try:
            data = self._digest_encoder.encode(value)
        except (TypeError, ValueError, OverflowError):
            # Not encodable: fall back to the types, which are at least stable.
            data = repr(_type_shape(value)).encode()
        return hashlib.blake2b(data, digest_size=16).hexdigest()

    def _enc_hook(self, obj: Any) -> Any:
        if isinstance(obj, BaseModel):
            payload = msgspec.msgpack.encode([type_name(type(obj)), obj.model_dump(mode="json")])
            return msgspec.msgpack.Ext(_EXT_PYDANTIC, payload)
        if self.allow_pickle:
            return msgspec.msgpack.Ext(_EXT_PICKLE, pickle.dumps(obj, protocol=5))
        raise TypeError(f"unsupported type {type_name(type(obj))}")

    def _ext_hook(self, code: int, data: memoryview) -> Any:
        if code == _EXT_PYDANTIC:
            name, fields = msgspec.msgpack.decode(data)
            model = _loaded_type(name)
            if model is None or not issubclass(model, BaseModel):
                raise CorruptRecordError(
                    f"journaled pydantic model {name} is not defined in this process; "
                    "import the module that defines it before the agent runs"
                )
            return model.model_validate(fields)
        if code == _EXT_PICKLE:
            if not self.allow_pickle:
                raise PickleDisabledError(
                    "journaled value is pickled but journal.allow_pickle is off; enable it only "
                    "if you trust every writer of this journal (and set journal.signing_key)"
                )
            return pickle.loads(data)
        raise CorruptRecordError(f"unknown MessagePack extension code {code}")

    # -- errors ---------------------------------------------------------------

    def capture_error(self, exc: BaseException, depth: int = 0) -> ErrorInfo:
        """Record an exception with its type, message, args and cause chain."""
        try:
            args: bytes | None = self._encoder.encode(list(exc.args))
        except (TypeError, ValueError, OverflowError):
            args = None
        cause = exc.__cause__ or (None if exc.__suppress_context__ else exc.__context__)
        return ErrorInfo(
            type=type_name(type(exc)),
            message=str(exc),
            args=args,
            cause=self.capture_error(cause, depth + 1) if cause is not None and depth < 8 else None,
            traceback="".join(traceback.format_exception_only(type(exc), exc)).strip(),
        )

    def rebuild_error(self, info: ErrorInfo) -> BaseException:
        """The recorded exception, rebuilt when its type can be; else a RecordedCallError."""
        exc: BaseException | None = None
        cls = _loaded_type(info.type)
        if cls is not None and issubclass(cls, BaseException) and info.args is not None:
            try:
                exc = cls(*self.decode(info.args))
            except Exception:
                exc = None
        if exc is None:
            exc = RecordedCallError(info.type, info.message)
        if info.cause is not None:
            exc.__cause__ = self.rebuild_error(info.cause)
        return exc


def _type_shape(value: Any) -> Any:
    if isinstance(value, (list, tuple)):
        return [_type_shape(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _type_shape(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    return type_name(type(value))
