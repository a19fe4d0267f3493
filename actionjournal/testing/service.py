"""A real local HTTP service that counts executions, for tests and the demo.

Durable calls in tests go over HTTP to this service, so "how many times did it
run" is answered by the called system, not by our own bookkeeping.

    POST /calls/<name>   body {"call_id": ..., "value": ..., "attempt": ...}
                         -> {"value": ..., "n": <count>}, or an HTTP error while
                         :meth:`CountingService.fail` says so (``arrivals`` has them all)
    GET  /calls/<call_id>  -> the stored response, or 404 if the call never arrived
    GET  /counts           -> {"<call_id>": count, ...}
    POST /actions/<name>   counts one execution of action <name> (no body needed)
"""

from __future__ import annotations

import json
import random
import threading
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, NamedTuple

from actionjournal.testing.http import JsonHandler, LocalService


class Arrival(NamedTuple):
    """One call request as the service saw it: ``at`` is its wall-clock arrival time."""

    call_id: str
    name: str
    attempt: Any
    at: float


class CountingService(LocalService):
    """``delay`` seconds before each executed call answers; with ``max_delay``, a random time
    between the two (uniform, from ``seed``), as a real service's latency varies. ``port``
    0 is a free one; a given port lets a service come back where its callers know it."""

    def __init__(
        self,
        delay: float = 0.0,
        max_delay: float | None = None,
        *,
        seed: int | None = None,
        port: int = 0,
    ) -> None:
        if max_delay is not None and max_delay < delay:
            raise ValueError(f"max_delay={max_delay} is below delay={delay}")
        self.delay = delay
        self.max_delay = max_delay
        self._random = random.Random(seed)
        self.counts: dict[str, int] = {}
        self.responses: dict[str, Any] = {}
        self.actions: dict[str, int] = {}
        """Executions of actions by name, reported by ``POST /actions/<name>``."""
        self.arrivals: list[Arrival] = []
        """Every call request in arrival order, failed ones too."""
        self._failing: dict[str, tuple[int | None, int]] = {}
        self._tries: dict[str, int] = {}
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Event] = {}
        self._spans: list[tuple[float, float]] = []
        self._serve(self._handler(), port)

    def executions(self) -> int:
        with self._lock:
            return sum(self.counts.values())

    def spans(self) -> list[tuple[float, float]]:
        """(arrival, answer) monotonic times of every executed call, for benchmarks."""
        with self._lock:
            return list(self._spans)

    def calls_by_name(self) -> dict[str, int]:
        """Executions per call name (the ``<name>`` of ``POST /calls/<name>``)."""
        with self._lock:
            by_name: dict[str, int] = {}
            for call_id, n in self.counts.items():
                name = self.responses[call_id]["name"]
                by_name[name] = by_name.get(name, 0) + n
            return by_name

    def actions_by_name(self) -> dict[str, int]:
        with self._lock:
            return dict(self.actions)

    def fail(self, name: str, times: int | None = None, status: int = 503) -> None:
        """Answer requests to ``name`` with HTTP ``status``: the first ``times`` of each call
        id (``None``: all). A failed request executes nothing and is not in ``counts``."""
        with self._lock:
            self._failing[name] = (times, status)

    def attempts(self, name: str) -> dict[str, list[Any]]:
        """Per call id of calls to ``name``: the ``attempt`` field of each of its requests."""
        with self._lock:
            found: dict[str, list[Any]] = {}
            for arrival in self.arrivals:
                if arrival.name == name:
                    found.setdefault(arrival.call_id, []).append(arrival.attempt)
            return found

    def hold(self, name: str) -> None:
        """Make calls to ``name`` wait (in flight, unanswered) until :meth:`release`."""
        with self._lock:
            self._gates[name] = threading.Event()

    def release(self, name: str) -> None:
        with self._lock:
            gate = self._gates.pop(name, None)
        if gate is not None:
            gate.set()

    def _latency(self) -> float:
        if self.max_delay is None:
            return self.delay
        with self._lock:
            return self._random.uniform(self.delay, self.max_delay)

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(JsonHandler):
            def do_POST(self) -> None:
                with service.serving():
                    self._call()

            def _call(self) -> None:
                raw = self.read_body()
                if raw is None:  # the client died mid-request: nothing was executed
                    return
                if self.path.startswith("/actions/"):
                    name = self.path.rsplit("/", 1)[-1]
                    with service._lock:
                        service.actions[name] = service.actions.get(name, 0) + 1
                    return self._reply(200, {"name": name})
                body = json.loads(raw or b"{}")
                call_id = body.get("call_id")
                if not call_id:
                    return self._reply(400, {"error": "body needs a call_id"})
                name = self.path.rsplit("/", 1)[-1]
                arrived = time.monotonic()
                with service._lock:
                    service.arrivals.append(
                        Arrival(call_id, name, body.get("attempt"), time.time())
                    )
                    tried = service._tries[call_id] = service._tries.get(call_id, 0) + 1
                    times, status = service._failing.get(name, (0, 0))
                    if times is None or tried <= times:
                        return self._reply(status, {"error": f"{name} is failing ({status})"})
                    gate = service._gates.get(name)
                if gate is not None:
                    gate.wait()
                delay = service._latency()
                if delay:
                    time.sleep(delay)
                response = {"name": name, "value": body.get("value")}
                with service._lock:
                    service.counts[call_id] = service.counts.get(call_id, 0) + 1
                    service.responses[call_id] = response
                    service._spans.append((arrived, time.monotonic()))
                    n = service.counts[call_id]
                self._reply(200, {**response, "n": n})

            def do_GET(self) -> None:
                with service._lock:
                    if self.path == "/counts":
                        return self._reply(200, dict(service.counts))
                    call_id = self.path.rsplit("/", 1)[-1]
                    if call_id in service.responses:
                        return self._reply(200, service.responses[call_id])
                self._reply(404, {"error": "unknown call"})

        return Handler
