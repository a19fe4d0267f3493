"""Reconcilers settle calls whose outcome is unknown after a failure.

A reconciler is a callable (sync or ``async``) taking a
:class:`~actionjournal.durable.outcomes.CallInfo` and answering one of
``Recovered(value)``, ``Failed(error)``, ``NotStarted()`` or
``StillRunning(retry_after)``. See docs/reconcilers.md.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.durable.outcomes import (
        CallInfo as CallInfo,
    )
    from actionjournal.durable.outcomes import (
        Failed as Failed,
    )
    from actionjournal.durable.outcomes import (
        NotStarted as NotStarted,
    )
    from actionjournal.durable.outcomes import (
        Outcome as Outcome,
    )
    from actionjournal.durable.outcomes import (
        Recovered as Recovered,
    )
    from actionjournal.durable.outcomes import (
        StillRunning as StillRunning,
    )
    from actionjournal.reconcilers.errors import (
        RemoteAgentError as RemoteAgentError,
    )
    from actionjournal.reconcilers.errors import (
        RemoteJobFailed as RemoteJobFailed,
    )
    from actionjournal.reconcilers.registry import (
        reconciled_by as reconciled_by,
    )
    from actionjournal.reconcilers.registry import (
        reconciler as reconciler,
    )
    from actionjournal.reconcilers.remote_job import (
        RemoteAgentJob as RemoteAgentJob,
    )

_LAZY = {
    "actionjournal.durable.outcomes": (
        "CallInfo",
        "Failed",
        "NotStarted",
        "Outcome",
        "Recovered",
        "StillRunning",
    ),
    "actionjournal.reconcilers.errors": ("RemoteAgentError", "RemoteJobFailed"),
    "actionjournal.reconcilers.registry": ("reconciled_by", "reconciler"),
    "actionjournal.reconcilers.remote_job": ("RemoteAgentJob",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
