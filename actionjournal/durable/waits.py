"""Waiting for a time or a person: what an agent's code sees of timers and signals.

An action asks for a timer (``ctx.schedule_event``) or a signal (``ctx.expect_signal``);
both are effects of the action, journaled with it. When the time comes, or when the
outside answers with a :class:`SignalInput` given to the same key as an input, the key
starts a new run with the timer's event, a :class:`SignalReceived` or a
:class:`SignalTimedOut` (docs/timers.md).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.events import Event


@dataclass(frozen=True)
class Signal:
    """A signal an action expects: give ``id`` to whoever answers (a person, a service).

    ``deadline`` (aware, UTC): when the agent gets a ``SignalTimedOut`` (or the action's
    ``timeout_event``) if no answer came first.
    """

    id: str
    name: str
    deadline: datetime


@dataclass(frozen=True)
class SignalInput:
    """An answer to a signal, given to the signal's key as an input of the agent.

    ``LocalRunner.submit(key, SignalInput(signal.id, value))``, or an element of a Flink
    job's input stream, e.g. read from Kafka with :meth:`from_json`. ``key``: the agent key
    it belongs to, for a job whose key selector cannot tell (``from_datastream(...,
    key_selector=...)`` keys a ``SignalInput`` with a key by that key); ``None``: the key
    selector keys it.
    """

    signal_id: str
    value: Any = None
    key: Any = None

    def __post_init__(self) -> None:
        if not isinstance(self.signal_id, str) or not self.signal_id:
            raise ValueError(
                f"SignalInput: signal_id={self.signal_id!r} is not a signal id: use the id of "
                "the Signal the agent expects (Signal.id, a non-empty str)"
            )

    @classmethod
    def from_json(cls, data: str | bytes | bytearray) -> SignalInput:
        """``{"signal_id": "...", "value": ..., "key": ...}`` (``key`` optional) as a
        SignalInput; a ValueError says what is wrong with anything else."""
        try:
            decoded = json.loads(data)
        except (ValueError, UnicodeDecodeError) as exc:
            raise ValueError(f"a signal answer is not JSON ({exc}): {_preview(data)}") from None
        if not isinstance(decoded, dict) or not isinstance(decoded.get("signal_id"), str):
            raise ValueError(
                'a signal answer is a JSON object {"signal_id": "...", "value": ...} (and '
                f'optionally "key"), not {_preview(data)}'
            )
        extra = sorted(set(decoded) - {"signal_id", "value", "key"})
        if extra:
            raise ValueError(
                f"a signal answer has fields {extra} besides signal_id, value and key: "
                f"{_preview(data)}"
            )
        return cls(decoded["signal_id"], decoded.get("value"), decoded.get("key"))

    def to_json(self) -> str:
        """The JSON :meth:`from_json` reads (``value`` and ``key`` must be JSON values)."""
        body: dict[str, Any] = {"signal_id": self.signal_id, "value": self.value}
        if self.key is not None:
            body["key"] = self.key
        return json.dumps(body)


class SignalFields:
    """``name`` and ``signal_id`` of an event about a signal, from its attributes (shared
    with the Flink Agents face's signal events)."""

    __slots__ = ()
    if TYPE_CHECKING:
        attributes: dict[str, Any]

    @property
    def name(self) -> str:
        return str(self.attributes["name"])

    @property
    def signal_id(self) -> str:
        return str(self.attributes["signal_id"])


class SignalReceived(SignalFields, Event):
    """The answer to a signal the agent expected arrived before its deadline."""

    TYPE = "signal_received"
    __slots__ = ()

    def __init__(self, name: str, signal_id: str, value: Any, *, id: str | None = None) -> None:
        super().__init__(self.TYPE, {"name": name, "signal_id": signal_id, "value": value}, id=id)

    @property
    def value(self) -> Any:
        return self.attributes["value"]


class SignalTimedOut(SignalFields, Event):
    """A signal's deadline passed before an answer arrived (a later answer runs nothing)."""

    TYPE = "signal_timed_out"
    __slots__ = ()

    def __init__(self, name: str, signal_id: str, *, id: str | None = None) -> None:
        super().__init__(self.TYPE, {"name": name, "signal_id": signal_id}, id=id)


def due_time(now: float, delay: Any, at: Any, what: str) -> float:
    """When a timer asked for with ``delay`` (seconds or a timedelta) or ``at`` (an aware
    datetime) is due, in epoch seconds: an absolute time, journaled as such."""
    if (delay is None) == (at is None):
        raise ConfigurationError(
            f"{what}: give delay=... (seconds or a timedelta) or at=... (an aware datetime), "
            f"exactly one of them (got delay={delay!r}, at={at!r})"
        )
    if at is not None:
        if not isinstance(at, datetime) or at.tzinfo is None or at.utcoffset() is None:
            raise ConfigurationError(
                f"{what}: at={at!r} is not an aware datetime: give one with a time zone, e.g. "
                "datetime.now(UTC) + timedelta(hours=1)"
            )
        return at.timestamp()
    return now + seconds(delay, f"{what}: delay", allow_zero=True)


def seconds(value: Any, what: str, allow_zero: bool = False) -> float:
    """``value`` (seconds, or a timedelta) as a number of seconds, checked."""
    if isinstance(value, timedelta):
        value = value.total_seconds()
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ConfigurationError(f"{what}={value!r}: use a number of seconds or a timedelta")
    if value < 0 or (value == 0 and not allow_zero):
        least = "0 or more" if allow_zero else "more than 0"
        raise ConfigurationError(f"{what}={value!r}: use {least} seconds")
    return float(value)


def aware(epoch: float) -> datetime:
    """Epoch seconds as an aware UTC datetime."""
    return datetime.fromtimestamp(epoch, UTC)


def _preview(data: str | bytes | bytearray, limit: int = 120) -> str:
    text = repr(data)
    return text if len(text) <= limit else text[: limit - 1] + "…"
