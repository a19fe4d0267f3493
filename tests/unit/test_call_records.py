"""The records a durable call journals, byte for byte: call ids, argument digests and the
encoded ``CallFinished``, pinned for calls of every argument shape. A change here breaks
replay of journals already written (a changed digest is a divergence), so it is never a
speed-up's side effect. And what ``current_call()`` tells the function it calls."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib

import msgspec

from actionjournal.durable.call_options import CallOptions
from actionjournal.durable.calls import ActionCalls
from actionjournal.durable.config import JournalConfig
from actionjournal.durable.effects import current_call
from actionjournal.durable.identity import function_id
from actionjournal.durable.outcomes import CallInfo
from actionjournal.durable.records import CallFinished
from actionjournal.durable.replay import RecordedAction
from actionjournal.durable.retry import RetryPolicy
from actionjournal.durable.stats import JournalMetrics
from actionjournal.durable.writer import RunWriter
from actionjournal.stores import MemoryStore


def service(name, value=None):
    if name == "boom":
        raise ValueError("no such order", 17)
    return {"name": name, "value": value}


def tick(*args):
    return len(args)


# The pinned ids must not depend on how pytest imports this file.
service.__module__ = tick.__module__ = "orders"

CALLS = [  # (function, args, kwargs, options)
    (service, ("charge", {"ok": 1, "amount": 2.5}), {}, CallOptions()),
    (service, ("list",), {"value": [1, 2.5, None, True, b"b", "s"]}, CallOptions()),
    (functools.partial(service, "bound"), (), {"value": {"z": (1, 2), "a": {3}}}, CallOptions()),
    (service, ("keys",), {"value": {1: "a", "b": {2: [3]}}}, CallOptions(durable_id="pay-1")),
    (service, ("boom",), {}, CallOptions()),
    (tick, (), {}, CallOptions()),
    (tick, tuple(range(17)), {}, CallOptions()),
]

# (call_id, arg_digest, sha256 of the encoded record with at=0 and duration=0)
PINNED = [
    (
        "2592774dfb9734809bf160ce6251d205",
        "2:383518e604acfbc4fcf0302495fe37fa",
        "75dfe8c13b373de9c03c3c9073f292a79ae8f22e3da1fcef296b037f8f8fb11b",
    ),
    (
        "307fb9ef154684f03f06a60258b6d20f",
        "2:905e4ea8de9b737a139c3e3ebd156d01",
        "126f979f3263759bcec7d535a32af2b2b718f3eb589996e7fec36ed7bece308c",
    ),
    (
        "7cd1b5a997a77d2a050bddade260f5f6",
        "2:7e9d3c2350f6780526af9060b4b78829",
        "c5f4b1a97bbe2db7a4811a34079bab65eed5c4ada92c6a7bfa510246d99ebcb9",
    ),
    (
        "107843cd91a1ba8675242da301ef040f",
        "2:b4192bfa34acd24a5068765f8de5429e",
        "0c12d37669fff0834b21424992f1a2b13db2694508a5cc3cb5388c91ce8ab583",
    ),
    (
        "bdc5851d3f71772e6baa60c704bc15e4",
        "2:4d0a8b2b4af5603e9df7215f54bafc0b",
        "624a1d60317a9c97352ba5f9a544e2ed624912e555b69aacbc513960b50a3445",
    ),
    (
        "8e22d50dcf64b5b78d6d09e0df4f4e31",
        "2:487448b227b20335af9bd6601c0cf979",
        "273643a87ffd110b89c316aaed7e39e91a0d4bc429ce2cdc30867e470496265d",
    ),
    (
        "d62ce7d34be585143b0bf393d29028a4",
        "2:62cf3bf2ab2b27edcf0cf71c05927d31",
        "7c9b76402e73a795f9273309ad579e7bb5c639a7e9d6644626e075622723b3a0",
    ),
]


def calls() -> tuple[ActionCalls, MemoryStore]:
    store = MemoryStore()
    config = JournalConfig()
    metrics = JournalMetrics()
    writer = RunWriter(store, "ns", "op", 3, "key-1", 7, metrics).for_action("act")
    recorded = RecordedAction()
    return ActionCalls(
        writer, "action-1", "act", recorded, config, config.value_codec(), metrics
    ), store


def journaled(store: MemoryStore) -> list[tuple[str, str, str]]:
    out = []
    for entry in store.entries:
        record = store.codec.decode(entry[3])
        assert isinstance(record, CallFinished)
        if record.error is not None:  # its traceback names lines of this file
            record = msgspec.structs.replace(
                record, error=msgspec.structs.replace(record.error, traceback="")
            )
        fixed = msgspec.structs.replace(record, at=0.0, duration=0.0)
        data = store.codec.encode(fixed)
        out.append((record.call_id, record.arg_digest, hashlib.sha256(data).hexdigest()))
    return out


def test_sync_calls_journal_the_pinned_records():
    ours, store = calls()
    for fn, args, kwargs, opts in CALLS:
        with contextlib.suppress(ValueError):  # "boom" raises; its failure is journaled
            ours.execute(fn, args, kwargs, opts)
    assert journaled(store) == PINNED


def test_async_calls_journal_the_same_records():
    async def main() -> MemoryStore:
        ours, store = calls()
        for fn, args, kwargs, opts in CALLS:
            with contextlib.suppress(ValueError):
                await ours.execute_async(fn, args, kwargs, opts)
        return store

    assert journaled(asyncio.run(main())) == PINNED


SEEN: list[tuple[CallInfo | None, CallInfo | None]] = []


def flaky(name, value=None):
    """Fails its first attempt; notes what current_call() says, twice."""
    SEEN.append((current_call(), current_call()))
    if len(SEEN) == 1:
        raise ConnectionError("transient")
    return name


async def coroutine(name, value=None):
    SEEN.append((current_call(), current_call()))
    return name


def test_current_call_describes_the_running_call_in_both_drivers():
    SEEN.clear()
    ours, _ = calls()
    retry = CallOptions(retry=RetryPolicy(max_attempts=2, initial_interval=0))
    ours.execute(flaky, ("a",), {"value": 1}, retry)

    async def main() -> None:
        await ours.execute_async(flaky, ("b",), {}, CallOptions(durable_id="b-1"))
        await ours.execute_async(coroutine, ("c",), {}, CallOptions())

    asyncio.run(main())
    ids = [ours._call_id(f"f:{function_id(flaky)}#0")] * 2
    ids += [ours._call_id("d:b-1"), ours._call_id(f"f:{function_id(coroutine)}#2")]
    expected = [
        CallInfo(ids[0], None, function_id(flaky), ("a",), {"value": 1}, 0, "key-1", 7, "act"),
        CallInfo(ids[1], None, function_id(flaky), ("a",), {"value": 1}, 1, "key-1", 7, "act"),
        CallInfo(ids[2], "b-1", function_id(flaky), ("b",), {}, 0, "key-1", 7, "act"),
        CallInfo(ids[3], None, function_id(coroutine), ("c",), {}, 0, "key-1", 7, "act"),
    ]
    assert [first for first, _ in SEEN] == expected
    assert all(first is again for first, again in SEEN)  # one CallInfo per attempt
    assert current_call() is None
