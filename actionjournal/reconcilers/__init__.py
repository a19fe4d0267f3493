"""Reconcilers settle calls whose outcome is unknown after a failure.

A reconciler is a callable (sync or ``async``) taking a
:class:`~actionjournal.durable.outcomes.CallInfo` and answering one of
``Recovered(value)``, ``Failed(error)``, ``NotStarted()`` or
``StillRunning(retry_after)``. See docs/reconcilers.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.durable.outcomes import (
        CallInfo,
        Failed,
        NotStarted,
        Outcome,
        Recovered,
        StillRunning,
    )
    from actionjournal.reconcilers.registry import reconciled_by, reconciler
    from actionjournal.reconcilers.remote_job import (
        RemoteAgentError,
        RemoteAgentJob,
        RemoteJobFailed,
    )

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

_LAZY = {
    "actionjournal.durable.outcomes": (
        "CallInfo",
        "Failed",
        "NotStarted",
        "Outcome",
        "Recovered",
        "StillRunning",
    ),
    "actionjournal.reconcilers.registry": ("reconciled_by", "reconciler"),
    "actionjournal.reconcilers.remote_job": (
        "RemoteAgentError",
        "RemoteAgentJob",
        "RemoteJobFailed",
    ),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
