"""Every process a soak runs, started in its work directory and ended on every exit path.

Three Kafka brokers (one KRaft quorum), a Flink session cluster (a JobManager, two
TaskManagers of one slot, the Python workers they start), the counting service and the
continuous cleanup. Each is recorded by pid in ``pids.json`` as soon as it starts; a soak
that was killed without its ``finally`` (SIGKILL, a lost session) leaves that record, and
the next soak in the same work directory ends those processes first: by recorded pid, and
only when the process's command line still names the work directory (a pid is reused
once its process is gone). The Python workers of the TaskManagers are found as
:class:`~actionjournal.dev.flink.FlinkCluster` finds them, by the work directory in their
environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from actionjournal.dev.flink import MARKER, FlinkCluster, flink_home
from actionjournal.dev.kafka import KafkaCluster
from actionjournal.dev.process import alive, cmdline, end_processes
from benchmarks.soak import service
from benchmarks.soak.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
AGENT = ROOT / "examples" / "kafka_orders" / "agent.py"
JOB = Path(__file__).with_name("job.py")
BROKERS = 3

BROKER_PROPERTIES = {
    # Segments wholly below a partition's log start offset (moved by cleanup's deletes) are
    # removed by the retention check; Kafka runs it every 5 minutes by default.
    "log.retention.check.interval.ms": "30000",
}
FLINK_OPTIONS = {
    # The heap is touched in full at start, so that the TaskManagers' RSS grows only with
    # what is not the heap (RocksDB, metaspace, direct buffers): what the soak watches.
    "env.java.opts.taskmanager": "-XX:+AlwaysPreTouch",
}


class SoakError(RuntimeError):
    """The soak could not start or drive one of its processes."""


class Processes:
    """The soak's processes in ``workdir``: started one by one, stopped all at once."""

    def __init__(self, workdir: Path, settings: Settings) -> None:
        self.workdir = workdir
        self.settings = settings
        self.kafka = KafkaCluster(workdir / "kafka", brokers=BROKERS, properties=BROKER_PROPERTIES)
        self.flink = FlinkCluster(workdir / "flink", taskmanagers=2, slots=1, options=FLINK_OPTIONS)
        self.service_dir = workdir / "service"
        self.service_dir.mkdir(parents=True, exist_ok=True)
        self.service: subprocess.Popen[bytes] | None = None
        self.service_url = ""
        self.cleanup: subprocess.Popen[bytes] | None = None
        self.job_id: str | None = None

    # -- what runs, recorded -------------------------------------------------------------

    @property
    def pids_path(self) -> Path:
        return self.workdir / "pids.json"

    def record(self) -> None:
        """Write the pid of every process started so far (``pids.json``)."""
        pids = [p.pid for p in (*self.kafka.servers, *self.flink.servers) if p.pid is not None]
        pids += [p.pid for p in (self.service, self.cleanup) if p is not None]
        self.pids_path.write_text(json.dumps(sorted(pids)) + "\n")

    def end_leftovers(self) -> list[int]:
        """End what an earlier soak in this work directory left running; their pids."""
        try:
            recorded = [int(pid) for pid in json.loads(self.pids_path.read_text())]
        except (OSError, ValueError, TypeError):
            recorded = []
        ours = str(self.workdir).encode()
        left = [
            pid
            for pid in recorded
            if alive(pid) and any(ours in part for part in cmdline(pid) or [])
        ]
        left += [pid for pid in self.flink.processes() if pid not in left]  # Python workers
        end_processes(left, timeout=20)
        self.pids_path.unlink(missing_ok=True)
        return left

    # -- starting ------------------------------------------------------------------------

    def start_kafka(self) -> str:
        try:
            self.kafka.start()
        finally:
            self.record()
        return self.kafka.bootstrap

    def start_service(self) -> str:
        """The counting service's process; returns its URL (the same port as last time)."""
        ready = self.service_dir / service.READY
        log = open(self.service_dir / "service.log", "ab")  # noqa: SIM115 (the child's)
        low, high = self.settings.service_latency_ms
        with log:
            self.service = subprocess.Popen(
                [
                    sys.executable, "-m", "benchmarks.soak.service", "--dir",
                    str(self.service_dir), "--latency-ms", str(low), str(high),
                ],
                cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )  # fmt: skip
        self.record()
        deadline = time.monotonic() + 60
        while True:
            with contextlib.suppress(OSError, ValueError):
                found = json.loads(ready.read_text())
                if found.get("pid") == self.service.pid:
                    self.service_url = str(found["url"])
                    return self.service_url
            if self.service.poll() is not None or time.monotonic() > deadline:
                raise SoakError(
                    f"the counting service did not start (see {self.service_dir}/service.log)"
                )
            time.sleep(0.1)

    def start_flink(self) -> None:
        """Start the session cluster, or replace lost TaskManagers of the running one."""
        try:
            self.flink.start()
        finally:
            self.record()

    def submit(self, restore_from: str | None) -> str:
        """Submit the job (from a retained checkpoint when resuming); returns its id."""
        s = self.settings
        command = [
            str(flink_home() / "bin" / "flink"), "run", "--detached",
            "--parallelism", str(s.parallelism),
            *(["--fromSavepoint", restore_from] if restore_from else []),
            "--python", str(JOB), "--pyFiles", str(AGENT),
            "--bootstrap", self.kafka.bootstrap, "--input", s.input_topic,
            "--output", s.output_topic, "--journal", s.journal_topic,
            "--journal-partitions", str(s.journal_partitions), "--namespace", s.namespace,
            "--service", self.service_url,
            "--checkpoint-interval", str(s.checkpoint_interval_s),
            "--retained", str(s.retained_checkpoints),
        ]  # fmt: skip
        done = subprocess.run(
            command,
            # the cluster's marker: a soak killed during the submit leaves a client that the
            # next one finds and ends like the cluster's own processes
            env={**os.environ, **self.flink.env(), MARKER: str(self.flink.workdir)},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        found = re.search(r"JobID ([0-9a-f]{32})", done.stdout)
        if done.returncode != 0 or found is None:
            raise SoakError(
                f"flink run failed ({done.returncode}):\n{(done.stdout + done.stderr)[-4000:]}"
            )
        self.job_id = found.group(1)
        return self.job_id

    def start_cleanup(self) -> None:
        """``actionjournal cleanup run`` beside the job, as docs/operations.md runs it."""
        s = self.settings
        command = [
            str(Path(sys.executable).with_name("actionjournal")), "cleanup", "run",
            "--store", "kafka", "--bootstrap", self.kafka.bootstrap, "--topic", s.journal_topic,
            "--namespace", s.namespace, "--operator-uid", s.operator_uid,
            "--checkpoints", str(self.flink.checkpoint_dir),
            "--safety-margin", str(s.cleanup_margin_s), "--every", f"{s.cleanup_every_s:g}s",
        ]  # fmt: skip
        with open(self.workdir / "cleanup.log", "ab") as log:
            self.cleanup = subprocess.Popen(
                command, cwd=ROOT, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        self.record()

    # -- the job -------------------------------------------------------------------------

    def rest(self, path: str, method: str = "GET") -> Any:
        return self.flink.rest(path, method=method)

    def job_state(self) -> str:
        if self.job_id is None:
            return "NONE"
        try:
            return str(self.rest(f"/jobs/{self.job_id}")["state"])
        except Exception:
            return "UNKNOWN"

    def wait_running(self, timeout: float = 600) -> None:
        """Until every task of the job runs."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(Exception):
                job = self.rest(f"/jobs/{self.job_id}")
                if job["state"] in ("FAILED", "CANCELED", "FINISHED"):
                    break
                if {v["status"] for v in job["vertices"]} == {"RUNNING"}:
                    return
            time.sleep(1)
        raise SoakError(
            f"job {self.job_id} does not run: {self.rest(f'/jobs/{self.job_id}/exceptions')}"
        )

    def taskmanagers(self) -> dict[str, int]:
        """Resource id -> pid of the TaskManagers running now."""
        return {
            name: p.pid
            for name, p in self.flink.taskmanagers.items()
            if p.pid is not None and p.is_running()
        }

    # -- stopping ------------------------------------------------------------------------

    def cancel_job(self) -> None:
        """Cancel the job (its retained checkpoints stay, for a resumed soak)."""
        if self.job_id is None or not self.flink.is_running():
            return
        with contextlib.suppress(Exception):
            self.rest(f"/jobs/{self.job_id}?mode=cancel", method="PATCH")
            deadline = time.monotonic() + 60
            while self.job_state() not in ("CANCELED", "FAILED", "FINISHED", "UNKNOWN"):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.5)

    def stop_all(self) -> None:
        """Stop everything, each step whatever the others did; then no process is left."""
        steps = [
            lambda: _stop_child(self.cleanup),
            self.cancel_job,
            self.flink.stop,
            lambda: _stop_child(self.service),  # SIGTERM: it saves its counts
            self.kafka.stop,
        ]
        errors = []
        for step in steps:
            try:
                step()
            except Exception as exc:  # the next step runs anyway
                errors.append(exc)
        left = self.end_leftovers()
        if errors or left:
            print(
                f"soak: stopping: {len(errors)} step(s) failed ({'; '.join(map(str, errors))}); "
                f"ended {len(left)} process(es) left behind: {left}",
                file=sys.stderr,
            )


def _stop_child(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(10)
