"""``actionjournal cleanup plan`` / ``apply``: delete what no restorable state needs, safely.

One job per module: ``state`` (the oldest restorable state: snapshot, checkpoint, time),
``plan`` (per partition, the first record that must stay), ``document`` (the plan file and
its digest), ``apply`` (re-check, journal the boundaries, delete), ``cli`` (options and
output). The rule is in docs/operations.md and DESIGN "Cleanup".
"""

from actionjournal.tools.cleanup.apply import apply_plan, check_plan
from actionjournal.tools.cleanup.document import PLAN_VERSION, CleanupPlan, load
from actionjournal.tools.cleanup.plan import make_plan
from actionjournal.tools.cleanup.state import (
    DEFAULT_MARGIN_S,
    FLINK_METADATA_MAGIC,
    RestorableState,
    load_checkpoint,
    load_snapshot,
    time_state,
)

__all__ = [
    "DEFAULT_MARGIN_S",
    "FLINK_METADATA_MAGIC",
    "PLAN_VERSION",
    "CleanupPlan",
    "RestorableState",
    "apply_plan",
    "check_plan",
    "load",
    "load_checkpoint",
    "load_snapshot",
    "make_plan",
    "time_state",
]
