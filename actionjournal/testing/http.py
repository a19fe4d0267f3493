"""What the local test services share: a quiet threaded HTTP server on 127.0.0.1."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 1024  # hundreds of concurrent calls connect at once (default 5)

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # clients killed mid-request (on purpose, in crash tests) are not errors


class JsonHandler(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def read_body(self) -> bytes | None:
        """The request body, or None when the client died mid-request (nothing happened)."""
        length = int(self.headers.get("Content-Length", 0))
        raw = self.rfile.read(length)
        return raw if len(raw) == length else None

    def _reply(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


class LocalService:
    """A service on a free 127.0.0.1 port; subclasses give the handler class.

    ``with Service() as s: s.url`` starts it and stops it at the end.
    """

    def _serve(self, handler: type[BaseHTTPRequestHandler], port: int = 0) -> None:
        """Serve on ``port``, a free one when 0 (a given port lets a test restart a service)."""
        self._flight_lock = threading.Lock()
        self._in_flight = 0
        self._peak_in_flight = 0
        self._server = _QuietServer(("127.0.0.1", port), handler)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    @contextlib.contextmanager
    def serving(self) -> Iterator[None]:
        """Count a request as in flight while the block runs (see :meth:`wait_idle`)."""
        with self._flight_lock:
            self._in_flight += 1
            self._peak_in_flight = max(self._peak_in_flight, self._in_flight)
        try:
            yield
        finally:
            with self._flight_lock:
                self._in_flight -= 1

    def waiting(self) -> int:
        """Requests in flight now (e.g. held at a gate, or sleeping out a latency)."""
        with self._flight_lock:
            return self._in_flight

    @property
    def peak_in_flight(self) -> int:
        """The most requests that were in flight at once: how concurrent the callers were,
        seen by the service (a test asserts it, not a duration)."""
        with self._flight_lock:
            return self._peak_in_flight

    def wait_idle(self, quiet: float = 0.2, timeout: float = 10.0) -> None:
        """Wait until no request has been in flight for ``quiet`` seconds.

        A client killed mid-request may leave bytes that the service handles after
        the kill; counts are only final once those are done.
        """
        deadline = time.monotonic() + timeout
        quiet_since = time.monotonic()
        while time.monotonic() < deadline:
            if self.waiting():
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since >= quiet:
                return
            time.sleep(0.02)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
