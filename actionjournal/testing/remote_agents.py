"""A real local remote-agent service: runs are background jobs, so a retry can double them.

It implements the protocol of remote agent services (see REFERENCES, "Remote
agents as durable async jobs") over real HTTP, so tests of
:class:`~actionjournal.reconcilers.remote_job.RemoteAgentJob` count turns at
the called system instead of trusting our own bookkeeping:

    POST /api/agents/<agent>/threads/<thread>/messages   {"message": ...}
        -> {"thread_id": <thread>, "status": "started"}  a new turn starts in the background
        -> {"thread_id": <thread>, "status": "running"}  while a run is active: nothing starts
    GET  /api/agents/<agent>/threads/<thread>/stream     Server-Sent Events, re-attachable:
        ``event: progress`` ..., then ``event: completed`` (data {"result": ...})
        or ``event: failed`` (data {"error": ...}); 404 when the thread has no run
    GET  /api/agents/<agent>/threads/<thread>
        -> {"thread_id", "status": running|completed|failed|not_started, "result", "error"}

Services differ in details, and this one can speak the common variants, so clients
are tested against each over real HTTP: the body field that holds the message (or
the message as the whole body), the names of the two end events (e.g. ``done`` and
``error``), and 404 instead of ``not_started`` for a thread without a run.

Re-posting after a run ended starts a *new* turn, as the real services do: that
is the behaviour a careless retry triggers, and ``turns[thread] > 1`` shows it.
Results are deterministic (``"<agent> answered <message>"``, with ``(turn n)``
from the second turn on); a message containing ``"fail"`` ends ``failed``.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any
from urllib.parse import unquote

from actionjournal.testing.http import JsonHandler, LocalService

_PATH = re.compile(r"^/api/agents/([^/]+)/threads/([^/]+)(/messages|/stream)?/?$")


@dataclass
class _Run:
    """One turn of a thread."""

    agent: str
    thread: str
    message: Any
    turn: int
    status: str = "running"
    result: Any = None
    error: str | None = None
    progress: list[dict[str, Any]] = field(default_factory=list)


class RemoteAgentService(LocalService):
    """The service, on 127.0.0.1 and a free port; ``with RemoteAgentService() as s: s.url``.

    ``run_seconds``: how long a run takes; it sends ``progress_events`` progress events
    spread over that time. ``agents``: if given, other agent names answer 404.
    The protocol's variants: ``message_field`` is the body field holding the message
    (``None``: the whole JSON body is the message); ``completed_event`` and
    ``failed_event`` name the stream's end events; ``unknown_thread_404`` answers a
    status query for a thread without a run with HTTP 404 instead of ``not_started``.
    ``port``: 0 for a free one; the port of a stopped service starts it "restarted",
    with no memory of its runs. :meth:`hold` keeps every run ``running`` at its end
    until :meth:`release`, so a test decides when runs end, not the machine's load.
    Fault injection, to test clients' retries: the next ``drop_post_replies`` POSTs start
    their run but close the connection without a reply; the next ``cut_streams`` streams
    are cut after their first progress event.
    """

    def __init__(
        self,
        run_seconds: float = 0.3,
        progress_events: int = 3,
        agents: set[str] | None = None,
        keepalive: float = 0.5,
        *,
        message_field: str | None = "message",
        completed_event: str = "completed",
        failed_event: str = "failed",
        unknown_thread_404: bool = False,
        port: int = 0,
    ) -> None:
        self.run_seconds = run_seconds
        self.progress_events = progress_events
        self.agents = agents
        self.keepalive = keepalive
        self.message_field = message_field
        self.completed_event = completed_event
        self.failed_event = failed_event
        self.unknown_thread_404 = unknown_thread_404
        self.drop_post_replies = 0
        self.cut_streams = 0
        self.turns: dict[str, int] = {}
        """Runs started per thread: more than 1 means a finished thread was posted again."""
        self.posts: dict[str, int] = {}
        """POST requests received per thread (a POST while running starts nothing)."""
        self.probes: list[tuple[str, str]] = []
        """(thread, status answered) for every status GET, in order ("404" when it was that)."""
        self.runs: dict[tuple[str, str], _Run] = {}
        self._held = False
        self._cond = threading.Condition()
        self._stopping = threading.Event()
        self._serve(self._handler(), port)

    def stop(self) -> None:
        self._stopping.set()
        with self._cond:
            self._cond.notify_all()
        super().stop()

    def hold(self) -> None:
        """From now on, runs that reach their end stay ``running`` until :meth:`release`."""
        with self._cond:
            self._held = True

    def release(self) -> None:
        """Let held runs end (and runs from now on end on their own)."""
        with self._cond:
            self._held = False
            self._cond.notify_all()

    def status(self, agent: str, thread: str) -> dict[str, Any]:
        """What ``GET .../threads/<thread>`` answers (without recording a probe)."""
        with self._cond:
            return self._status(agent, thread)

    def wait_finished(self, agent: str, thread: str, timeout: float = 30.0) -> dict[str, Any]:
        """Block until the thread's current run ended; its status."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._status(agent, thread)["status"] == "running":
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"thread {thread} of {agent} still running after {timeout}s")
                self._cond.wait(left)
            return self._status(agent, thread)

    # -- the service's behaviour --------------------------------------------------------

    def _status(self, agent: str, thread: str) -> dict[str, Any]:
        run = self.runs.get((agent, thread))
        if run is None:
            return {"thread_id": thread, "status": "not_started", "result": None, "error": None}
        return {"thread_id": thread, "status": run.status, "result": run.result, "error": run.error}

    def _post(self, agent: str, thread: str, message: Any) -> dict[str, Any]:
        with self._cond:
            self.posts[thread] = self.posts.get(thread, 0) + 1
            current = self.runs.get((agent, thread))
            if current is not None and current.status == "running":
                return {"thread_id": thread, "status": "running"}
            # Not started, or ended: a new turn. Real services do this, and it is the hazard.
            self.turns[thread] = self.turns.get(thread, 0) + 1
            run = _Run(agent, thread, message, self.turns[thread])
            self.runs[(agent, thread)] = run
        threading.Thread(target=self._work, args=(run,), daemon=True).start()
        return {"thread_id": thread, "status": "started"}

    def _work(self, run: _Run) -> None:
        step = self.run_seconds / (self.progress_events + 1)
        for i in range(1, self.progress_events + 1):
            if self._stopping.wait(step):
                return
            with self._cond:
                run.progress.append({"step": i, "of": self.progress_events})
                self._cond.notify_all()
        if self._stopping.wait(step):
            return
        with self._cond:
            while self._held and not self._stopping.is_set():
                self._cond.wait(0.1)
            if self._stopping.is_set():
                return
            if "fail" in str(run.message):
                run.status = "failed"
                run.error = f"{run.agent} could not answer {run.message!r}"
            else:
                run.status = "completed"
                suffix = f" (turn {run.turn})" if run.turn > 1 else ""
                run.result = f"{run.agent} answered {run.message}{suffix}"
            self._cond.notify_all()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        service = self

        class Handler(JsonHandler):
            def _route(self) -> tuple[str, str, str] | None:
                match = _PATH.match(self.path)
                if match is None:
                    self._reply(404, {"error": f"no route {self.path}"})
                    return None
                agent, thread = unquote(match[1]), unquote(match[2])
                if service.agents is not None and agent not in service.agents:
                    self._reply(404, {"error": f"no agent named {agent!r}"})
                    return None
                return agent, thread, match[3] or ""

            def do_POST(self) -> None:
                with service.serving():
                    self._messages()

            def _messages(self) -> None:
                raw = self.read_body()
                if raw is None:  # the client died mid-request: nothing was posted
                    return
                route = self._route()
                if route is None:
                    return
                agent, thread, tail = route
                if tail != "/messages":
                    return self._reply(405, {"error": "POST only to .../messages"})
                field = service.message_field
                try:
                    body = json.loads(raw)
                    message = body if field is None else body[field]
                except (ValueError, KeyError, TypeError):
                    shape = "a JSON message" if field is None else f'{{"{field}": ...}}'
                    return self._reply(400, {"error": f"body must be {shape}"})
                reply = service._post(agent, thread, message)
                with service._cond:
                    drop = service.drop_post_replies > 0
                    service.drop_post_replies -= drop
                if not drop:  # dropped: the run started, the client never hears of it
                    self._reply(200, reply)

            def do_GET(self) -> None:
                route = self._route()
                if route is None:
                    return
                agent, thread, tail = route
                if tail == "/stream":
                    return self._stream(agent, thread)
                if tail:
                    return self._reply(405, {"error": "GET .../messages is not supported"})
                with service._cond:
                    status = service._status(agent, thread)
                    unknown = status["status"] == "not_started" and service.unknown_thread_404
                    service.probes.append((thread, "404" if unknown else status["status"]))
                if unknown:
                    return self._reply(404, {"error": f"no thread {thread!r}"})
                self._reply(200, status)

            def _stream(self, agent: str, thread: str) -> None:
                with service._cond:
                    run = service.runs.get((agent, thread))
                    cut = run is not None and service.cut_streams > 0
                    service.cut_streams -= cut
                if run is None:
                    return self._reply(404, {"thread_id": thread, "status": "not_started"})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.end_headers()
                sent = 0
                try:
                    while not service._stopping.is_set():
                        with service._cond:
                            if len(run.progress) == sent and run.status == "running":
                                service._cond.wait(service.keepalive)
                            new = run.progress[sent:]
                            status, result, error = run.status, run.result, run.error
                        for event in new:
                            self._event("progress", event)
                            sent += 1
                            if cut:
                                return  # the connection closes without a final event
                        if status == "completed":
                            return self._event(service.completed_event, {"result": result})
                        if status == "failed":
                            return self._event(service.failed_event, {"error": error})
                        if not new:
                            self.wfile.write(b": keepalive\n\n")
                            self.wfile.flush()
                except OSError:
                    return  # the client went away (killed, or it stopped listening)

            def _event(self, name: str, data: Any) -> None:
                self.wfile.write(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
                self.wfile.flush()

        return Handler
