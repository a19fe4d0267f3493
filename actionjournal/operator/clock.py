"""The time a local runner's timers go by: the wall clock, or one a test moves by hand."""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from actionjournal.durable.errors import ConfigurationError
from actionjournal.durable.options import check_callable
from actionjournal.durable.waits import seconds
from actionjournal.operator.waits import Clock


def epoch_clock(owner: str, clock: Any) -> Clock:
    """``clock`` (a callable returning epoch seconds or an aware datetime, or an object whose
    ``time()`` or ``now()`` does; None: the wall clock) as a callable returning epoch
    seconds."""
    if clock is None:
        return time.time
    if isinstance(clock, ManualClock):  # returns epoch seconds already
        return clock
    if not callable(clock):
        clock = getattr(clock, "time", None) or getattr(clock, "now", None) or clock
    check_callable(owner, "clock", clock)

    def now() -> float:
        value = clock()
        if isinstance(value, datetime) and value.utcoffset() is not None:
            return value.timestamp()
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigurationError(
            f"{owner}: the clock returned {value!r}: it must return epoch seconds (like "
            "time.time) or an aware datetime"
        )

    return now


class ManualClock:
    """A clock that moves only when told to, for tests of timers that must not sleep.

    ``LocalRunner(agent, store, clock=clock)``; then ``clock.advance(timedelta(hours=24))``
    and ``await runner.drain()`` run what came due. Call it for the time: epoch seconds.
    """

    def __init__(self, start: float | datetime | None = None) -> None:
        if start is None:
            start = time.time()
        self._now = start.timestamp() if isinstance(start, datetime) else float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self._now

    def advance(self, by: float | timedelta) -> float:
        """Move the clock forward by ``by`` (seconds or a timedelta); returns the new time."""
        step = seconds(by, "ManualClock.advance: by", allow_zero=True)
        with self._lock:
            self._now += step
            return self._now

    def now(self) -> datetime:
        """The clock's time as an aware UTC datetime."""
        return datetime.fromtimestamp(self(), UTC)
