"""Reconcilers settle calls whose outcome is unknown after a failure.

A reconciler is a callable (sync or ``async``) taking a
:class:`~actionjournal.durable.outcomes.CallInfo` and answering one of
``Recovered(value)``, ``Failed(error)``, ``NotStarted()`` or
``StillRunning(retry_after)``. See docs/reconcilers.md.
"""

from actionjournal.durable.outcomes import (
    CallInfo,
    Failed,
    NotStarted,
    Outcome,
    Recovered,
    StillRunning,
)
from actionjournal.reconcilers.registry import reconciled_by, reconciler
from actionjournal.reconcilers.remote_job import RemoteAgentError, RemoteAgentJob, RemoteJobFailed

__all__ = [
    "CallInfo",
    "Failed",
    "NotStarted",
    "Outcome",
    "Recovered",
    "RemoteAgentError",
    "RemoteAgentJob",
    "RemoteJobFailed",
    "StillRunning",
    "reconciled_by",
    "reconciler",
]
