"""Test helpers for users' own suites: counting services, crash points, the restore harness.

The pytest plugin (:mod:`actionjournal.testing.plugin`, registered as ``actionjournal``)
gives the journal fixtures. The harness and the PyFlink helpers are imported on first
use: the plugin loads this package in every pytest run, and PyFlink may be missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal.durable.lazy import lazy_attributes
from actionjournal.testing.crash import CrashingStore, CrashOnce, kill_now
from actionjournal.testing.model_server import ModelServer
from actionjournal.testing.remote_agents import RemoteAgentService
from actionjournal.testing.service import CountingService

if TYPE_CHECKING:
    from actionjournal.testing.flink import JsonLines, local_env, paced_source
    from actionjournal.testing.harness import (
        CrashNotReachedError,
        HarnessError,
        RestoreMode,
        RestoreScenario,
        call_service,
        service_reconciler,
    )

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
    "CrashNotReachedError": "actionjournal.testing.harness",
    "HarnessError": "actionjournal.testing.harness",
    "RestoreMode": "actionjournal.testing.harness",
    "RestoreScenario": "actionjournal.testing.harness",
    "call_service": "actionjournal.testing.harness",
    "service_reconciler": "actionjournal.testing.harness",
    "JsonLines": "actionjournal.testing.flink",
    "local_env": "actionjournal.testing.flink",
    "paced_source": "actionjournal.testing.flink",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
