"""A real Flink session cluster (``actionjournal dev flink``) and the commands of
docs/deploying.md, run as a user runs them.

The cluster is started once per session by the doc's own command, with a private
``ACTIONJOURNAL_CACHE`` (its dev state and work directory) that links to the shared jar
caches; it is stopped by the doc's command at the end, after which no process of it may
remain.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("confluent_kafka")

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import actionjournal._maven as maven
from actionjournal.dev.flink import ClusterInfo, FlinkCluster

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "deploying.md"
BIN = Path(os.sys.executable).parent


def doc_block(name: str) -> str:
    """The shell block of docs/deploying.md marked ``<!-- test: name -->``."""
    found = re.search(rf"<!-- test: {name} -->\s*```sh\n(.*?)```", DOC.read_text(), re.S)
    assert found, f"docs/deploying.md has no block marked '<!-- test: {name} -->'"
    return found.group(1)


class Shell:
    """Runs doc commands with bash, the virtualenv's bin first on PATH, in the repository."""

    def __init__(self, cache: Path) -> None:
        self.env = {
            **os.environ,
            "ACTIONJOURNAL_CACHE": str(cache),
            "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        }

    def run(self, script: str, timeout: float = 300, **variables: str) -> str:
        done = subprocess.run(
            ["bash", "-euo", "pipefail", "-c", script],
            env={**self.env, **variables},
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        output = done.stdout + done.stderr
        assert done.returncode == 0, f"{script}\nfailed ({done.returncode}):\n{output[-4000:]}"
        return output

    def flink(self, block: str, timeout: float = 300, **variables: str) -> str:
        """A block of ``flink`` commands, in the environment ``dev flink env`` prints."""
        return self.run(doc_block("env") + block, timeout, **variables)


def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An ``ACTIONJOURNAL_CACHE`` whose jars are the shared ones and whose dev servers
    (their state, work directories, clusters) are its own."""
    cache = tmp_path_factory.mktemp("cache")
    for shared in ("maven", "flink"):
        (cache / shared).symlink_to(maven.cache_dir(shared), target_is_directory=True)
    return cache


@pytest.fixture(scope="session")
def shell(tmp_path_factory: pytest.TempPathFactory) -> Shell:
    return Shell(private_cache(tmp_path_factory))


@pytest.fixture(scope="session")
def cluster(shell: Shell) -> Iterator[FlinkCluster]:
    """The doc's dev cluster (2 TaskManagers of 2 slots), attached to for kills and REST."""
    state = Path(shell.env["ACTIONJOURNAL_CACHE"]) / "dev" / "flink.json"
    try:
        began = time.monotonic()
        shell.run(doc_block("start"), timeout=400)
        print(f"\n`dev flink start` (2 TaskManagers): {time.monotonic() - began:.0f} s")
        yield attached(state)
    finally:
        if state.exists():
            everything = attached(state)
            shell.run(doc_block("stop"), timeout=120)
            left = everything.processes()
            assert not left, f"processes of the cluster left after `dev flink stop`: {left}"


def attached(state: Path) -> FlinkCluster:
    info = ClusterInfo(**json.loads(state.read_text()))
    cluster = FlinkCluster(info.workdir, port=info.port, taskmanagers=len(info.taskmanagers))
    cluster.attach(info)
    return cluster


@pytest.fixture
def full_cluster(cluster: FlinkCluster, shell: Shell) -> FlinkCluster:
    """The cluster with both TaskManagers (the doc's start command replaces a lost one)."""
    state = Path(shell.env["ACTIONJOURNAL_CACHE"]) / "dev" / "flink.json"
    shell.run(doc_block("start"), timeout=400)
    return attached(state)


# -- jobs ------------------------------------------------------------------------------------


def job_id(output: str) -> str:
    found = re.search(r"JobID ([0-9a-f]{32})", output)
    assert found, f"no job id in:\n{output[-3000:]}"
    return found.group(1)


def savepoint_path(output: str) -> str:
    found = re.search(r"Savepoint completed\. Path: (\S+)", output)
    assert found, f"no savepoint path in:\n{output[-3000:]}"
    return found.group(1)


def vertex_states(cluster: FlinkCluster, job: str) -> list[str]:
    return [v["status"] for v in cluster.rest(f"/jobs/{job}")["vertices"]]


def wait_running(cluster: FlinkCluster, job: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        states = vertex_states(cluster, job)
        if set(states) == {"RUNNING"}:
            return
        if {"FAILED", "CANCELED"} & set(states) and cluster.rest(f"/jobs/{job}")["state"] in (
            "FAILED",
            "CANCELED",
        ):
            break
        time.sleep(0.5)
    raise AssertionError(f"job {job} not running: {cluster.rest(f'/jobs/{job}/exceptions')}")


def agent_taskmanagers(cluster: FlinkCluster, job: str) -> list[str]:
    """Resource ids of the TaskManagers running the agent's subtasks."""
    (vertex,) = [v for v in cluster.rest(f"/jobs/{job}")["vertices"] if "agent" in v["name"]]
    found = cluster.rest(f"/jobs/{job}/vertices/{vertex['id']}/taskmanagers")["taskmanagers"]
    return sorted({tm["taskmanager-id"] for tm in found})


def cancel_quietly(cluster: FlinkCluster, job: str | None) -> None:
    if job is None:
        return
    try:
        if cluster.rest(f"/jobs/{job}")["state"] not in ("FINISHED", "FAILED", "CANCELED"):
            cluster.rest(f"/jobs/{job}?mode=cancel", method="PATCH")
    except Exception:
        pass


# -- Kafka -----------------------------------------------------------------------------------


def create_topics(bootstrap: str, *names: str, partitions: int = 4) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(n, partitions, 1) for n in names]).values():
        future.result()


def produce(bootstrap: str, topic: str, orders: list[dict[str, Any]]) -> None:
    """Orders keyed by customer, as the doc asks."""
    producer = Producer({"bootstrap.servers": bootstrap})
    for order in orders:
        producer.produce(topic, key=order["customer"], value=json.dumps(order))  # None: no key
    producer.flush(30)


@pytest.fixture
def reader(aj_kafka_bootstrap: str) -> Iterator[Callable[[str, str], TopicReader]]:
    """``reader(topic, isolation)``: a :class:`TopicReader`, closed after the test."""
    made: list[TopicReader] = []

    def make(topic: str, isolation: str) -> TopicReader:
        made.append(TopicReader(aj_kafka_bootstrap, topic, isolation))
        return made[-1]

    yield make
    for each in made:
        each.close()


class TopicReader:
    """Everything in a topic, read incrementally with one isolation level."""

    def __init__(self, bootstrap: str, topic: str, isolation: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"reader-{isolation}",
                "isolation.level": isolation,
                "enable.auto.commit": False,
            }
        )
        partitions = self.consumer.list_topics(topic, timeout=10).topics[topic].partitions
        self.consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
        self.records: list[dict[str, Any]] = []

    def poll(self, seconds: float = 0.2) -> list[dict[str, Any]]:
        """What arrived within ``seconds``; kept in :attr:`records` too."""
        new = []
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            message = self.consumer.poll(max(0.0, deadline - time.monotonic()))
            if message is None or message.error():
                continue
            new.append(
                {
                    **json.loads(message.value()),
                    "key": message.key().decode(),
                    "event_id": dict(message.headers())["actionjournal-event-id"].decode(),
                    "arrived": time.monotonic(),
                }
            )
        self.records += new
        return new

    def ids(self) -> set[int]:
        return {r["id"] for r in self.records}

    def close(self) -> None:
        self.consumer.close()
