"""The event loops a sync store drives the asyncio-only pyfluss client on: a private loop in a
daemon thread, and a loop of each calling thread for waiting on appends there."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class Loop:
    """A private asyncio loop in a daemon thread; sync callers run coroutines on it."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self._thread.start()

    def call(self, coro: Coroutine[Any, Any, T], timeout: float) -> T:
        future = asyncio.run_coroutine_threadsafe(coro, self.loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no answer within {timeout:g} s") from None

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        if not self._thread.is_alive():
            self.loop.close()


_threads = threading.local()


def own_loop() -> asyncio.AbstractEventLoop | None:
    """The calling thread's event loop for waiting on appends; None if one runs here already."""
    try:
        asyncio.get_running_loop()
        return None
    except RuntimeError:
        pass
    loop: asyncio.AbstractEventLoop | None = getattr(_threads, "loop", None)
    if loop is None:
        loop = _threads.loop = asyncio.new_event_loop()
    return loop


# How often a waiting append asks whether its writer's tablet servers are still there.
_CHECK_S = 0.5


class WriterLost(Exception):
    """The append's writer sends to a tablet server that left the cluster (see the store)."""


async def acknowledged(
    writer: Any,
    row: tuple[str, str, str, bytes],
    timeout: float,
    lost: Callable[[], str | None],
) -> None:
    """Append ``row`` and wait for its acknowledgement (pyfluss binds the wait to the
    running loop), for up to ``timeout`` seconds; :class:`WriterLost` as soon as ``lost()``
    says why the writer will never be acknowledged."""
    waiting = asyncio.ensure_future(writer.append(row).wait())
    deadline = time.monotonic() + timeout
    try:
        while True:
            remaining = deadline - time.monotonic()
            done, _ = await asyncio.wait({waiting}, timeout=max(0.0, min(_CHECK_S, remaining)))
            if done:
                waiting.result()  # raises the append's error
                return
            why = lost()
            if why is not None:
                raise WriterLost(why)
            if remaining <= 0:
                raise TimeoutError(f"no acknowledgement within {timeout:g} s")
    finally:
        waiting.cancel()
