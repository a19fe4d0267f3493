"""A real Apache Kafka broker, or cluster of brokers (KRaft), for dev and tests.

Tests of durable execution need the real thing: acks=all, transactions, a broker that dies
mid-run and comes back on the same port with the same log dirs, a partition leader killed
while a job appends. Mocks can't show that. Brokers run from Maven Central jars (see
:mod:`actionjournal._maven`), so only a JDK 17+ and Maven are needed.

Two ways to use them:

* in-process, for tests::

      with running_broker() as bootstrap: ...          # private broker in a temp dir

      with KafkaBroker() as broker:                      # when the test kills it
          broker.kill(); broker.restart()

      with KafkaCluster(brokers=3) as cluster:           # replication, failovers
          cluster.kill_broker(cluster.leader("topic", 0))

* detached, for development (``actionjournal dev kafka start [--brokers N]|stop|status``):
  :func:`start` leaves the broker (or the N brokers) running and records them in
  ``<cache>/dev/kafka.json`` so that :func:`status` and :func:`stop` work from another process.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeAlias, cast

import actionjournal._maven as maven
from actionjournal.dev.kafka_broker import (
    KAFKA_VERSION,
    BrokerError,
    BrokerInfo,
    KafkaBroker,
    kafka_jars,
    running_broker,
)
from actionjournal.dev.kafka_cluster import ClusterInfo, KafkaCluster, running_cluster
from actionjournal.dev.process import (
    DevProcessError,
    alive,
    cmdline,
    dev_main,
    dev_parser,
    read_state,
    start_detached,
    stop_detached,
    write_state,
)

__all__ = [
    "KAFKA_VERSION",
    "BrokerError",
    "BrokerInfo",
    "ClusterInfo",
    "KafkaBroker",
    "KafkaCluster",
    "kafka_jars",
    "main",
    "parser",
    "running_broker",
    "running_cluster",
    "start",
    "status",
    "stop",
]

DevKafka: TypeAlias = BrokerInfo | ClusterInfo
"""What the dev state file records: one broker, or a cluster of several."""


def start(
    workdir: str | os.PathLike[str] | None = None,
    *,
    port: int | None = None,
    brokers: int | None = None,
) -> DevKafka:
    """Start the detached dev broker, or a cluster of ``brokers`` (or return what runs;
    ``brokers=None``: whatever runs, else one broker).

    Data persists in ``workdir`` (default ``<cache>/dev/kafka``, ``<cache>/dev/kafka-N-brokers``
    for a cluster) across stop/start. A running cluster with a dead broker gets it back.
    """
    running = status()
    if running is not None:
        return _resume(running, brokers)
    if brokers is None or brokers == 1:
        workdir = workdir or maven.cache_dir("dev", "kafka")
        server: KafkaBroker | KafkaCluster = KafkaBroker(workdir, port=port)
    else:
        workdir = workdir or maven.cache_dir("dev", f"kafka-{brokers}-brokers")
        server = KafkaCluster(workdir, brokers=brokers, port=port)
    return cast("DevKafka", start_detached("kafka", status, lambda: server))


def status() -> DevKafka | None:
    """The detached dev broker or cluster if any of its brokers runs, else None (clearing a
    stale state file)."""
    return read_state("kafka", _recorded, _is_ours)


def stop(timeout: float = 20.0) -> DevKafka | None:
    """Stop every broker of the detached dev broker or cluster; returns what was stopped, or
    None if none was running."""

    def stop_all(info: DevKafka) -> None:
        for broker in _brokers(info):
            if _is_our_broker(broker):
                server = KafkaBroker(
                    broker.workdir, port=broker.port, controller_port=broker.controller_port
                )
                server.pid = broker.pid
                server.stop(timeout)

    return cast("DevKafka | None", stop_detached("kafka", status, stop_all))  # type: ignore[misc]


def describe(info: DevKafka) -> str:
    """One line per broker: node id, pid, port and whether it is alive (for ``status``)."""
    lines = [
        f"broker {broker.node_id}: pid {broker.pid}, port {broker.port}, "
        f"{'alive' if _is_our_broker(broker) else 'NOT alive'}, workdir {broker.workdir}"
        for broker in _brokers(info)
    ]
    return "\n".join(lines)


_DESCRIPTION = (
    f"Run a local Apache Kafka {KAFKA_VERSION} broker (KRaft), or a cluster of several, for dev."
)


def _start_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--brokers",
        type=_broker_count,
        help="brokers of the cluster (default: as many as run already, else 1); 3 for "
        "replicated topics (RF 3, min ISR 2). Each is also a controller of one quorum; its "
        "ports are free ones, kept across restarts",
    )


def parser() -> argparse.ArgumentParser:
    return dev_parser("kafka", "broker", _DESCRIPTION, _start_options)


def main(argv: Sequence[str] | None = None) -> int:
    """``actionjournal dev kafka start [--brokers N]|stop|status``; returns an exit code."""
    return dev_main(
        argv,
        service="kafka",
        what="broker",
        description=_DESCRIPTION,
        start=lambda workdir, port, brokers: start(workdir, port=port, brokers=brokers),
        stop=stop,
        status=status,
        start_options=_start_options,
        resume=lambda brokers: start(brokers=brokers),
        describe=describe,  # type: ignore[arg-type]
    )


# -- helpers ---------------------------------------------------------------------------------


def _broker_count(text: str) -> int:
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of brokers") from None
    if not 1 <= count <= 9:
        raise argparse.ArgumentTypeError(f"{text!r}: between 1 and 9 brokers")
    return count


def _resume(running: DevKafka, brokers: int | None) -> DevKafka:
    """What ``start`` does when brokers run: the same count is reused (a dead broker of a
    cluster started again); another count is refused."""
    found = _brokers(running)
    if brokers is not None and len(found) != brokers:
        raise DevProcessError(
            f"a dev Kafka of {len(found)} broker{'s' if len(found) > 1 else ''} already runs "
            f"at {running.bootstrap}: stop it first (`actionjournal dev kafka stop`), then "
            f"start {brokers}"
        )
    if isinstance(running, BrokerInfo) or all(_is_our_broker(b) for b in found):
        return running
    cluster = KafkaCluster(running.workdir, brokers=len(found))
    alive_ones = tuple(b for b in found if _is_our_broker(b))
    cluster.attach(ClusterInfo(running.pid, running.bootstrap, running.workdir, alive_ones))
    print("starting the brokers that are not running...", file=sys.stderr, flush=True)
    cluster.start()
    info = cluster.detach()
    write_state("kafka", info)
    return info


def _recorded(**fields: Any) -> DevKafka:
    if "brokers" in fields:
        return ClusterInfo.from_json(fields)
    return BrokerInfo(**fields)


def _brokers(info: DevKafka) -> tuple[BrokerInfo, ...]:
    return info.brokers if isinstance(info, ClusterInfo) else (info,)


def _is_ours(info: DevKafka) -> bool:
    return any(_is_our_broker(broker) for broker in _brokers(info))


def _is_our_broker(info: BrokerInfo) -> bool:
    """Guard against a recycled pid: the process must be kafka.Kafka with our config."""
    if not alive(info.pid):
        return False
    args = cmdline(info.pid)
    if args is None:
        return True  # no /proc (macOS): trust the state file
    config = str(Path(info.workdir) / "server.properties").encode()
    return b"kafka.Kafka" in args and config in args
