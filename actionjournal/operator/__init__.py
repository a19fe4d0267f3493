"""The agent model, the keyed run loop, and its bindings (local runner, PyFlink).

Like every package here, it imports each name on first use (why: actionjournal._lazy);
so the PyFlink binding (:class:`AgentsExecutionEnvironment` and its savepoint helpers) needs
PyFlink only when used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes

if TYPE_CHECKING:
    from actionjournal.durable.agent import Agent, action
    from actionjournal.durable.events import Event, InputEvent, OutputEvent
    from actionjournal.operator.config import AgentsConfig
    from actionjournal.operator.context import RunnerContext
    from actionjournal.operator.flink import (
        AgentsExecutionEnvironment,
        savepoint,
        set_log_dir,
        set_python_worker_mode,
        stop_with_savepoint,
    )
    from actionjournal.operator.local import LocalRunner, Snapshot
    from actionjournal.operator.memory import Memory

__all__ = [
    "Agent",
    "AgentsConfig",
    "AgentsExecutionEnvironment",
    "Event",
    "InputEvent",
    "LocalRunner",
    "Memory",
    "OutputEvent",
    "RunnerContext",
    "Snapshot",
    "action",
    "savepoint",
    "set_log_dir",
    "set_python_worker_mode",
    "stop_with_savepoint",
]

_LAZY = {
    "actionjournal.durable.agent": ("Agent", "action"),
    "actionjournal.durable.events": ("Event", "InputEvent", "OutputEvent"),
    "actionjournal.operator.config": ("AgentsConfig",),
    "actionjournal.operator.context": ("RunnerContext",),
    "actionjournal.operator.flink": (
        "AgentsExecutionEnvironment",
        "savepoint",
        "set_log_dir",
        "set_python_worker_mode",
        "stop_with_savepoint",
    ),
    "actionjournal.operator.local": ("LocalRunner", "Snapshot"),
    "actionjournal.operator.memory": ("Memory",),
}
__getattr__ = lazy_attributes(__name__, _LAZY)
