"""A real Apache Kafka cluster of several KRaft brokers on 127.0.0.1, for dev and tests.

Replication is where a journal's promises meet a broker's death: a partition leader killed
mid-append, two of three brokers gone, a restore while a new leader is elected. Each broker
here is a combined broker+controller (:class:`~actionjournal.dev.kafka_broker.KafkaBroker`);
together they are one static controller quorum, so the cluster keeps its metadata while a
majority lives. Ports are free ones chosen once and kept in each broker's work directory, so
a killed broker comes back where clients and its peers expect it::

    with KafkaCluster(brokers=3) as cluster:
        node = cluster.leader("journal", 0)
        cluster.kill_broker(node)          # SIGKILL
        cluster.start_broker(node)         # same ports, same log dirs
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Iterator, Mapping
from typing import Any

from actionjournal.dev.kafka_broker import (
    KAFKA_VERSION,
    BrokerError,
    BrokerInfo,
    KafkaBroker,
    answers_metadata,
    listener_port,
    new_cluster_id,
    read_properties,
)
from actionjournal.dev.process import ServerProcess, free_port
from actionjournal.dev.server import DevServer

__all__ = ["FAILOVER_PROPERTIES", "ClusterInfo", "KafkaCluster", "running_cluster"]

FAILOVER_PROPERTIES = {
    # A broker that stops heartbeating is fenced by the controller after this long; only
    # then do its partitions get a new leader, and only then does acks=all stop waiting
    # for it as a follower (KRaft drops a fenced broker from every ISR). Kafka's default
    # is 9 s: a leader SIGKILL stalled every partition it led or followed for 8-13 s.
    # 3 s (heartbeats every 0.5 s: six misses) measured a 3-5 s stall here; lower values
    # fence brokers that merely paused (GC, a loaded 2-core machine).
    "broker.session.timeout.ms": "3000",
    "broker.heartbeat.interval.ms": "500",
    # A follower that is alive but stuck leaves the ISR after this long (default 30 s).
    "replica.lag.time.max.ms": "10000",
}
"""Broker settings of the dev cluster that bound a failover; docs/kafka.md explains them."""


def replicated_properties(brokers: int) -> dict[str, str]:
    """Broker settings for a cluster of ``brokers``: internal topics replicated like a
    production cluster's (3 copies, 2 in sync), capped at the number of brokers."""
    copies, in_sync = str(min(3, brokers)), str(min(2, brokers))
    return {
        "offsets.topic.replication.factor": copies,
        "transaction.state.log.replication.factor": copies,
        "transaction.state.log.min.isr": in_sync,
        "share.coordinator.state.topic.replication.factor": copies,
        "share.coordinator.state.topic.min.isr": in_sync,
        "default.replication.factor": copies,
        "min.insync.replicas": in_sync,
        **FAILOVER_PROPERTIES,
    }


@dataclasses.dataclass(frozen=True)
class ClusterInfo:
    """What a running cluster is and where: the contents of the dev state file."""

    pid: int  # broker 1's
    bootstrap: str
    workdir: str
    brokers: tuple[BrokerInfo, ...]
    kafka_version: str = KAFKA_VERSION

    @classmethod
    def from_json(cls, fields: dict[str, Any]) -> ClusterInfo:
        brokers = tuple(BrokerInfo(**broker) for broker in fields.pop("brokers"))
        return cls(brokers=brokers, **fields)


