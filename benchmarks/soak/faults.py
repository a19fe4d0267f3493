"""The soak's faults, real SIGKILLs of the processes a production job loses.

- ``tm-kill``: a TaskManager running the agent is SIGKILLed; a new one is started at once
  (as a Kubernetes deployment replaces a lost pod), the job restarts from its latest
  checkpoint on it and the survivor.
- ``leader-kill``: the broker leading most of the journal's partitions is SIGKILLed while
  the job appends; it is started again ``broker_down_s`` later (the journal, input and
  output topics keep two of three copies meanwhile).
"""

from __future__ import annotations

import time
from collections import Counter

from confluent_kafka.admin import AdminClient

from actionjournal.stores.kafka.logs import client_logging
from benchmarks.soak.processes import Processes
from benchmarks.soak.settings import FaultRecord


def kill_taskmanager(processes: Processes, at_s: float) -> FaultRecord:
    """SIGKILL a TaskManager running the agent, start its replacement, wait for the job."""
    victim = sorted(_agent_taskmanagers(processes))[0]
    pid = processes.flink.taskmanagers[victim].pid
    wall = time.time()
    processes.flink.kill_taskmanager(victim)
    record = FaultRecord("tm-kill", at_s, wall, f"TaskManager {victim} (pid {pid})")
    processes.start_flink()  # a new TaskManager in its place; ends the workers it left
    record.back_wall = time.time()
    processes.wait_running()
    record.running_wall = time.time()
    return record


def kill_journal_leader(processes: Processes, at_s: float) -> FaultRecord:
    """SIGKILL the broker leading most journal partitions (it is started again later)."""
    topic = processes.settings.journal_topic
    leaders = _leaders(processes.kafka.bootstrap, topic)
    node, led = Counter(leaders.values()).most_common(1)[0]
    wall = time.time()
    processes.kafka.kill_broker(node)
    processes.record()
    target = f"broker {node}, leader of {led} of {len(leaders)} partitions of {topic}"
    return FaultRecord("leader-kill", at_s, wall, target, node=node)


def restart_broker(processes: Processes, record: FaultRecord) -> None:
    assert record.node is not None
    processes.kafka.start_broker(record.node)
    processes.record()
    record.back_wall = time.time()


def _agent_taskmanagers(processes: Processes) -> set[str]:
    job = processes.rest(f"/jobs/{processes.job_id}")
    (vertex,) = [v for v in job["vertices"] if "agent" in v["name"].lower()]
    found = processes.rest(f"/jobs/{processes.job_id}/vertices/{vertex['id']}/taskmanagers")
    return {tm["taskmanager-id"] for tm in found["taskmanagers"]}


def _leaders(bootstrap: str, topic: str) -> dict[int, int]:
    """Partition -> the node id leading it."""
    admin = AdminClient({"bootstrap.servers": bootstrap, **client_logging()})
    metadata = admin.list_topics(topic, timeout=30).topics[topic]
    return {p: int(info.leader) for p, info in metadata.partitions.items()}
