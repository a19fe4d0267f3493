"""Is there a Java to run Flink? One line saying what to install or set, before anything starts.

PyFlink runs Flink in a JVM that it starts with ``java`` from ``JAVA_HOME`` (or Flink's
``env.java.home``), else from ``PATH``. Without one, creating the execution environment
fails deep inside PyFlink with ``No such file or directory: 'java'`` and a long traceback.
:func:`missing_java` finds the ``java`` PyFlink would start; :func:`guard_gateway` makes
PyFlink's JVM launch raise :class:`JavaNotFoundError` with that one line instead.
"""

from __future__ import annotations

import functools
import os
import shutil
from typing import Any

INSTALL = (
    "install a JDK 17+ (javac too: it builds the agent's Flink operator), e.g. "
    "`apt-get install openjdk-17-jdk-headless` or `brew install openjdk@17`, or set JAVA_HOME "
    "to one; `actionjournal demo --local` and LocalRunner run agents without Flink"
)


class JavaNotFoundError(RuntimeError):
    """No ``java`` to start Flink's JVM with; the message says what to install or set."""


def java_executable() -> str:
    """The ``java`` PyFlink starts: from Flink's ``env.java.home``, ``JAVA_HOME`` or ``PATH``."""
    try:
        from pyflink.pyflink_gateway_server import find_java_executable
    except ImportError:  # no PyFlink: what it would do without a Flink configuration
        home = os.environ.get("JAVA_HOME")
        return os.path.join(home, "bin", "java") if home else "java"
    found: str = find_java_executable()
    return found


def missing_java() -> str | None:
    """``None`` when PyFlink can start its JVM, else one line saying why not and what to do."""
    java = java_executable()
    if shutil.which(java):
        return None
    home = os.environ.get("JAVA_HOME")
    if os.path.dirname(java):
        where = f"JAVA_HOME={home} has no bin/java" if home else f"{java} is not there"
    else:
        where = "JAVA_HOME is not set and there is no `java` on PATH"
    return f"no Java to run Flink ({where}): {INSTALL}"


def guard_gateway() -> None:
    """Make PyFlink's JVM launch raise :class:`JavaNotFoundError` (one line) when there is no
    ``java``, instead of a ``FileNotFoundError`` from deep inside it. Once per process."""
    from pyflink import java_gateway

    launch = java_gateway.launch_gateway
    if getattr(launch, "guarded", False):
        return

    @functools.wraps(launch)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        problem = missing_java()
        if problem is not None:
            raise JavaNotFoundError(problem)
        return launch(*args, **kwargs)

    guarded.guarded = True  # type: ignore[attr-defined]
    java_gateway.launch_gateway = guarded
