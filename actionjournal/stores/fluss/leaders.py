"""Following a bucket's new leader after a tablet server is lost.

pyfluss 1.0's writer keeps sending a bucket's appends to the leader it first learnt of: after
that tablet server dies, the coordinator elects a new leader (once the dead server's
ZooKeeper session expires) but the open writer never moves to it, and every append waits out
``ack_timeout_s``. So while appends wait, the store asks the coordinator which tablet servers
are registered; once one the writer was made with is gone, the writer is given up: its
appends in flight fail at once (they may or may not have been written: counted as not
written) and the next append opens a new writer, which finds the new leaders.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import fluss

# A wait this old makes the watch ask the coordinator; asked at most this often.
_ASK_AFTER_S = 0.5


async def tablet_servers(admin: Any) -> frozenset[int]:
    """Ids of the tablet servers registered with the coordinator."""
    nodes = await asyncio.wait_for(admin.get_server_nodes(), 5)
    return frozenset(n.id for n in nodes if n.server_type == "TabletServer")


class WriterWatch:
    """Appends waiting for acknowledgements, and which writer generations lost a server."""

    def __init__(self) -> None:
        self.servers: frozenset[int] = frozenset()
        """Tablet servers registered when the current writer was made."""
        self._lost: dict[int, str] = {}
        self._lock = threading.Lock()
        self._waits: dict[int, float] = {}
        self._tokens = itertools.count()

    @contextlib.contextmanager
    def waiting(self) -> Iterator[None]:
        """Around an append's wait for its acknowledgement (any thread)."""
        token = next(self._tokens)
        with self._lock:
            self._waits[token] = time.monotonic()
        try:
            yield
        finally:
            with self._lock:
                del self._waits[token]

    def lost(self, generation: int) -> str | None:
        """Why appends of writer ``generation`` will not be acknowledged, if they will not."""
        return self._lost.get(generation)

    async def run(
        self, admin: Any, generation: Callable[[], int], give_up: Callable[[int], None]
    ) -> None:
        """Until cancelled (on the store's loop): while an append has waited a moment, ask
        which tablet servers are registered; ``give_up`` the writer of a lost one."""
        while True:
            await asyncio.sleep(_ASK_AFTER_S)
            with self._lock:
                oldest = min(self._waits.values(), default=None)
            if oldest is None or time.monotonic() - oldest < _ASK_AFTER_S:
                continue
            current = generation()
            try:
                registered = await tablet_servers(admin)
            except (fluss.FlussError, TimeoutError):
                continue  # the coordinator is away: the appends' own timeout still holds
            gone = self.servers - registered
            if gone and current == generation():
                self._lost[current] = (
                    f"tablet server(s) {sorted(gone)} left the cluster while it waited; the "
                    "next append goes to the buckets' new leaders"
                )
                give_up(current)
