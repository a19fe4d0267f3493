"""What every benchmark module shares: the entry shape and lazily started services."""

from __future__ import annotations

import contextlib
from functools import cached_property


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
