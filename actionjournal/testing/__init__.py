"""Test helpers for users' own suites: counting services, crash points, the restore harness.

The pytest plugin (:mod:`actionjournal.testing.plugin`, registered as ``actionjournal``)
gives the journal fixtures. Each name is imported on first use
(why: actionjournal._lazy): the plugin loads this package in every pytest run, and
PyFlink may be missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.testing.crash import CrashingStore, CrashOnce, kill_now
    from actionjournal.testing.flink import JsonLines, local_env, paced_source
    from actionjournal.testing.harness import (
        CrashNotReachedError,
        HarnessError,
        RestoreMode,
        RestoreScenario,
        call_service,
        service_reconciler,
    )
    from actionjournal.testing.model_server import ModelServer
    from actionjournal.testing.remote_agents import RemoteAgentService
    from actionjournal.testing.service import CountingService

__all__ = [
    "CountingService",
    "CrashNotReachedError",
    "CrashOnce",
    "CrashingStore",
    "HarnessError",
    "JsonLines",
    "ModelServer",
    "RemoteAgentService",
    "RestoreMode",
    "RestoreScenario",
    "call_service",
    "kill_now",
    "local_env",
    "paced_source",
    "service_reconciler",
]

_LAZY = {
    "actionjournal.testing.crash": ("CrashingStore", "CrashOnce", "kill_now"),
    "actionjournal.testing.flink": ("JsonLines", "local_env", "paced_source"),
    "actionjournal.testing.harness": (
        "CrashNotReachedError",
        "HarnessError",
        "RestoreMode",
        "RestoreScenario",
        "call_service",
        "service_reconciler",
    ),
    "actionjournal.testing.model_server": ("ModelServer",),
    "actionjournal.testing.remote_agents": ("RemoteAgentService",),
    "actionjournal.testing.service": ("CountingService",),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
