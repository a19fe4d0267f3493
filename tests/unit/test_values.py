"""Values and exceptions a journal keeps: the first run and every replay see the same thing
(issue 14 items 2, 3, 8 and 9)."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import decimal
import enum
import logging
import os
import subprocess
import sys
import threading
import uuid
import zoneinfo
from collections import OrderedDict
from typing import Any, NamedTuple

import pytest
from pydantic import BaseModel

from actionjournal import (
    Agent,
    DivergenceError,
    Event,
    InputEvent,
    LocalRunner,
    OutputEvent,
    RecordedCallError,
    action,
)
from actionjournal.durable.errors import ActionFailedError, EncodingError
from actionjournal.durable.values import ValueCodec
from actionjournal.stores import MemoryStore


class Color(str, enum.Enum):  # noqa: UP042 - the spelling older code uses
    RED = "red"


class Mode(enum.StrEnum):
    FAST = "fast"


class Level(enum.IntEnum):
    HIGH = 3


class Perm(enum.IntFlag):
    R = 4
    W = 2


@dataclasses.dataclass(frozen=True)
class Point:
    x: int
    tags: frozenset[str]


class Pair(NamedTuple):
    left: int
    right: tuple[int, ...]


class Receipt(BaseModel):
    order: int
    at: datetime.datetime


HOUR = datetime.timedelta(hours=1)


def sample() -> dict[Any, Any]:
    paris = zoneinfo.ZoneInfo("Europe/Paris")
    return {
        "tuple": (1, ("nested", 2.5)),
        "set": {1, "a", (2, 3)},
        "frozenset": frozenset({b"x", 1.5, "y"}),
        "datetime": datetime.datetime(2026, 10, 25, 2, 30, 1, 7, tzinfo=paris, fold=1),
        "utc": datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC),
        "offset": datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone(-3 * HOUR, "BRT")),
        "naive": datetime.datetime(2026, 1, 1, 12),
        "date": datetime.date(2026, 2, 28),
        "time": datetime.time(23, 59, 59, 999, tzinfo=datetime.UTC),
        "timedelta": datetime.timedelta(days=-1, seconds=5, microseconds=7),
        "decimal": decimal.Decimal("-10.50"),
        "uuid": uuid.UUID("12345678-1234-5678-1234-567812345678"),
        "str_enum": Color.RED,
        "strenum": Mode.FAST,
        "int_enum": Level.HIGH,
        "flag": Perm.R | Perm.W,
        "dataclass": Point(1, frozenset({"a", "b"})),
        "namedtuple": Pair(1, (2, 3)),
        "pydantic": Receipt(order=1, at=datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC)),
        (1, "tuple key"): "a dict with a tuple key",
        Color.RED: "a dict with an Enum key",
        "plain": {"list": [1, "2", None, True, b"\x00"], "int": 2**63},
    }


def same(a: Any, b: Any) -> bool:
    """Equal, and of the same types all the way down."""
    if type(a) is not type(b) or a != b:
        return False
    if isinstance(a, dict):
        return all(same(ka, kb) and same(a[ka], b[kb]) for ka, kb in zip(a, b, strict=True))
    if isinstance(a, list | tuple):
        return all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, datetime.datetime | datetime.time):
        return a.tzinfo == b.tzinfo and a.fold == b.fold
    return True


def produce() -> dict[Any, Any]:
    return sample()


class Typed(Agent):
    """Typed values as a call's result, the input, a memory value and event attributes."""

    seen: list[tuple[str, Any]] = []
    fail = True

    @action(InputEvent)
    def make(self, event, ctx):
        Typed.seen.append(("input", event.input))
        got = ctx.durable_execute(produce)
        Typed.seen.append(("result", got))
        ctx.short_term_memory.set("v", got)
        ctx.send_event(Event("made", {"v": got}))

    @action("made")
    def use(self, event, ctx):
        Typed.seen.append(("event", event.attributes["v"]))
        Typed.seen.append(("memory", ctx.short_term_memory.get("v")))
        if Typed.fail:
            raise RuntimeError("crash after the values were journaled")
        ctx.send_event(OutputEvent(event.attributes["v"]))


def test_typed_values_are_the_same_on_the_first_run_and_on_replay():
    """Item 9: tuple, set, frozenset, dates and times, Decimal, UUID, Enums (str too),
    dataclass, named tuple, pydantic, dicts with typed keys keep type and value."""
    store, expected = MemoryStore(), sample()
    Typed.seen, Typed.fail = [], True
    with pytest.raises(ActionFailedError):
        asyncio.run(LocalRunner(Typed(), store).run([("k", sample())]))
    first = list(Typed.seen)
    Typed.seen, Typed.fail = [], False
    runner = LocalRunner(Typed(), store)
    asyncio.run(runner.run([("k", sample())]))
    replayed = list(Typed.seen)
    assert [where for where, _ in first] == ["input", "result", "event", "memory"]
    assert [where for where, _ in replayed] == ["event", "memory"]  # `make` replays whole
    for where, value in first + replayed:
        assert same(value, expected), where
    assert same(runner.outputs[0][1].output, expected)
    assert runner.counts["executed"] == 0


