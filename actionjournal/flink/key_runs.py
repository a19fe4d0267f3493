"""A key's runs, one after another on the event loop, without a round trip between them.

In PyFlink a key's next run could start only when the timer that collects the previous one
reached the Python function: a round trip between the Java operator and the Python worker,
20-30 ms on a small machine, longer than an instant run itself. Here, when a run finishes,
the key's next queued input starts at once from this object's own copy of the key's queue;
the timer collects the finished results in order, emits their outputs and writes keyed
state, as before. A run that finished before the state says so is safe: after a restore,
it replays from the journal (as a run that finished just before a checkpoint always did).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable
from typing import Any

import msgspec

from actionjournal.operator.engine import AgentEngine, KeyState, PendingInput
from actionjournal.operator.run import RunResult


class KeyRuns:
    """The runs of one key's queue, started from the task thread, driven by the loop.

    ``on_finished(wake, ended)`` is called on the loop thread after every run; ``wake`` is
    True for the first result since the last :meth:`collect` (the operator pushes the key
    then: one timer collects every result that finished before it), ``ended`` when the key
    has no run left. Inputs queued while it drives
    are given to it with :meth:`offer`; once it ran out of inputs it takes none, and the
    timer starts another from keyed state.
    """

    def __init__(
        self,
        engine: AgentEngine,
        loop: asyncio.AbstractEventLoop,
        key: Any,
        key_id: str,
        state: KeyState,
        on_finished: Callable[[bool, bool], None],
    ) -> None:
        self._engine, self._key, self._key_id = engine, key, key_id
        self._state = state  # the key's state as if every finished run were collected
        self._on_finished = on_finished
        self._lock = threading.Lock()
        self._finished: list[RunResult] = []
        self._ended = False
        self._woken = False  # a wake-up went out for results not collected yet
        self.future: concurrent.futures.Future[None] = asyncio.run_coroutine_threadsafe(
            self._drive(), loop
        )

    async def _drive(self) -> None:
        try:
            while True:
                result = await self._engine.run_next(self._key, self._key_id, self._state)
                # Encodes the memory the next run starts with (as the timer does for state).
                state = self._engine.complete(self._state, result, self._key_id)
                with self._lock:
                    self._finished.append(result)
                    self._state = state
                    self._ended = not state.pending
                    ended, wake = self._ended, self._wake()
                self._on_finished(wake, ended)
                if ended:
                    return
        except BaseException:
            with self._lock:
                self._ended = True
                wake = self._wake()
            self._on_finished(wake, True)
            raise  # the future holds it: the timer raises it once it emitted the results before

    def _wake(self) -> bool:
        """Under the lock: whether this result needs a wake-up (none is out for the others)."""
        wake, self._woken = not self._woken, True
        return wake

    def offer(self, pending: PendingInput) -> bool:
        """Queue an input the key accepted meanwhile; False once this ran out of inputs."""
        with self._lock:
            if self._ended:
                return False
            queued = [*self._state.pending, pending]
            self._state = msgspec.structs.replace(self._state, pending=queued)
            return True

    def collect(self) -> list[RunResult]:
        """The results finished since the last call, oldest first."""
        with self._lock:
            finished, self._finished = self._finished, []
            self._woken = False
        return finished

    @property
    def has_results(self) -> bool:
        with self._lock:
            return bool(self._finished) or self._ended

    @property
    def over(self) -> bool:
        """Every run finished and every result was collected; ``future.result()`` then
        returns at once (the loop is leaving :meth:`_drive`), or raises the failure that
        ended the runs, if one did."""
        with self._lock:
            return self._ended and not self._finished
