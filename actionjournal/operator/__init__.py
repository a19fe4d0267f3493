"""The keyed run loop: per key the next sequence number, pending inputs, memory and the
recovery marker; a run through the agent's actions; what an action sees; dead letters; and
the local runner (:class:`LocalRunner`). The PyFlink binding drives the same loop from
:mod:`actionjournal.flink`.

Like every package here, it imports each name on first use (why: actionjournal._lazy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.operator.config import (
        RunFailurePolicy as RunFailurePolicy,
    )
    from actionjournal.operator.context import (
        RunnerContext as RunnerContext,
    )
    from actionjournal.operator.dead_letters import (
        DeadLetter as DeadLetter,
    )
    from actionjournal.operator.local import (
        LocalRunner as LocalRunner,
    )
    from actionjournal.operator.local import (
        Snapshot as Snapshot,
    )
    from actionjournal.operator.memory import (
        Memory as Memory,
    )

_LAZY = {
    "actionjournal.operator.config": ("RunFailurePolicy",),
    "actionjournal.operator.context": ("RunnerContext",),
    "actionjournal.operator.dead_letters": ("DeadLetter",),
    "actionjournal.operator.local": ("LocalRunner", "Snapshot"),
    "actionjournal.operator.memory": ("Memory",),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
