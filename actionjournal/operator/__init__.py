"""The agent model, the keyed run loop, and its bindings (local runner, PyFlink).

The PyFlink binding (:class:`AgentsExecutionEnvironment` and its savepoint helpers) is
imported on first use: it needs PyFlink, the rest does not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal.durable.agent import Agent, action
from actionjournal.durable.events import Event, InputEvent, OutputEvent
from actionjournal.durable.lazy import lazy_attributes
from actionjournal.operator.config import AgentsConfig
from actionjournal.operator.context import RunnerContext
from actionjournal.operator.local import LocalRunner, Snapshot
from actionjournal.operator.memory import Memory

if TYPE_CHECKING:
    from actionjournal.operator.flink import (
        AgentsExecutionEnvironment,
        savepoint,
        set_log_dir,
        set_python_worker_mode,
        stop_with_savepoint,
    )

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

_FLINK = (
    "AgentsExecutionEnvironment",
    "savepoint",
    "set_log_dir",
    "set_python_worker_mode",
    "stop_with_savepoint",
)
# The PyFlink binding needs PyFlink.
__getattr__ = lazy_attributes(__name__, dict.fromkeys(_FLINK, "actionjournal.operator.flink"))
