"""A remote agent run as one durable call that recovers by asking the service, never by re-posting.

A remote agent service runs a message as a background job on a thread the
client names: ``POST .../threads/<thread>/messages`` starts it, ``GET
.../stream`` follows it (Server-Sent Events), ``GET .../threads/<thread>``
reports ``running | completed | failed | not_started``. Posting to a thread
whose run has ended starts a *new turn*, so re-running the call after a crash
would ask the agent twice and corrupt the thread. :class:`RemoteAgentJob`
therefore names the thread after the durable call's stable id and, when the
process died during the call, probes that thread instead of posting again:

========================  =====================================================
status on recovery        answer
========================  =====================================================
``running``               re-attach to the stream, ``Recovered(result)`` at the end
``completed``             ``Recovered(result)``
``failed``                ``Failed(RemoteJobFailed(...))``
``not_started``           ``NotStarted()``: the engine submits it now
========================  =====================================================

Services differ in the details, so these are options: the body field holding the
message, the names of the stream's two end events, and whether a 404 from the status
query means ``not_started`` (a common REST shape for a thread without a run).
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from actionjournal.durable.context import CallContext
from actionjournal.durable.effects import current_call
from actionjournal.durable.outcomes import CallInfo, Failed, NotStarted, Outcome, Recovered
from actionjournal.durable.retry import RetryPolicy
from actionjournal.reconcilers.errors import RemoteAgentError, RemoteJobFailed

if TYPE_CHECKING:
    import httpx

log = logging.getLogger(__name__)

EventHook = Callable[[str, str, Any], None]
"""``on_event(thread, event, data)``: every SSE event of a run, e.g. to forward progress."""

_STATUSES = ("running", "completed", "failed", "not_started")


class RemoteAgentJob:
    """Run ``message`` on remote agent ``agent`` at ``base_url`` as one durable call.

    ``timeout``: seconds per HTTP request; on the stream, the longest silence
    before re-attaching. ``retries``: extra attempts on connection errors and 5xx
    (GETs are idempotent; a POST is repeated only after the status says nothing
    was started). ``poll_interval``: seconds between attempts. ``on_event`` sees
    every event of the stream, also when re-attached during recovery.

    The service's shape: the POST body is ``{message_field: message}``, or the
    message itself when ``message_field`` is ``None``; the stream ends with the
    events ``completed_event`` and ``failed_event``; a 404 from the status query
    means the thread has no run when ``not_found_is_not_started`` (the POST that
    follows then finds out whether the agent exists at all).

    ``retry`` is the durable call's :class:`~actionjournal.RetryPolicy` (default: the job's
    ``journal.retry``): it retries the whole call, with backoff, after ``retries`` quick
    attempts of one request ran out.
    """

    def __init__(
        self,
        base_url: str,
        agent: str,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        poll_interval: float = 0.5,
        thread_prefix: str = "aj-",
        on_event: EventHook | None = None,
        headers: dict[str, str] | None = None,
        message_field: str | None = "message",
        completed_event: str = "completed",
        failed_event: str = "failed",
        not_found_is_not_started: bool = True,
        retry: RetryPolicy | None = None,
    ) -> None:
        if not completed_event or not failed_event or completed_event == failed_event:
            raise ValueError(
                f"RemoteAgentJob needs two different end event names, got completed_event="
                f"{completed_event!r} and failed_event={failed_event!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.agent = agent
        self.timeout = timeout
        self.retries = retries
        self.poll_interval = poll_interval
        self.thread_prefix = thread_prefix
        self.on_event = on_event
        self.headers = headers or {}
        self.message_field = message_field
        self.completed_event = completed_event
        self.failed_event = failed_event
        self.not_found_is_not_started = not_found_is_not_started
        self.retry = retry

    def thread_for(self, call_id: str) -> str:
        """The thread of a call: its stable call id, so a restarted process finds the same run."""
        return f"{self.thread_prefix}{call_id}"

    def run(
        self, ctx: CallContext, message: Any, *, durable_id: str | None = None
    ) -> Coroutine[Any, Any, Any]:
        """``await job.run(ctx, message)``: the run's result; raises :class:`RemoteJobFailed`.

        Not ``async def`` on purpose: the durable call's position is taken now, when
        ``run`` is called, so ``asyncio.gather`` of several jobs replays correctly.
        The agent name is an argument of the call, so changing it is a divergence.
        """
        return ctx.durable_execute_async(
            self._submit_and_wait,
            self.agent,
            message,
            durable_id=durable_id,
            reconciler=self.reconcile,
            # A failure to reach the service is no outcome of the run: not journaled, so a
            # restart asks the service (a failed run is journaled from that answer).
            record_failures=False,
            retry=self.retry,
        )

    def run_sync(self, ctx: CallContext, message: Any, *, durable_id: str | None = None) -> Any:
        """:meth:`run` for ``def`` actions (they run in a worker thread, without a loop).

        A separate function, so switching an action between ``run`` and ``run_sync``
        is a divergence for calls journaled before the switch.
        """
        return ctx.durable_execute(
            self._submit_and_wait_sync,
            self.agent,
            message,
            durable_id=durable_id,
            reconciler=self.reconcile,
            record_failures=False,
            retry=self.retry,
        )

    async def reconcile(self, info: CallInfo) -> Outcome:
        """The call's outcome after a crash, from the service: probe first, never re-post."""
        agent = str(info.args[0]) if info.args else self.agent
        thread = self.thread_for(info.call_id)
        async with self._client() as client:
            state = await self._probe(client, agent, thread)
            if state["status"] == "not_started":
                return NotStarted()
            try:
                if state["status"] == "running":
                    return Recovered(await self._wait(client, agent, thread))
                return Recovered(self._settled(agent, thread, state))
            except RemoteJobFailed as exc:
                return Failed(exc)

    async def status(self, thread: str) -> dict[str, Any]:
        """The service's status of ``thread`` (``{"status": ..., "result": ...}``).

        A 404 taken as not started answers ``{"status": "not_started", "http_status": 404}``.
        """
        async with self._client() as client:
            return await self._probe(client, self.agent, thread)

    # -- the call -----------------------------------------------------------------------

    async def _submit_and_wait(self, agent: str, message: Any) -> Any:
        call = current_call()
        if call is None:
            raise RuntimeError(
                "RemoteAgentJob needs a durable call for its thread id: use "
                "`await job.run(ctx, message)` inside an action"
            )
        thread = self.thread_for(call.call_id)
        async with self._client() as client:
            # Probe even now: a POST sent just before a crash can land after the reconciler
            # said not_started. A thread that has a run is followed, never posted again.
            state = await self._probe(client, agent, thread)
            status = state["status"]
            if status == "not_started":
                if call.attempt > 0:
                    log.warning(
                        "remote agent %r has no run on thread %s for durable call %s (action %s, "
                        "key id %s, seq %s, attempt %s): its status query %s, yet the call was "
                        "started before. Either the process stopped before its POST arrived, or "
                        "the service lost the run (e.g. it restarted without keeping its "
                        "threads). Posting the message again now; if the service had run it, the "
                        "agent answers twice",
                        agent,
                        thread,
                        call.call_id,
                        call.action,
                        call.key_id,
                        call.seq,
                        call.attempt,
                        _answer(state),
                    )
                await self._submit(client, agent, thread, message)
            elif call.attempt == 0:
                # First attempt ever in this journal, yet the thread has a run: not ours.
                raise RemoteAgentError(
                    f"thread {thread} of remote agent {agent!r} already has a run ({status}) "
                    "that this call never submitted: another job with the same namespace and "
                    "operator uid, or a recreated journal, produced the same call id. Give this "
                    "job its own journal namespace or RemoteAgentJob(thread_prefix=...)"
                )
            return await self._wait(client, agent, thread)

    def _submit_and_wait_sync(self, agent: str, message: Any) -> Any:
        return asyncio.run(self._submit_and_wait(agent, message))  # the task copies current_call

    async def _submit(
        self, client: httpx.AsyncClient, agent: str, thread: str, message: Any
    ) -> None:
        import httpx

        url = self._url(agent, thread, "/messages")
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.poll_interval)
            try:
                reply = await client.post(url, json=self._body(message))
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = f"{type(exc).__name__}: {exc}"  # never reached the service
                continue
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
            else:
                if reply.is_success:
                    return
                if reply.status_code < 500:
                    raise self._refused("POST", url, reply, agent, thread)
                last = f"HTTP {reply.status_code}"
            # The POST may have arrived. Posting again after its run ended would start a
            # second turn, so only a thread the service does not know is posted again.
            if (await self._probe(client, agent, thread))["status"] != "not_started":
                return
        raise RemoteAgentError(
            f"POST {url} (remote agent {agent!r}, thread {thread}) failed "
            f"{self.retries + 1} times, last: {last}. Nothing was started; check that the "
            f"service at {self.base_url} is up. The action fails and is retried on restart"
        )

    async def _wait(self, client: httpx.AsyncClient, agent: str, thread: str) -> Any:
        """Follow the run to its end; re-attach when the stream breaks, as long as it runs."""
        import httpx

        drops = 0
        while True:
            silent, last = False, None  # a long run that sends nothing for `timeout` s is fine
            try:
                end, last = await self._follow(client, agent, thread)
                detail = "the stream ended without an end event"
            except httpx.ReadTimeout:
                end, detail, silent = None, f"no event for {self.timeout} s", True
            except httpx.TransportError as exc:
                end, detail = None, f"{type(exc).__name__}: {exc}"
            if end is not None:
                return self._settled(agent, thread, end)
            state = await self._probe(client, agent, thread)  # did it end meanwhile?
            if state["status"] == "not_started":
                raise RemoteAgentError(
                    f"remote agent {agent!r} has no run on thread {thread} although it was "
                    f"submitted ({detail}; its status query {_answer(state)}): the service lost "
                    f"it. Check the service at {self.base_url}; the action fails and is "
                    "reconciled on restart"
                )
            if state["status"] != "running":
                if last is not None:
                    log.warning(
                        "the stream of remote agent %r on thread %s ended after event %r, "
                        "without %r or %r; the status query says %s, which is taken as the "
                        "outcome. If the service names its end events otherwise, set "
                        "RemoteAgentJob(completed_event=..., failed_event=...)",
                        agent,
                        thread,
                        last,
                        self.completed_event,
                        self.failed_event,
                        state["status"],
                    )
                return self._settled(agent, thread, state)
            drops += 0 if silent else 1
            if drops > self.retries:
                raise RemoteAgentError(
                    f"lost the stream of remote agent {agent!r} on thread {thread} "
                    f"{drops} times, last: {detail}. The run is still going; the action fails "
                    "and re-attaches to it on restart (it is not posted again)"
                )
            await asyncio.sleep(self.poll_interval)

    async def _follow(
        self, client: httpx.AsyncClient, agent: str, thread: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Read the stream until an end event: a status-like dict (or None) and the last event."""
        url = self._url(agent, thread, "/stream")
        last = None
        async with client.stream("GET", url, headers={"Accept": "text/event-stream"}) as reply:
            if reply.status_code == 404 or reply.status_code >= 500:
                return None, None  # the status query that follows says what is going on
            if not reply.is_success:
                await reply.aread()
                raise self._refused("GET", url, reply, agent, thread)
            event, data = "message", []
            async for line in reply.aiter_lines():
                if line.startswith(":"):
                    continue  # a comment (keep-alive)
                if line:
                    name, _, value = line.partition(":")
                    value = value.removeprefix(" ")
                    if name == "event":
                        event = value
                    elif name == "data":
                        data.append(value)
                    continue
                if data:
                    payload = _json_or_text("\n".join(data))
                    last = event
                    if self.on_event is not None:
                        self.on_event(thread, event, payload)
                    body = payload if isinstance(payload, dict) else {}
                    if event == self.completed_event:
                        return {"status": "completed", "result": body.get("result", payload)}, last
                    if event == self.failed_event:
                        return {"status": "failed", "error": body.get("error", payload)}, last
                event, data = "message", []
        return None, last

    async def _probe(self, client: httpx.AsyncClient, agent: str, thread: str) -> dict[str, Any]:
        """``GET`` the thread's status, retried (it changes nothing)."""
        import httpx

        url = self._url(agent, thread)
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                await asyncio.sleep(self.poll_interval)
            try:
                reply = await client.get(url)
            except httpx.TransportError as exc:
                last = f"{type(exc).__name__}: {exc}"
                continue
            if reply.status_code >= 500:
                last = f"HTTP {reply.status_code}"
                continue
            if reply.status_code == 404 and self.not_found_is_not_started:
                return {"status": "not_started", "http_status": 404}
            if not reply.is_success:
                raise self._refused("GET", url, reply, agent, thread)
            body = _json_or_text(reply.text)
            if not isinstance(body, dict) or body.get("status") not in _STATUSES:
                raise RemoteAgentError(
                    f"GET {url} (remote agent {agent!r}, thread {thread}) answered {body!r}; "
                    f"expected a status in {_STATUSES}. Is {self.base_url} a remote agent service?"
                )
            return body
        raise RemoteAgentError(
            f"GET {url} (remote agent {agent!r}, thread {thread}) failed {self.retries + 1} "
            f"times, last: {last}. Check that the service at {self.base_url} is up; the run's "
            "outcome stays unknown and is asked again on restart, never re-posted"
        )

    # -- helpers ------------------------------------------------------------------------

    def _body(self, message: Any) -> Any:
        return message if self.message_field is None else {self.message_field: message}

    def _settled(self, agent: str, thread: str, state: dict[str, Any]) -> Any:
        if state["status"] == "failed":
            raise RemoteJobFailed(agent, thread, state.get("error"))
        return state.get("result")

    def _client(self) -> httpx.AsyncClient:
        import httpx  # imported on first use, so `import actionjournal` stays light

        return httpx.AsyncClient(timeout=self.timeout, headers=self.headers)

    def _url(self, agent: str, thread: str, tail: str = "") -> str:
        path = f"/api/agents/{quote(agent, safe='')}/threads/{quote(thread, safe='')}"
        return f"{self.base_url}{path}{tail}"

    def _refused(
        self, method: str, url: str, reply: httpx.Response, agent: str, thread: str
    ) -> RemoteAgentError:
        """A 4xx, said as what it means for this request, and what happens now."""
        code, posting = reply.status_code, method == "POST"
        if code == 404 and posting:
            why = f"There is no agent {agent!r} at this URL. Check the agent name and the base URL"
        elif code == 404:
            why = (
                f"The service has no run on thread {thread} (or no agent {agent!r}). If it "
                "answers 404 for threads without a run, set RemoteAgentJob("
                "not_found_is_not_started=True); otherwise check the agent name and the base URL"
            )
        elif code in (400, 415, 422) and posting:
            shape = (
                "the message itself"
                if self.message_field is None
                else (f'{{"{self.message_field}": ...}}')
            )
            why = (
                f"The service refused the body, posted as {shape}. If it expects the message "
                "in another field, set RemoteAgentJob(message_field=...), or None to post the "
                "message itself"
            )
        elif code in (401, 403):
            why = "The service refused the credentials: pass them with RemoteAgentJob(headers=...)"
        else:
            why = f"Check that {self.base_url} is a remote agent service with agent {agent!r}"
        then = (
            "Nothing was started; the action fails"
            if posting
            else "The run was not touched; the action fails and the service is asked again "
            "on restart"
        )
        return RemoteAgentError(
            f"{method} {url} (remote agent {agent!r}, thread {thread}) answered HTTP {code}: "
            f"{reply.text[:200]}. {why}. {then}"
        )


def _answer(state: dict[str, Any]) -> str:
    """What the status query said, for messages: a 404 taken as not started is named."""
    if "http_status" in state:
        return f"answered HTTP {state['http_status']} (taken as not_started)"
    return f"said {state['status']}"


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