class KafkaCluster(DevServer[ClusterInfo]):
    """``brokers`` KRaft brokers (node ids 1..N), each a controller of one static quorum.

    ``workdir=None`` uses a fresh temp dir, deleted by :meth:`close`; broker N lives in
    ``broker-N/`` under it. ``port`` is broker 1's client port (default: a free one).
    ``properties`` override or extend every broker's config.
    """

    service = "kafka"
    stop_timeout = 20.0

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        brokers: int = 3,
        port: int | None = None,
        properties: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__(workdir)
        if brokers < 1:
            raise ValueError(f"a cluster has at least one broker, not {brokers}")
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.start_timeout = start_timeout
        cluster_id = self._cluster_id(brokers)
        ports = self._ports(brokers, port)
        voters = ",".join(f"{node}@127.0.0.1:{c}" for node, (_, c) in ports.items())
        settings = {**replicated_properties(brokers), **(properties or {})}
        self.brokers: dict[int, KafkaBroker] = {
            node: KafkaBroker(
                self.workdir / f"broker-{node}",
                port=client,
                controller_port=controller,
                properties=settings,
                start_timeout=start_timeout,
                node_id=node,
                voters=voters,
                cluster_id=cluster_id,
            )
            for node, (client, controller) in ports.items()
        }
        self.port = self.brokers[1].port

    @property
    def bootstrap(self) -> str:
        """Every broker's ``host:port``, comma-separated: clients find the live ones."""
        return ",".join(broker.bootstrap for broker in self.brokers.values())

    @property
    def servers(self) -> tuple[ServerProcess, ...]:
        return tuple(process for broker in self.brokers.values() for process in broker.servers)

    def info(self) -> ClusterInfo:
        infos = tuple(broker.info() for broker in self.brokers.values())
        return ClusterInfo(infos[0].pid, self.bootstrap, str(self.workdir), infos)

    def start(self) -> ClusterInfo:
        """Start every broker that is not running (together: the quorum needs a majority)
        and wait until each serves and the cluster's metadata lists them all."""
        launched = {node: broker.launch() for node, broker in self.brokers.items()}
        try:
            for node, offset in launched.items():
                if offset is not None:
                    self.brokers[node].wait_started(offset)
            self._wait_for_brokers()
            if any(offset is not None for offset in launched.values()):
                self.wait_in_sync()  # a broker back from the dead: caught up again first
        except BaseException:
            for node, offset in launched.items():
                if offset is not None:
                    self.brokers[node].kill()
            raise
        return self.info()

    def broker(self, node: int) -> KafkaBroker:
        try:
            return self.brokers[node]
        except KeyError:
            raise BrokerError(
                f"the cluster has brokers {sorted(self.brokers)}, no broker {node}"
            ) from None

    def kill_broker(self, node: int) -> None:
        """Crash broker ``node`` (SIGKILL), as a power loss of its machine would."""
        self.broker(node).kill()

    def stop_broker(self, node: int, timeout: float | None = None) -> None:
        """Shut broker ``node`` down cleanly (it hands its leaderships over first)."""
        self.broker(node).stop(timeout)

    def start_broker(self, node: int) -> BrokerInfo:
        """Start broker ``node`` again on its ports and log dirs; waits until it serves."""
        return self.broker(node).start()

    def running(self) -> list[int]:
        """Node ids of the brokers whose process runs."""
        return [node for node, broker in self.brokers.items() if broker.is_running()]

    def leader(self, topic: str, partition: int, timeout: float = 30.0) -> int:
        """The node id leading ``partition`` of ``topic`` (waits while it has none)."""
        admin = _admin(self.bootstrap)
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):  # a broker going away: ask again
                metadata = admin.list_topics(topic, timeout=5).topics[topic]
                if metadata.error is None:
                    found = metadata.partitions[partition].leader
                    if found in self.brokers and self.brokers[found].is_running():
                        return int(found)
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"topic {topic} partition {partition} has no live leader after {timeout:g} s"
                )
            time.sleep(0.2)

    def wait_in_sync(self, topic: str | None = None, timeout: float = 60.0) -> None:
        """Wait until every replica of every partition of ``topic`` (default: of every
        topic) is in sync again after a broker came back, so that the next kill starts from
        a full ISR."""
        admin = _admin(self.bootstrap)
        deadline = time.monotonic() + timeout
        while True:
            with contextlib.suppress(Exception):
                topics = admin.list_topics(topic, timeout=5).topics.values()
                if all(
                    t.error is None and len(p.isrs) == len(p.replicas)
                    for t in topics
                    for p in t.partitions.values()
                ):
                    return
            if time.monotonic() > deadline:
                raise BrokerError(f"topic {topic}: replicas not all in sync after {timeout:g} s")
            time.sleep(0.2)

    def attach(self, info: ClusterInfo) -> None:
        """Take over the brokers another process started (``actionjournal dev kafka stop``)."""
        for recorded in info.brokers:
            self.broker(recorded.node_id).pid = recorded.pid

    def __repr__(self) -> str:
        return f"<KafkaCluster {self.bootstrap} running={self.running()} workdir={self.workdir}>"

    # -- internals -----------------------------------------------------------------------

    def _cluster_id(self, brokers: int) -> str:
        """The cluster id every broker's storage is formatted with, kept in the work dir."""
        path = self.workdir / "cluster.json"
        try:
            saved = json.loads(path.read_text())
        except (OSError, ValueError):
            saved = None
        if isinstance(saved, dict) and "cluster_id" in saved:
            if saved.get("brokers") != brokers:
                raise BrokerError(
                    f"the Kafka cluster in {self.workdir} has {saved.get('brokers')} brokers, "
                    f"not {brokers}: use another work directory, or delete this one"
                )
            return str(saved["cluster_id"])
        cluster_id = new_cluster_id()
        path.write_text(json.dumps({"cluster_id": cluster_id, "brokers": brokers}) + "\n")
        return cluster_id

    def _ports(self, brokers: int, port: int | None) -> dict[int, tuple[int, int]]:
        """(client, controller) port of each node: saved ones first, then free ones."""
        saved: dict[int, tuple[int | None, int | None]] = {}
        for node in range(1, brokers + 1):
            listeners = read_properties(self.workdir / f"broker-{node}" / "server.properties").get(
                "listeners", ""
            )
            saved[node] = (
                listener_port(listeners, "PLAINTEXT"),
                listener_port(listeners, "CONTROLLER"),
            )
        if port is not None:
            saved[1] = (port, saved[1][1])
        taken = [p for pair in saved.values() for p in pair if p is not None]
        ports = {}
        for node, (client, controller) in saved.items():
            if client is None:
                client = free_port(*taken)
                taken.append(client)
            if controller is None:
                controller = free_port(*taken)
                taken.append(controller)
            ports[node] = (client, controller)
        return ports

    def _wait_for_brokers(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        while not answers_metadata(self.bootstrap, len(self.brokers)):
            if time.monotonic() > deadline:
                raise BrokerError(
                    f"the Kafka cluster at {self.bootstrap} did not list its "
                    f"{len(self.brokers)} brokers within {self.start_timeout:.0f} s "
                    f"(workdir {self.workdir})"
                )
            time.sleep(0.2)


def _admin(bootstrap: str) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": bootstrap})


@contextlib.contextmanager
def running_cluster(**kwargs: object) -> Iterator[KafkaCluster]:
    """A private cluster in a temp dir for the ``with`` block (3 brokers unless ``brokers=``).

    Keyword arguments go to :class:`KafkaCluster`.
    """
    with KafkaCluster(**kwargs) as cluster:  # type: ignore[arg-type]
        yield cluster