def test_values_that_cannot_keep_their_type_are_refused_naming_where():
    """Item 9: anything else is refused when it is journaled, with the call and the place."""
    codec = ValueCodec()
    refused = [
        (OrderedDict(a=1), "collections.OrderedDict"),
        ({"a": [bytearray(b"x")]}, "['a'][0]"),
        ([object()], "builtins.object"),
        (datetime.datetime(2026, 1, 1, tzinfo=_OtherZone()), "time zone"),
    ]
    for value, named in refused:
        with pytest.raises(EncodingError, match="result of my_mod:charge") as info:
            codec.encode(value, "result of my_mod:charge")
        assert named in str(info.value)

    @dataclasses.dataclass
    class Local:  # not reachable by its name: could not be rebuilt after a restart
        x: int

    with pytest.raises(EncodingError, match="define it at module level"):
        codec.encode(Local(1), "result of my_mod:charge")


class _OtherZone(datetime.tzinfo):
    def utcoffset(self, dt):
        return datetime.timedelta(0)


CANONICAL = """
from actionjournal.durable.values import ValueCodec
names = {"ada", "bob", "cy", "dee", "eve", "fay"}
value = {
    "mixed": frozenset({"x", 1, 2.5, b"b", ("t", 1), None}),
    "names": set(names),
    "by_name": {name: len(name) for name in names},  # insertion order follows the seed
    "nested": [{n: {n} for n in names}],
}
codec = ValueCodec()
print(codec.canonical(value).hex(), codec.encode({"s": set(names)}).hex(), list(names))
"""


def canonical_in_a_process(seed: str) -> list[str]:
    env = {**os.environ, "PYTHONHASHSEED": seed}
    run = subprocess.run([sys.executable, "-c", CANONICAL], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stderr
    return run.stdout.split(maxsplit=2)


def test_canonical_bytes_are_the_same_under_every_hash_seed():
    """Item 2: sets (mixed types included) and dicts built by iterating a set; the journal
    bytes of a set too. (The seeds do order the sets differently: the last column.)"""
    runs = [canonical_in_a_process(seed) for seed in ("1", "2", "3", "4")]
    assert len({tuple(run[:2]) for run in runs}) == 1
    assert len({run[2] for run in runs}) > 1


class Obj:
    def __init__(self, n: int) -> None:
        self.n = n


def use(obj: Any) -> str:
    return f"used {obj!r}"


@dataclasses.dataclass
class Order:
    id: str


class Uses(Agent):
    def __init__(self, arg: Any) -> None:
        self.arg = arg

    @action(InputEvent)
    def handle(self, event, ctx):
        ctx.durable_execute(use, self.arg)
        raise RuntimeError("crash after the call")


def test_an_argument_that_cannot_be_digested_is_refused_naming_it():
    """Item 3: an object the digest cannot see into is refused, before the call runs."""
    with pytest.raises(ActionFailedError) as info:
        asyncio.run(LocalRunner(Uses(Obj(1)), MemoryStore()).run([("k", 1)]))
    cause = info.value.__cause__
    assert isinstance(cause, EncodingError)
    assert "argument #0 of durable call test_values:use" in str(cause)
    assert "test_values.Obj" in str(cause)


def test_a_changed_argument_is_a_divergence():
    """Item 3: a dataclass argument is digested by its fields: changed, it is no replay."""
    store = MemoryStore()
    with pytest.raises(ActionFailedError):
        asyncio.run(LocalRunner(Uses(Order("o-1")), store).run([("k", 1)]))
    with pytest.raises(ActionFailedError) as info:
        asyncio.run(LocalRunner(Uses(Order("o-2")), store).run([("k", 1)]))
    assert isinstance(info.value.__cause__, DivergenceError)


class SoftLimit(Exception):
    def __init__(self, user: str, limit: int = 10) -> None:
        super().__init__(f"{user} is over the limit of {limit}")
        self.user = user
        self.limit = limit
        self.error_code = "E_SOFT"
        self.details = {"window": datetime.timedelta(minutes=5), "ids": (1, 2)}


class HoldsALock(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.lock = threading.Lock()


def limited() -> None:
    raise SoftLimit("alice", 3)


def locked() -> None:
    raise HoldsALock("cannot be journaled")


class Raises(Agent):
    seen: list[BaseException] = []

    @action(InputEvent)
    def handle(self, event, ctx):
        for fn in (limited, locked):
            try:
                ctx.durable_execute(fn)
            except Exception as exc:
                Raises.seen.append(exc)
        raise RuntimeError("crash after the calls")


def test_a_replayed_exception_equals_the_original_or_is_a_recorded_call_error(caplog):
    """Item 8: type, str(), args and attributes; else clearly a RecordedCallError, which the
    first run already warns about."""
    store = MemoryStore()
    Raises.seen = []
    with caplog.at_level(logging.WARNING):
        for _ in range(2):
            with pytest.raises(ActionFailedError):
                asyncio.run(LocalRunner(Raises(), store).run([("k", 1)]))
    original, locked_first, replayed, locked_replayed = Raises.seen
    assert type(replayed) is SoftLimit
    assert str(replayed) == str(original) == "alice is over the limit of 3"
    assert replayed.args == original.args
    assert vars(replayed) == vars(original)
    assert same(replayed.details, original.details)
    assert type(locked_first) is HoldsALock
    assert isinstance(locked_replayed, RecordedCallError)
    assert locked_replayed.original_type.endswith("HoldsALock")
    assert "cannot be journaled" in str(locked_replayed)
    warnings = [r.getMessage() for r in caplog.records if "HoldsALock" in r.getMessage()]
    assert len(warnings) == 1 and "RecordedCallError" in warnings[0]
