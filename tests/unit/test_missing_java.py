"""No Java on the machine: the demo and a user's PyFlink job say in one line what to install
or set, and that agents run without Flink too, before anything starts."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

pytest.importorskip("pyflink")


def without_java(tmp_path, **extra: str) -> dict[str, str]:
    """The environment of a machine without Java: nothing on PATH, no JAVA_HOME."""
    empty = tmp_path / "bin"
    empty.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if k not in ("JAVA_HOME", "FLINK_CONF_DIR")}
    return {**env, "PATH": str(empty), **extra}


def test_the_demo_says_what_to_install_before_anything_starts(tmp_path):
    demo = tmp_path / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.cli", "demo", "--dir", str(demo)],
        env=without_java(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    (line,) = done.stderr.splitlines()  # before: "error: [Errno 2] No such file ... 'java'"
    assert line.startswith("error: no Java to run Flink (JAVA_HOME is not set and there is no")
    assert "JDK 17+" in line and "set JAVA_HOME" in line and "actionjournal demo --local" in line
    assert done.stdout == "" and not demo.exists()  # nothing started, nothing written


JOB = """
from pyflink.datastream import StreamExecutionEnvironment
from actionjournal.flink import AgentsExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
"""


@pytest.mark.parametrize("home", [None, "/nonexistent/jdk"])
def test_a_pyflink_job_says_what_to_install_or_set(tmp_path, home):
    extra = {"JAVA_HOME": home} if home else {}
    done = subprocess.run(
        [sys.executable, "-c", JOB],
        env=without_java(tmp_path, **extra),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1
    last = done.stderr.strip().splitlines()[-1]  # before: FileNotFoundError: ... 'java'
    where = f"JAVA_HOME={home} has no bin/java" if home else "JAVA_HOME is not set"
    assert last.startswith(
        f"actionjournal.dev.java.JavaNotFoundError: no Java to run Flink ({where}"
    )
    assert "install a JDK 17+" in last and "LocalRunner" in last
