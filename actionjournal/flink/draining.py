"""The agent's Flink operator: PyFlink's keyed process operator, made to checkpoint timers.

PyFlink 2.3 in process mode hands each timer registered from Python to the task as a
mailbox action queued while a bundle finishes. A checkpoint barrier finishes the open
bundle and the snapshot follows before those actions run, so the checkpoint holds the
keyed state written in that bundle without its timers: after a restore from it, a key
whose new pending input was in that bundle is never resumed (unless it gets more input).
``DrainingKeyedProcessOperator.java`` (next to this file) registers those timers right
after the flush, and hands timers to Python without their timestamp so that outputs do
not carry a timer's time; with ``RunWakeups.java`` it also takes the keys of finished runs
from the Python function and fires their timers at once (:mod:`actionjournal.operator.
wakeups`). Both are compiled on demand (:mod:`actionjournal.flink.javac`).

Without a JDK, the binding falls back to one element per bundle (a bundle of one finishes
inside processElement, so its timers are registered before the next barrier is read):
just as correct, a round trip to the Python worker per element and timer slower.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pyflink.datastream import DataStream, KeyedStream, StreamExecutionEnvironment
from pyflink.java_gateway import get_gateway

from actionjournal.flink import javac

SOURCE = Path(__file__).with_name("DrainingKeyedProcessOperator.java")
COMPANIONS = [SOURCE.with_name(name) for name in ("RunWakeups.java", "KeyByProcessOperator.java")]
PYFLINK = "org.apache.flink.streaming.api.operators.python.process."
KEY_BY_NAME = "_stream_key_by_map_operator"  # PythonConfigUtil.STREAM_KEY_BY_MAP_OPERATOR_NAME


def operator_jar() -> Path:
    """The compiled operators for the installed PyFlink, built on first use."""
    return javac.compiled_jar(SOURCE, companions=COMPANIONS)


def install(
    env: StreamExecutionEnvironment, keyed: KeyedStream, stream: DataStream, jar: Path
) -> None:
    """Make ``stream``'s keyed process operator the draining one, the Python key selector's
    operator before it (if any) the one that passes on lone inputs at once, and ship the jar.

    Only PyFlink's process-mode operators are replaced: in thread mode timers are registered
    synchronously and the operators are left as they are.
    """
    agent = stream._j_data_stream.getTransformation()
    operator = _pyflinks(agent, "ExternalPythonKeyedProcessOperator")
    if operator is None:
        return
    javac.ship(env, jar)
    _replace(agent, operator, "DrainingKeyedProcessOperator")
    # DataStream.key_by with a Python key selector: a Python operator computes each element's
    # key, then the partitioning. Its records go to the agent at once, not every 100 ms
    # (execution.buffer-timeout's default): a lone message should not wait.
    key_by = keyed._j_data_stream.getTransformation().getInputs().get(0)
    if key_by.getName() != KEY_BY_NAME:
        return
    operator = _pyflinks(key_by, "ExternalPythonProcessOperator")
    if operator is not None:
        _replace(key_by, operator, "KeyByProcessOperator")
        key_by.setBufferTimeout(0)


def _pyflinks(transformation: Any, name: str) -> Any:
    """The operator of a transformation of a PyFlink Python function if it is PyFlink's
    ``name`` (process mode), else None."""
    operator = transformation.getOperatorFactory().getOperator()
    return operator if operator.getClass().getName() == PYFLINK + name else None


def _replace(transformation: Any, operator: Any, ours: str) -> None:
    """Swap PyFlink's ``operator`` of the transformation for ours: same function, same types."""
    jvm = get_gateway().jvm
    replacement = getattr(jvm.io.actionjournal.flink, ours)(
        operator.getConfiguration(),
        operator.getPythonFunctionInfo(),
        operator.getInputTypeInfo(),
        operator.getProducedType(),
    )
    simple = jvm.org.apache.flink.streaming.api.operators.SimpleOperatorFactory
    field = simple._java_lang_class.getDeclaredField("operator")
    field.setAccessible(True)
    field.set(transformation.getOperatorFactory(), replacement)
