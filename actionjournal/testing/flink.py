"""Helpers for running agent jobs on a local PyFlink MiniCluster in tests and demos."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import DataStream, StreamExecutionEnvironment
from pyflink.datastream.connectors import Source
from pyflink.java_gateway import get_gateway

from actionjournal.dev.flink import STATE_BACKENDS
from actionjournal.flink.function import set_python_worker_mode


def local_env(
    checkpoint_dir: str | Path | None = None,
    *,
    checkpoint_interval_ms: int = 500,
    restarts: int = 3,
    parallelism: int = 1,
    restore_from: str | None = None,
    state_backend: Literal["hashmap", "rocksdb"] = "hashmap",
) -> StreamExecutionEnvironment:
    """A MiniCluster environment with checkpoints to a local dir and fixed-delay restarts.

    ``state_backend``: Flink's heap backend (``hashmap``), or ``rocksdb`` with incremental
    checkpoints, as docs/deploying.md recommends for production.

    Python functions run in worker processes started by Flink, as on a cluster, not
    inside this process (PyFlink's default for local runs): a crash test can then kill
    a worker without killing the test.
    """
    set_python_worker_mode("process")
    config = Configuration()
    config.set_string("python.executable", sys.executable)
    config.set_string("restart-strategy.type", "fixed-delay")
    config.set_string("restart-strategy.fixed-delay.attempts", str(restarts))
    config.set_string("restart-strategy.fixed-delay.delay", "500ms")
    if checkpoint_dir is not None:
        config.set_string("execution.checkpointing.interval", f"{checkpoint_interval_ms}ms")
        config.set_string("execution.checkpointing.dir", Path(checkpoint_dir).resolve().as_uri())
    if restore_from is not None:
        config.set_string("execution.state-recovery.path", restore_from)
    for key, value in STATE_BACKENDS[state_backend].items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_parallelism(parallelism)
    return env


def paced_source(
    env: StreamExecutionEnvironment, elements: Sequence[str], per_second: float, name: str = "input"
) -> DataStream:
    """A bounded, rate-limited source that rewinds to its checkpointed position on restore.

    ``from_collection`` replays from the start after a failure; this one does not.
    """
    jvm = get_gateway().jvm
    values = jvm.java.util.ArrayList()
    for element in elements:
        values.add(str(element))
    type_info = Types.STRING().get_java_type_info()
    generator = jvm.org.apache.flink.connector.datagen.functions.IndexLookupGeneratorFunction(
        type_info, values
    )
    rate = jvm.org.apache.flink.api.connector.source.util.ratelimit.RateLimiterStrategy.perSecond(
        float(per_second)
    )
    source = jvm.org.apache.flink.connector.datagen.source.DataGeneratorSource(
        generator, len(elements), rate, type_info
    )
    return env.from_source(
        Source(source), WatermarkStrategy.no_watermarks(), name, type_info=Types.STRING()
    ).uid(name)


class JsonLines:
    """A file sink for a job's outputs, one JSON line each (``stream.map(JsonLines(path))``).

    At least once: after a restore, runs that finished after the checkpoint emit again,
    so deduplicate when reading. ``execute_and_collect`` is avoided on purpose: when
    its iterator ends early, closing it cancels a job that is still working.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)

    def __call__(self, value: object) -> object:
        with open(self.path, "a") as f:
            f.write(json.dumps(value) + "\n")
        return value

    def read(self) -> list:
        try:
            with open(self.path) as f:
                return [json.loads(line) for line in f]
        except FileNotFoundError:
            return []
