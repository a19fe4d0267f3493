"""Counts of what durable calls did, kept apart so a replay never looks like an execution."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, fields


@dataclass
class CallCounts:
    executed: int = 0
    replayed: int = 0
    reconciled: int = 0
    unknown: int = 0
    diverged: int = 0
    actions_executed: int = 0
    actions_replayed: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)

    def as_dict(self) -> dict[str, int]:
        return {f.name: getattr(self, f.name) for f in fields(self) if not f.name.startswith("_")}
