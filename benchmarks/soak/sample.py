"""What the soak samples every few seconds: TaskManager memory, the job's checkpoints, the
journal's size, the machine's load. One JSON line per sample in ``samples.jsonl``.

- **RSS** of each TaskManager: its JVM and, apart, the Python workers it started (its
  descendant processes), from ``/proc``; and the JVM's heap in use (Flink's metric). The
  soak's TaskManagers touch their whole heap at start (``-XX:+AlwaysPreTouch``), so RSS
  grows only with what is not the heap, and the heap's own growth shows in its use after
  collections (the low points of ``heap_used_mb``).
- **Checkpoints**, from the JobManager's REST API: the latest completed one's full state
  size and what its incremental upload added, and the bytes under the job's checkpoint
  directory (the retained checkpoints and the RocksDB files they share).
- **Journal**: bytes of the topic's log segments on disk (per partition, the largest of its
  three replicas: what one copy holds) and the records retained (end minus start offsets).
- **CPU** seconds used so far by each process of the soak, by role (``python`` workers,
  ``taskmanager`` and ``jobmanager`` JVMs, ``broker``, the counting ``service``), per pid:
  what an order costs in CPU (a process that is gone keeps its last figure).
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from actionjournal.stores.kafka.logs import client_logging
from benchmarks.soak.processes import Processes

TICKS = os.sysconf("SC_CLK_TCK")


class Sampler(threading.Thread):
    """Every ``every`` seconds, one sample into ``path``; the latest also in :attr:`last`."""

    def __init__(self, processes: Processes, path: Path, every: float, status: Any) -> None:
        super().__init__(name="soak-sampler", daemon=True)
        self.processes = processes
        self.path = path
        self.every = every
        self.status = status
        """A callable giving the soak's own counters (elapsed, produced, watched outputs)."""
        self.last: dict[str, Any] = {}
        self._stopping = threading.Event()
        self._consumer = Consumer(
            {
                "bootstrap.servers": processes.kafka.bootstrap,
                "group.id": "soak-sampler",
                **client_logging(),
            }
        )

    def run(self) -> None:
        with open(self.path, "a") as out:
            while not self._stopping.wait(self.every):
                sample = self.take()
                out.write(json.dumps(sample) + "\n")
                out.flush()
                self.last = sample
        self._consumer.close()

    def stop(self) -> None:
        self._stopping.set()
        self.join(60)

    def take(self) -> dict[str, Any]:
        sample: dict[str, Any] = {"t": round(time.time(), 3), **self.status()}
        sample["load1"] = round(os.getloadavg()[0], 2)
        sample["machine_cpu_s"] = _machine_cpu_seconds()
        tree = _children()
        tms = self.processes.taskmanagers()
        sample["taskmanagers"] = {
            name: {**_memory(pid, tree), **self._heap(name)} for name, pid in tms.items()
        }
        sample["cpu"] = self._cpu(tms, tree)
        sample["job"] = self.processes.job_state()
        sample["checkpoint"] = self._checkpoint()
        sample["journal"] = self._journal()
        return sample

    def _heap(self, name: str) -> dict[str, float]:
        path = f"/taskmanagers/{name}/metrics?get=Status.JVM.Memory.Heap.Used"
        with contextlib.suppress(Exception):
            (metric,) = self.processes.rest(path)
            return {"heap_used_mb": round(float(metric["value"]) / 1024 / 1024, 1)}
        return {}

    def _cpu(self, tms: dict[str, int], tree: dict[int, list[int]]) -> dict[str, dict[str, float]]:
        p = self.processes
        roles: dict[str, list[int]] = {
            "taskmanager": list(tms.values()),
            "python": [c for pid in tms.values() for c in _below(pid, tree) if _is_python(c)],
            "jobmanager": [p.flink.jobmanager.pid] if p.flink.jobmanager.pid else [],
            "broker": [b.pid for b in p.kafka.brokers.values() if b.pid is not None],
            "service": [p.service.pid] if p.service is not None else [],
        }
        return {role: {str(pid): _cpu_seconds(pid) for pid in pids} for role, pids in roles.items()}

    def _checkpoint(self) -> dict[str, Any]:
        found: dict[str, Any] = {}
        job = self.processes.job_id
        if job is None:
            return found
        with contextlib.suppress(Exception):
            stats = self.processes.rest(f"/jobs/{job}/checkpoints")
            found["completed"] = stats["counts"]["completed"]
            found["failed"] = stats["counts"]["failed"]
            latest = (stats.get("latest") or {}).get("completed") or {}
            if latest:
                found["id"] = latest["id"]
                found["state_bytes"] = latest["state_size"]
                found["incremental_bytes"] = latest["checkpointed_size"]
                found["duration_ms"] = latest["end_to_end_duration"]
        found["dir_bytes"] = _tree_bytes(self.processes.flink.checkpoint_dir / job)
        return found

    def _journal(self) -> dict[str, Any]:
        s = self.processes.settings
        topic = s.journal_topic
        disk = 0
        for p in range(s.journal_partitions):
            copies = [
                _tree_bytes(broker.data_dir / f"{topic}-{p}", suffix=".log")
                for broker in self.processes.kafka.brokers.values()
            ]
            disk += max(copies)
        found: dict[str, Any] = {"disk_bytes": disk}
        with contextlib.suppress(Exception):
            records = 0
            for p in range(s.journal_partitions):
                low, high = self._consumer.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=3, cached=False
                )
                records += high - low
            found["records"] = records
        return found


def _children() -> dict[int, list[int]]:
    """Every process's children, from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        parent = _status(int(entry.name)).get("PPid")
        if parent is not None:
            children.setdefault(int(parent), []).append(int(entry.name))
    return children


def _below(pid: int, children: dict[int, list[int]]) -> list[int]:
    """Every descendant of ``pid``."""
    below, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        below.append(child)
        todo += children.get(child, [])
    return below


def _memory(pid: int, children: dict[int, list[int]]) -> dict[str, float]:
    """RSS in MB of a TaskManager's JVM and of the Python workers among its descendants."""
    workers = sum(_rss_kb(child) for child in _below(pid, children) if _is_python(child))
    return {"jvm_mb": round(_rss_kb(pid) / 1024, 1), "python_mb": round(workers / 1024, 1)}


def _status(pid: int) -> dict[str, str]:
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return {}
    return dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)


def _rss_kb(pid: int) -> int:
    rss = _status(pid).get("VmRSS", "0 kB").split()[0]
    return int(rss)


def _cpu_seconds(pid: int) -> float:
    """User and system CPU seconds ``pid`` used so far (0 when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def _machine_cpu_seconds() -> float:
    """CPU seconds every core of the machine spent busy since boot (/proc/stat)."""
    fields = Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]
    user, nice, system, _idle, _iowait, irq, softirq, steal = map(int, fields[:8])
    return (user + nice + system + irq + softirq + steal) / TICKS


def _is_python(pid: int) -> bool:
    return _status(pid).get("Name", "").startswith("python")


def _tree_bytes(path: Path, suffix: str = "") -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            if name.endswith(suffix):
                with contextlib.suppress(OSError):
                    total += os.stat(os.path.join(root, name)).st_size
    return total
