"""What every benchmark module shares: the entry shape and lazily started services."""

from __future__ import annotations

import contextlib
import gc
import time
from collections.abc import Sequence
from functools import cached_property

from actionjournal.durable.store import Store


def entry(name: str, unit: str, ours: float, baseline: float, target: float) -> dict:
    """One result; ``ratio`` is always ours / baseline, measured in the same run."""
    return {
        "name": name,
        "unit": unit,
        "ours": round(ours, 3),
        "baseline": round(baseline, 3),
        "ratio": round(ours / baseline, 3) if baseline else None,
        "target": target,
    }


def unavailable(name: str, reason: str) -> dict:
    """An entry that could not be measured, and why (shown as such in docs/performance.md)."""
    return {"name": name, "error": reason}


def timed_recovery(reader: Store, keys: Sequence[str], records: int) -> float:
    """Seconds ``reader`` takes to read every key's journal, as a restart does; then closed.

    The set-up (imports, tens of thousands of appends) leaves the garbage collector owing a
    full collection (50-80 ms at this heap size), which would land in whichever timed read
    comes first: every timed read starts with nothing owed."""
    gc.collect()
    start = time.perf_counter()
    got = sum(len(reader.read_key("bench", "op", key, None)) for key in keys)
    took = time.perf_counter() - start
    reader.close()
    assert got == records, f"read {got} of {records} records"
    return took


class BenchContext(contextlib.ExitStack):
    """Services benchmarks need, started on first use and stopped when the run ends."""

    @cached_property
    def kafka(self) -> str:
        """Bootstrap address of a private local Kafka broker."""
        from actionjournal.dev.kafka import running_broker

        return self.enter_context(running_broker())

    @cached_property
    def postgres(self) -> str:
        """URL of a private local PostgreSQL server (installed with apt if missing)."""
        from benchmarks.postgres import running_postgres

        return self.enter_context(running_postgres())
