"""What the Kafka and Fluss failover tests share: the agent's source, a store that remembers
what it acknowledged and refused, and running the source with a kill in the middle."""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from typing import Any

from actionjournal import JournalWriteError, LocalRunner
from actionjournal.durable.records import JournalRecord, Marker
from actionjournal.testing.service import CountingService

KEYS, PER_KEY = 20, 8


def source() -> list[tuple[int, str]]:
    """KEYS keys x PER_KEY inputs for tests.e2e.agents.Orders (two durable calls each)."""
    inputs = [json.dumps({"k": i % KEYS, "i": i}) for i in range(KEYS * PER_KEY)]
    return [(json.loads(x)["k"], x) for x in inputs]


class Witnessing:
    """Mixed into a store: what it acknowledged (record, marker, when) and what it refused
    (error, wall-clock time, to compare with the counting service's arrivals)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.acknowledged: list[tuple[JournalRecord, Marker, float]] = []
        self.refused: list[tuple[JournalWriteError, float]] = []
        self._witness_lock = threading.Lock()

    def append(self, record: JournalRecord, *args: Any) -> Marker:
        try:
            marker = super().append(record, *args)  # type: ignore[misc]
        except JournalWriteError as exc:
            with self._witness_lock:
                self.refused.append((exc, time.time()))
            raise
        with self._witness_lock:
            self.acknowledged.append((record, marker, time.monotonic()))
        return marker

    def longest_pause(self) -> float:
        """The longest time between two acknowledgements (the failover's stall)."""
        times = sorted(at for _, _, at in self.acknowledged)
        return max((b - a for a, b in itertools.pairwise(times)), default=0.0)

    def first_refusal(self) -> float | None:
        return min((at for _, at in self.refused), default=None)


async def run_until(runner: LocalRunner, condition: Any, then: Any, **options: Any) -> None:
    """Run the source; when ``condition()`` holds, call ``then()`` (in a thread) once."""
    task = asyncio.ensure_future(runner.run_source(source(), **options))
    while not task.done() and not condition():
        await asyncio.sleep(0.05)
    if not task.done():
        await asyncio.to_thread(then)
    await task


# The store raises its refusal a moment before the runner learns of it, and a call that
# started before that reaches the service a moment later: on a machine at load 20, calls
# reached the service up to 0.14 s after the store's first refusal. A call arriving later
# than this started after the refusal (before the fail-fast: 44 calls over minutes).
IN_FLIGHT_S = 1.0


def calls_after(service: CountingService, refused: float) -> list[Any]:
    """The durable calls that reached the service more than :data:`IN_FLIGHT_S` after the
    store's first refusal at ``refused`` (wall clock): calls started after it."""
    return [arrival for arrival in service.arrivals if arrival.at > refused + IN_FLIGHT_S]


def check_restore_after_a_kill(open_store: Any, kill: Any, keys: int = 40) -> float:
    """Three records for each of ``keys`` keys, then ``kill()`` a server, then at once a new
    store reads every key back: all there. Returns the seconds the restore took."""
    from tests.store_checks import rc, seqs

    names = [f"key-{n}" for n in range(keys)]
    writer = open_store()
    try:
        for key in names:
            for seq in range(3):
                writer.append(rc(key, seq))
    finally:
        writer.close()
    kill()
    began = time.monotonic()
    reader = open_store()
    try:
        found = {key: seqs(reader, key) for key in names}
    finally:
        reader.close()
    assert found == {key: [0, 1, 2] for key in names}
    return time.monotonic() - began
