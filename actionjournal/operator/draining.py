"""The agent's Flink operator: PyFlink's keyed process operator, made to checkpoint timers.

PyFlink 2.3 in process mode hands each timer registered from Python to the task as a
mailbox action queued while a bundle finishes. A checkpoint barrier finishes the open
bundle and the snapshot follows before those actions run, so the checkpoint holds the
keyed state written in that bundle without its timers: after a restore from it, a key
whose new pending input was in that bundle is never resumed (unless it gets more input).
``DrainingKeyedProcessOperator.java`` (next to this file) registers those timers right
after the flush, and hands timers to Python without their timestamp so that outputs do
not carry a timer's time. It is compiled once per PyFlink version with ``javac`` against
PyFlink's own jars into ``<cache>/flink`` (``$ACTIONJOURNAL_CACHE`` or
``~/.cache/actionjournal``) and shipped with the job (``pipeline.jars``).

Without a JDK, the binding falls back to one element per bundle (a bundle of one finishes
inside processElement, so its timers are registered before the next barrier is read):
just as correct, a round trip to the Python worker per element and timer slower.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from pathlib import Path

import pyflink
from pyflink.datastream import DataStream, StreamExecutionEnvironment
from pyflink.java_gateway import get_gateway
from pyflink.util.java_utils import add_jars_to_context_class_loader
from pyflink.version import __version__ as PYFLINK_VERSION

from actionjournal.dev.maven import cache_dir

SOURCE = Path(__file__).with_name("DrainingKeyedProcessOperator.java")
PYFLINK_OPERATOR = (
    "org.apache.flink.streaming.api.operators.python.process.ExternalPythonKeyedProcessOperator"
)


class DrainingUnavailable(Exception):
    """The operator could not be built here; the message says why."""


def operator_jar() -> Path:
    """The compiled operator for the installed PyFlink, built on first use."""
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + PYFLINK_VERSION.encode()).hexdigest()[:12]
    jar = cache_dir("flink") / f"draining-operator-{PYFLINK_VERSION}-{digest}.jar"
    if jar.exists():
        return jar
    javac = _javac()
    home = Path(pyflink.__file__).parent
    classpath = os.pathsep.join(
        [str(home / "lib" / "*"), *map(str, home.glob("opt/flink-python*.jar"))]
    )
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        command = [javac, "-nowarn", "--release", "11", "-cp", classpath, "-d", str(classes)]
        done = subprocess.run([*command, str(SOURCE)], capture_output=True, text=True)
        if done.returncode != 0:
            raise DrainingUnavailable(
                f"javac failed on {SOURCE.name}: {done.stderr.strip()[-2000:]}"
            )
        built = Path(tmp) / jar.name
        with zipfile.ZipFile(built, "w") as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(built, jar)  # atomic: concurrent builders each write a whole jar
    return jar


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise DrainingUnavailable("no javac (a JDK) found on PATH or in JAVA_HOME")


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
    url = jar.as_uri()
    add_jars_to_context_class_loader([url])  # so the client can create it
    jars = env._j_stream_execution_environment.getConfiguration().toMap().get("pipeline.jars")
    if url not in (jars or ""):
        env.add_jars(url)
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
