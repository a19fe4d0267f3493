"""What agents under test call: a remote call the scenario's service counts, and its reconciler."""

from __future__ import annotations

import os
import threading
import uuid
from collections.abc import Callable
from typing import Any

import httpx

from actionjournal.durable.outcomes import CallInfo, NotStarted, Recovered

_client: httpx.Client | None = None
_client_pid = 0
_client_lock = threading.Lock()


def http() -> httpx.Client:
    """One client per process (making one per request costs more than the request)."""
    global _client, _client_pid
    with _client_lock:
        if _client is None or _client_pid != os.getpid():
            _client, _client_pid = httpx.Client(timeout=60), os.getpid()
        return _client


def call_service(url: str, name: str, value: Any = None) -> Any:
    """A remote call counted by the scenario's service; returns ``value`` back.

    Use it as the function of a durable call (``ctx.durable_execute(call_service,
    url, "charge", order)``): the service counts it under ``name`` and keeps its
    response under the call's stable ``call_id``, which :func:`service_reconciler`
    asks for. Called outside a durable call it is counted too, under a fresh id.
    """
    from actionjournal.durable.effects import current_call

    call = current_call()
    call_id = call.call_id if call is not None else f"plain:{uuid.uuid4().hex}"
    reply = http().post(f"{url}/calls/{name}", json={"call_id": call_id, "value": value})
    reply.raise_for_status()
    return reply.json()["value"]


def service_reconciler(url: str) -> Callable[[CallInfo], Recovered | NotStarted]:
    """A reconciler for :func:`call_service` calls: asks the service instead of calling again."""

    def reconcile(info: CallInfo) -> Recovered | NotStarted:
        reply = http().get(f"{url}/calls/{info.call_id}")
        if reply.status_code == 200:
            return Recovered(reply.json()["value"])
        return NotStarted()

    return reconcile
