"""Test helpers for users' own suites: counting services, crash points, the restore harness.

The pytest plugin (:mod:`actionjournal.testing.plugin`, registered as ``actionjournal``)
gives the journal fixtures. Each name is imported on first use
(why: actionjournal._lazy): the plugin loads this package in every pytest run, and
PyFlink may be missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.operator.clock import (
        ManualClock as ManualClock,
    )
    from actionjournal.testing.crash import (
        CrashingStore as CrashingStore,
    )
    from actionjournal.testing.crash import (
        CrashOnce as CrashOnce,
    )
    from actionjournal.testing.crash import (
        kill_now as kill_now,
    )
    from actionjournal.testing.flink import (
        JsonLines as JsonLines,
    )
    from actionjournal.testing.flink import (
        local_env as local_env,
    )
    from actionjournal.testing.flink import (
        paced_source as paced_source,
    )
    from actionjournal.testing.harness import (
        CrashNotReachedError as CrashNotReachedError,
    )
    from actionjournal.testing.harness import (
        HarnessError as HarnessError,
    )
    from actionjournal.testing.harness import (
        RestoreMode as RestoreMode,
    )
    from actionjournal.testing.harness import (
        RestoreScenario as RestoreScenario,
    )
    from actionjournal.testing.harness import (
        call_service as call_service,
    )
    from actionjournal.testing.harness import (
        service_reconciler as service_reconciler,
    )
    from actionjournal.testing.model_server import (
        ModelServer as ModelServer,
    )
    from actionjournal.testing.remote_agents import (
        RemoteAgentService as RemoteAgentService,
    )
    from actionjournal.testing.service import (
        CountingService as CountingService,
    )

_LAZY = {
    "actionjournal.operator.clock": ("ManualClock",),
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
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
