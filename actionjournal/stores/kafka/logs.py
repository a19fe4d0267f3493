"""librdkafka's own log lines: through Python logging, quiet, rate-limited.

Left to itself librdkafka prints to stderr: a broker that is down gives a line per
reconnect attempt (hundreds a minute) and a client's shutdown an informational line.
What matters of it reaches users as the store's errors and warnings (which name the
brokers and say what to do), so its lines go to the ``actionjournal.stores.kafka.
librdkafka`` logger at DEBUG, at most one per kind of line (facility) every
``interval`` seconds, with how many were left out. Informational lines are not produced
at all (``log_level`` 5); ``client_config`` may set ``log_level`` to have them.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

CLIENT_LOG = logging.getLogger("actionjournal.stores.kafka.librdkafka")
_INTERVAL_S = 30.0


class ClientLog:
    """A ``logger`` for confluent-kafka clients (it calls ``log(level, format, *args)``)."""

    def __init__(self, interval: float = _INTERVAL_S) -> None:
        self.interval = interval
        self._lock = threading.Lock()
        self._last: dict[str, float] = {}
        self._left_out: dict[str, int] = {}

    def log(self, level: int, msg: str, *args: Any) -> None:
        if not CLIENT_LOG.isEnabledFor(logging.DEBUG):
            return
        kind = str(args[0]) if args else msg  # the facility: FAIL, GETPID, BGQUEUE, ...
        now = time.monotonic()
        with self._lock:
            if now - self._last.get(kind, -self.interval) < self.interval:
                self._left_out[kind] = self._left_out.get(kind, 0) + 1
                return
            self._last[kind] = now
            left_out = self._left_out.pop(kind, 0)
        suffix = f" ({left_out} more {kind} lines left out)" if left_out else ""
        CLIENT_LOG.debug("librdkafka %s: " + msg + "%s", logging.getLevelName(level), *args, suffix)


def client_logging() -> dict[str, Any]:
    """Settings that give a client's log lines to :class:`ClientLog` (one per client)."""
    return {"logger": ClientLog(), "log_level": 5}
