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


class BenchContext(contextlib.ExitStack):
    """Services benchmarks need, started on first use and stopped when the run ends."""

    @cached_property
    def kafka(self) -> str:
        """Bootstrap address of a private local Kafka broker."""
        from actionjournal.tools.dev_kafka import running_broker

        return self.enter_context(running_broker())
