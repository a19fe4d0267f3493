"""``actionjournal cleanup plan`` / ``apply`` / ``run``: delete what no restorable state
needs, safely; by hand, or continuously beside a job (:class:`CleanupLoop`).

One job per module: ``state`` (the oldest restorable state: snapshot, checkpoint, time),
``plan`` (per partition, the first record that must stay), ``document`` (the plan file and
its digest), ``apply`` (re-check, journal the boundaries, delete), ``loop`` (rounds of
plan and apply), ``metrics`` (the loop's), ``cli`` (the commands' options and output).
The rule is in docs/operations.md and DESIGN "Cleanup".
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.tools.cleanup.apply import (
        apply_plan as apply_plan,
    )
    from actionjournal.tools.cleanup.apply import (
        check_plan as check_plan,
    )
    from actionjournal.tools.cleanup.document import (
        PLAN_VERSION as PLAN_VERSION,
    )
    from actionjournal.tools.cleanup.document import (
        CleanupPlan as CleanupPlan,
    )
    from actionjournal.tools.cleanup.document import (
        load as load,
    )
    from actionjournal.tools.cleanup.loop import (
        CleanupLoop as CleanupLoop,
    )
    from actionjournal.tools.cleanup.loop import (
        RoundAbandoned as RoundAbandoned,
    )
    from actionjournal.tools.cleanup.loop import (
        RoundResult as RoundResult,
    )
    from actionjournal.tools.cleanup.metrics import (
        CleanupMetrics as CleanupMetrics,
    )
    from actionjournal.tools.cleanup.plan import (
        make_plan as make_plan,
    )
    from actionjournal.tools.cleanup.state import (
        DEFAULT_MARGIN_S as DEFAULT_MARGIN_S,
    )
    from actionjournal.tools.cleanup.state import (
        FLINK_METADATA_MAGIC as FLINK_METADATA_MAGIC,
    )
    from actionjournal.tools.cleanup.state import (
        RestorableState as RestorableState,
    )
    from actionjournal.tools.cleanup.state import (
        WrongJobError as WrongJobError,
    )
    from actionjournal.tools.cleanup.state import (
        load_checkpoint as load_checkpoint,
    )
    from actionjournal.tools.cleanup.state import (
        load_snapshot as load_snapshot,
    )
    from actionjournal.tools.cleanup.state import (
        time_state as time_state,
    )

_LAZY = {
    "actionjournal.tools.cleanup.apply": ("apply_plan", "check_plan"),
    "actionjournal.tools.cleanup.document": ("PLAN_VERSION", "CleanupPlan", "load"),
    "actionjournal.tools.cleanup.loop": ("CleanupLoop", "RoundAbandoned", "RoundResult"),
    "actionjournal.tools.cleanup.metrics": ("CleanupMetrics",),
    "actionjournal.tools.cleanup.plan": ("make_plan",),
    "actionjournal.tools.cleanup.state": (
        "DEFAULT_MARGIN_S",
        "FLINK_METADATA_MAGIC",
        "RestorableState",
        "WrongJobError",
        "load_checkpoint",
        "load_snapshot",
        "time_state",
    ),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
