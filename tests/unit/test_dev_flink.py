"""`actionjournal dev flink`: which processes are the cluster's, without starting Flink.

A stand-in TaskManager (a Python process launched as the cluster launches its servers)
starts a stand-in Python worker; a real ``kill -9`` of the TaskManager leaves the worker
without a parent, as a killed TaskManager leaves its PyFlink workers. The real cluster is
tests/cluster's.
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from actionjournal.dev.flink import MARKER, FlinkCluster, FlinkClusterError, flink_home, settings
from actionjournal.dev.process import ServerProcess, alive

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")

# Starts a worker (a child that inherits the environment), prints its pid, then waits.
TASKMANAGER = (
    "import subprocess, sys, time\n"
    "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(worker.pid, flush=True)\n"
    "time.sleep(600)\n"
)


def wait_until(condition, timeout=20.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


@pytest.fixture
def cluster(tmp_path):
    cluster = FlinkCluster(tmp_path / "flink", taskmanagers=1)
    yield cluster
    cluster.kill()


def stand_in_taskmanager(cluster: FlinkCluster, name: str) -> int:
    """Launch a stand-in TaskManager ``name``; returns its worker's pid."""
    process = ServerProcess(f"TaskManager {name}", cluster.log_dir / f"taskmanager-{name}.out")
    process.launch(
        [sys.executable, "-c", TASKMANAGER], cluster.workdir, {MARKER: str(cluster.workdir)}
    )
    cluster.taskmanagers[name] = process
    wait_until(lambda: process.log_path.read_text().strip())
    return int(process.log_path.read_text().split()[0])


def test_a_killed_taskmanagers_workers_are_orphans_that_stop_ends(cluster):
    stranger = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        worker = stand_in_taskmanager(cluster, "tm-0")
        taskmanager = cluster.taskmanagers["tm-0"].pid
        assert set(cluster.processes()) == {taskmanager, worker}
        assert cluster.orphans() == []  # its TaskManager runs: not an orphan

        cluster.kill_taskmanager("tm-0")  # SIGKILL: the worker lives on without it
        wait_until(lambda: not alive(taskmanager))
        assert alive(worker) and cluster.orphans() == [worker]

        replacement = stand_in_taskmanager(cluster, "tm-1")
        assert cluster.end_orphans() == [worker]  # what `dev flink start` does on a live cluster
        assert not alive(worker) and alive(replacement)

        cluster.stop(timeout=5)
        assert cluster.processes() == [] and not alive(replacement)
        assert stranger.poll() is None, "a process without the cluster's marker was ended"
    finally:
        stranger.kill()
        stranger.wait()


def test_settings_persist_in_the_workdir_so_a_later_start_keeps_the_backend(tmp_path):
    rocksdb = settings("rocksdb", ["python.state.cache-size=5000"])
    assert rocksdb == {
        "state.backend.type": "rocksdb",
        "execution.checkpointing.incremental": "true",
        "python.state.cache-size": "5000",
    }
    FlinkCluster(tmp_path, options=rocksdb)._write_config(flink_home())
    again = FlinkCluster(tmp_path)  # `dev flink start` on a running cluster, or after stop
    assert again.options == rocksdb
    again._write_config(flink_home())
    config = (tmp_path / "conf" / "config.yaml").read_text()
    assert 'state.backend.type: "rocksdb"' in config
    assert 'execution.checkpointing.incremental: "true"' in config
    assert settings(None, []) is None  # nothing asked: keep what was saved


def test_a_setting_that_is_not_key_equals_value_is_refused():
    with pytest.raises(FlinkClusterError, match="'state.backend.type': write it as KEY=VALUE"):
        settings(None, ["state.backend.type"])
