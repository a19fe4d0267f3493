"""The PyFlink binding: agents as keyed operators in PyFlink DataStream jobs.

``AgentsExecutionEnvironment`` attaches an agent to a keyed stream; ``AgentsConfig`` is the
job's journal, store and binding settings; ``kafka_source`` and ``kafka_sink`` read inputs
keyed by their record key and write outputs exactly once; the savepoint helpers drive a
running job. Needs the ``flink`` extra (PyFlink 2.3), imported on first use (why:
actionjournal._lazy).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from actionjournal._lazy import lazy_attributes, lazy_names

if TYPE_CHECKING:
    from actionjournal.flink.config import (
        AgentsConfig as AgentsConfig,
    )
    from actionjournal.flink.function import (
        AgentOutput as AgentOutput,
    )
    from actionjournal.flink.function import (
        AgentsExecutionEnvironment as AgentsExecutionEnvironment,
    )
    from actionjournal.flink.function import (
        savepoint as savepoint,
    )
    from actionjournal.flink.function import (
        set_log_dir as set_log_dir,
    )
    from actionjournal.flink.function import (
        set_python_worker_mode as set_python_worker_mode,
    )
    from actionjournal.flink.function import (
        stop_with_savepoint as stop_with_savepoint,
    )
    from actionjournal.flink.kafka_io import (
        KafkaMessage as KafkaMessage,
    )
    from actionjournal.flink.kafka_io import (
        MessageKey as MessageKey,
    )
    from actionjournal.flink.kafka_io import (
        kafka_sink as kafka_sink,
    )
    from actionjournal.flink.kafka_io import (
        kafka_source as kafka_source,
    )

_LAZY = {
    "actionjournal.flink.config": ("AgentsConfig",),
    "actionjournal.flink.function": (
        "AgentOutput",
        "AgentsExecutionEnvironment",
        "savepoint",
        "set_log_dir",
        "set_python_worker_mode",
        "stop_with_savepoint",
    ),
    "actionjournal.flink.kafka_io": ("KafkaMessage", "MessageKey", "kafka_sink", "kafka_source"),
}
__all__ = lazy_names(_LAZY)
__getattr__ = lazy_attributes(__name__, _LAZY)
