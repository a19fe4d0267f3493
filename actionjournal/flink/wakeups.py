"""Tell the agent operator at once that a key's run finished (the Python side of
``RunWakeups.java``).

A PyFlink function emits only while it handles an element or a timer that Flink sent it;
a run finishes in between, on a thread of its own. The draining operator listens on a
loopback socket (its job parameter ``actionjournal.wakeups``: port and token); each
finished run's key sent there makes it fire the key's timer now and finish the bundle
(unless one finished within the bundle time), so the run's outputs leave within
milliseconds instead of at the next poll. The function also reports its journal binding
there once, which the operator checkpoints.
"""

from __future__ import annotations

import logging
import socket
import struct
import threading
from typing import Any

log = logging.getLogger(__name__)
PARAMETER = "actionjournal.wakeups"  # DrainingKeyedProcessOperator.WAKEUPS
BINDING = struct.pack(">i", -1)  # in place of a key's length (RunWakeups.java)
IDLE = struct.pack(">i", -2)  # before a key's length: after this run, none is left


class RunWakeups:
    """One connection per Python function instance; :meth:`send` is thread-safe."""

    def __init__(self, address: str) -> None:
        port, token = address.split(" ")
        self._socket = socket.create_connection(("127.0.0.1", int(port)), timeout=10)
        self._socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket.sendall(token.encode("ascii"))
        self._lock = threading.Lock()
        self.alive = True

    @classmethod
    def connect(cls, runtime_context: Any) -> RunWakeups | None:
        """The operator's wake-up socket, or None (PyFlink's own operator, or no connection:
        then finished runs are found by polling, as without the draining operator)."""
        address = runtime_context.get_job_parameter(PARAMETER, None)
        if address is None:
            return None
        try:
            return cls(address)
        except OSError as exc:
            log.warning(
                "cannot connect to the agent operator's wake-up socket (%s): finished runs "
                "are found by polling instead, later by up to a quarter of their duration",
                exc,
            )
            return None

    def send(self, key: bytes, idle: bool = False) -> None:
        """Report a finished run of ``key`` (the key as Flink serializes it); ``idle``: the
        function has no run left, so the next input is likely a reply to this output, and
        the operator lets it go at the bundle's next time check (RunWakeups.java)."""
        self._send((IDLE if idle else b"") + struct.pack(">i", len(key)) + key)

    def send_binding(self, binding: str) -> None:
        """Report the function's journal binding (JSON), for the operator to checkpoint."""
        data = binding.encode()
        self._send(BINDING + struct.pack(">i", len(data)) + data)

    def _send(self, message: bytes) -> None:
        with self._lock:
            if not self.alive:
                return
            try:
                self._socket.sendall(message)
            except OSError as exc:  # the operator closed (job ending): back to polling
                self.alive = False
                log.debug("wake-up socket closed: %s", exc)

    def close(self) -> None:
        with self._lock:
            self.alive = False
            self._socket.close()
