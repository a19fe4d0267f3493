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
wakeups`). Both are compiled on demand (:mod:`actionjournal.operator.javac`).

Without a JDK, the binding falls back to one element per bundle (a bundle of one finishes
inside processElement, so its timers are registered before the next barrier is read):
just as correct, a round trip to the Python worker per element and timer slower.
"""

from __future__ import annotations

from pathlib import Path

from pyflink.datastream import DataStream, StreamExecutionEnvironment
from pyflink.java_gateway import get_gateway

from actionjournal.operator import javac

SOURCE = Path(__file__).with_name("DrainingKeyedProcessOperator.java")
WAKEUPS_SOURCE = SOURCE.with_name("RunWakeups.java")
PYFLINK_OPERATOR = (
    "org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator"
)


def operator_jar() -> Path:
    """The compiled operator for the installed PyFlink, built on first use."""
    return javac.compiled_jar(SOURCE, companions=[WAKEUPS_SOURCE])


def install(env: StreamExecutionEnvironment, stream: DataStream, jar: Path) -> None:
    """Make ``stream``'s keyed process operator the draining one and ship its jar.

    Only PyFlink's process-mode operator is replaced: in thread mode timers are registered
    synchronously and the operator is left as it is.
    """
    jvm = get_gateway().jvm
    factory = stream._j_data_stream.getTransformation().getOperatorFactory()
    pyflinks = factory.getOperator()
    if pyflinks.getClass().getName() != PYFLINK_OPERATOR:
        return
    javac.ship(env, jar)
    ours = jvm.io.actionjournal.flink.DrainingKeyedProcessOperator(
        pyflinks.getConfiguration(),
        pyflinks.getPythonFunctionInfo(),
        pyflinks.getInputTypeInfo(),
        pyflinks.getProducedType(),
    )
    simple = jvm.org.apache.flink.streaming.api.operators.SimpleOperatorFactory
    field = simple._java_lang_class.getDeclaredField("operator")
    field.setAccessible(True)
    field.set(factory, ours)
