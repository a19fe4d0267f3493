"""actionjournal's Java classes for Flink, compiled on demand and shipped with the job.

A few things PyFlink cannot express in Python (an operator that checkpoints its timers,
Kafka records with their keys and headers) are small Java sources next to this file. Each
is compiled once with ``javac`` against the installed PyFlink's own jars (plus any jars it
needs, such as the Kafka connector) into ``<cache>/flink`` (``$ACTIONJOURNAL_CACHE`` or
``~/.cache/actionjournal``), named by a digest of the source, the PyFlink version and the
extra jars, and shipped to the TaskManagers through ``pipeline.jars``. A machine without a
JDK can use a jar built elsewhere: copy it into its cache under the same name.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

import pyflink
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.util.java_utils import add_jars_to_context_class_loader
from pyflink.version import __version__ as PYFLINK_VERSION

from actionjournal._maven import cache_dir

__all__ = ["JavaUnavailable", "compiled_jar", "ship"]


class JavaUnavailable(Exception):
    """A Java source could not be compiled here; the message says why."""


def compiled_jar(
    source: Path, classpath: Sequence[Path] = (), companions: Sequence[Path] = ()
) -> Path:
    """The jar of ``source`` compiled for the installed PyFlink, built on first use.

    ``classpath`` adds jars beyond PyFlink's own (``lib/*`` and ``opt/flink-python``);
    ``companions`` are further sources compiled into the same jar (classes it uses).
    """
    sources = [source, *companions]
    against = " ".join([PYFLINK_VERSION, *(path.name for path in classpath)])
    code = b"".join(path.read_bytes() for path in sources)
    digest = hashlib.sha256(code + against.encode()).hexdigest()[:12]
    jar = cache_dir("flink") / f"{_jar_stem(source)}-{PYFLINK_VERSION}-{digest}.jar"
    if jar.exists():
        return jar
    javac = _javac()
    home = Path(pyflink.__file__).parent
    paths = [str(home / "lib" / "*"), *map(str, home.glob("opt/flink-python*.jar"))]
    paths += map(str, classpath)
    with tempfile.TemporaryDirectory() as tmp:
        classes = Path(tmp) / "classes"
        command = [javac, "-nowarn", "--release", "11", "-cp", os.pathsep.join(paths)]
        done = subprocess.run(
            [*command, "-d", str(classes), *map(str, sources)], capture_output=True, text=True
        )
        if done.returncode != 0:
            names = ", ".join(path.name for path in sources)
            raise JavaUnavailable(f"javac failed on {names}: {done.stderr.strip()[-2000:]}")
        built = Path(tmp) / jar.name
        with zipfile.ZipFile(built, "w") as out:
            for path in sorted(classes.rglob("*.class")):
                out.write(path, path.relative_to(classes).as_posix())
        os.replace(built, jar)  # atomic: concurrent builders each write a whole jar
    return jar


def ship(env: StreamExecutionEnvironment, jar: Path) -> None:
    """Load ``jar`` in this client (to build the job) and ship it with the job, once."""
    url = jar.as_uri()
    add_jars_to_context_class_loader([url])
    jars = env._j_stream_execution_environment.getConfiguration().toMap().get("pipeline.jars")
    if url not in (jars or ""):
        env.add_jars(url)


def _jar_stem(source: Path) -> str:
    """``DrainingKeyedProcessOperator`` -> ``draining-keyed-process-operator``."""
    name = source.stem
    return "".join(f"-{c.lower()}" if c.isupper() and i else c.lower() for i, c in enumerate(name))


def _javac() -> str:
    home = os.environ.get("JAVA_HOME")
    candidates = [str(Path(home) / "bin" / "javac")] if home else []
    candidates.append(shutil.which("javac") or "")
    for candidate in candidates:
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    raise JavaUnavailable("no javac (a JDK) found on PATH or in JAVA_HOME")
