"""The remote agent jobs' errors (part of the tree drawn in :mod:`actionjournal.durable.errors`).

A journaled ``RemoteJobFailed`` names its type ``actionjournal.reconcilers.remote_job.
RemoteJobFailed`` when it was journaled before this module existed; that module imports the
names, so it still rebuilds.
"""

from __future__ import annotations

from typing import Any

from actionjournal.durable.errors import ActionJournalError


class RemoteJobFailed(ActionJournalError):
    """The remote run ended ``failed``; ``error`` is what the service said.

    The run is over and is not posted again. Its ``args`` are exactly
    ``(agent, thread, error)`` so the journal can rebuild it on replay.
    """

    def __init__(self, agent: str, thread: str, error: Any) -> None:
        super().__init__(agent, thread, error)
        self.agent = agent
        self.thread = thread
        self.error = error

    def __str__(self) -> str:
        return (
            f"remote agent {self.agent!r} failed on thread {self.thread}: {self.error}. "
            "The run is over and will not be posted again; handle the failure in the action"
        )


class RemoteAgentError(ActionJournalError):
    """The service could not be reached or answered something unexpected.

    Says nothing about the run itself, which may still be going, so it is never
    journaled as the call's outcome: after a restart the call is reconciled by
    asking the service again.
    """
