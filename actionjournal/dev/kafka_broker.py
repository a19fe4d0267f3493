"""One real Apache Kafka broker process (KRaft, combined broker+controller) for dev and tests.

Tests of durable execution need the real thing: acks=all, transactions, a broker that dies
mid-run and comes back on the same port with the same log dirs. Mocks can't show that. The
broker runs from Maven Central jars (see :mod:`actionjournal._maven`), so only a JDK 17+
and Maven are needed.

Two ways to use it:

* in-process, for tests::

      with running_broker() as bootstrap: ...          # private broker in a temp dir

      with KafkaBroker() as broker:                      # when the test kills it
          broker.kill(); broker.restart()

Several brokers form one cluster in :mod:`~actionjournal.dev.kafka_cluster`; the detached dev
broker or cluster (``actionjournal dev kafka``) is in :mod:`~actionjournal.dev.kafka`.
"""

from __future__ import annotations

import base64
import contextlib
import dataclasses
import os
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path

import actionjournal._maven as maven
from actionjournal.dev.process import (
    DevProcessError,
    ServerProcess,
    free_port,
    java,
    log_contains,
    port_open,
)
from actionjournal.dev.server import DevServer

__all__ = [
    "KAFKA_VERSION",
    "BrokerError",
    "BrokerInfo",
    "KafkaBroker",
    "kafka_jars",
    "listener_port",
    "new_cluster_id",
    "read_properties",
    "running_broker",
]

KAFKA_VERSION = "4.1.1"
# kafka_2.13 leaves the slf4j binding to the distribution; without it the broker logs nothing.
_COORDINATES = [
    f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
    "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
]
# Small heap and a single-threaded GC: this runs next to tests on small CI boxes.
JVM_OPTS = [
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
]
_READY_LINE = "Kafka Server started"  # logged by KafkaRaftServer once the broker is unfenced

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.state.name = state.change.logger
logger.state.level = WARN
logger.request.name = kafka.request.logger
logger.request.level = WARN
"""


class BrokerError(DevProcessError):
    """The broker could not be started, reached or stopped."""


@dataclasses.dataclass(frozen=True)
class BrokerInfo:
    """What a running broker is and where: the contents of the dev state file."""

    pid: int
    bootstrap: str
    workdir: str
    port: int
    controller_port: int
    kafka_version: str = KAFKA_VERSION
    node_id: int = 1


def kafka_jars() -> Path:
    """Directory of the Kafka server jars, downloaded through Maven on first use."""
    return maven.resolve(f"kafka-{KAFKA_VERSION}", _COORDINATES)


class KafkaBroker(DevServer[BrokerInfo]):
    """One KRaft broker process bound to a work directory and a fixed pair of ports.

    ``workdir=None`` uses a fresh temp dir, deleted by :meth:`close`. Ports default to free
    ones; once chosen they stick for the life of the work directory (they are read back from
    its ``server.properties``), so a killed broker restarts where clients expect it.
    ``properties`` override or extend the generated broker config.
    """

    service = "kafka"
    stop_timeout = 20.0

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        controller_port: int | None = None,
        properties: Mapping[str, str] | None = None,
        start_timeout: float = 60.0,
        node_id: int = 1,
        voters: str | None = None,
        cluster_id: str | None = None,
    ) -> None:
        super().__init__(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        saved = read_properties(self.config_path)
        saved_port = listener_port(saved.get("listeners", ""), "PLAINTEXT")
        saved_controller = listener_port(saved.get("listeners", ""), "CONTROLLER")
        self.port = port or saved_port or free_port()
        self.controller_port = controller_port or saved_controller or free_port(self.port)
        self.properties = dict(properties or {})
        self.start_timeout = start_timeout
        self.node_id = node_id
        self.voters = voters or f"{node_id}@127.0.0.1:{self.controller_port}"
        """The controller quorum (``controller.quorum.voters``): this broker alone by default."""
        self.cluster_id = cluster_id
        """Storage is formatted with it; every broker of one cluster needs the same one."""
        self._process = ServerProcess(f"broker {node_id}", self.log_path)

    @property
    def servers(self) -> tuple[ServerProcess, ...]:
        return (self._process,)

    @property
    def pid(self) -> int | None:
        return self._process.pid

    @pid.setter
    def pid(self, pid: int) -> None:
        """Take over a broker that another process started (``actionjournal dev kafka stop``)."""
        self._process.attach(pid)

    @property
    def config_path(self) -> Path:
        return self.workdir / "server.properties"

    @property
    def log_path(self) -> Path:
        """Broker log (log4j output and JVM stdout/stderr), appended to across restarts."""
        return self.workdir / "kafka.log"

    @property
    def data_dir(self) -> Path:
        return self.workdir / "data"

    def info(self) -> BrokerInfo:
        if self.pid is None:
            raise BrokerError("broker is not started")
        return BrokerInfo(
            self.pid, self.bootstrap, str(self.workdir), self.port, self.controller_port,
            node_id=self.node_id,
        )  # fmt: skip

    def start(self) -> BrokerInfo:
        """Launch the broker (formatting storage on first start) and wait until it serves."""
        log_offset = self.launch()
        if log_offset is not None:
            self.wait_started(log_offset)
        return self.info()

    def launch(self) -> int | None:
        """Start the broker process without waiting for it: the log offset its output begins
        at, or None when it runs already. Brokers of one quorum start together this way."""
        if self.is_running():
            return None
        self._process.forget()  # a previous process that died on its own
        java_bin = java()
        jars = kafka_jars()
        classpath = f"{jars}/*"
        self._write_config()
        if not (self.data_dir / "meta.properties").exists():
            self._format(java_bin, classpath)
        cmd = [
            java_bin, *JVM_OPTS,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp", classpath, "kafka.Kafka", str(self.config_path),
        ]  # fmt: skip
        return self._process.launch(cmd, self.workdir)

    def wait_started(self, log_offset: int) -> None:
        """Wait until a :meth:`launch` ed broker serves; kill it if it does not."""
        try:
            self._wait_ready(log_offset)
        except BaseException:
            self.kill()
            raise

    def restart(self) -> BrokerInfo:
        """Start again on the same ports and log dirs, stopping first if still running."""
        self.stop()
        return self.start()

    def log_tail(self, lines: int = 30) -> str:
        return self._process.log_tail(lines)

    def __repr__(self) -> str:
        state = f"pid={self.pid}" if self.pid else "stopped"
        return f"<KafkaBroker {self.bootstrap} {state} workdir={self.workdir}>"

    # -- internals -----------------------------------------------------------------------

    def _write_config(self) -> None:
        p, c = self.port, self.controller_port
        props = {
            "process.roles": "broker,controller",
            "node.id": str(self.node_id),
            "controller.quorum.voters": self.voters,
            "listeners": f"PLAINTEXT://127.0.0.1:{p},CONTROLLER://127.0.0.1:{c}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{p}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.data_dir),
            # Single node: every internal topic gets one replica.
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "default.replication.factor": "1",
            "min.insync.replicas": "1",
            "num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0",
            # After a SIGKILL the restarted broker may only re-register once the old
            # incarnation's session expires: keep that wait short (default 9 s).
            "broker.session.timeout.ms": "4000",
            "broker.heartbeat.interval.ms": "500",
            # Small files and buffers: dev data is tiny and the heap is 512 MB.
            "log.segment.bytes": str(16 * 1024 * 1024),
            "log.cleaner.dedupe.buffer.size": str(16 * 1024 * 1024),
            "num.network.threads": "2",
            "num.io.threads": "4",
        }
        props.update(self.properties)
        body = "".join(f"{k}={v}\n" for k, v in props.items())
        self.config_path.write_text("# written by actionjournal.dev.kafka\n" + body)
        (self.workdir / "log4j2.properties").write_text(_LOG4J2)

    def _format(self, java: str, classpath: str) -> None:
        # Kafka 4 refuses to start on unformatted storage. With a static voter set
        # (controller.quorum.voters) format takes just a cluster id, not --standalone.
        cmd = [
            java, "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp", classpath, "kafka.tools.StorageTool", "format",
            "--cluster-id", self.cluster_id or new_cluster_id(),
            "--config", str(self.config_path),
        ]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode != 0:
            output = (proc.stdout + proc.stderr).strip().splitlines()
            message = "\n".join(x for x in output if not x.startswith("\tat "))  # no stack
            raise BrokerError(
                f"formatting Kafka storage in {self.data_dir} failed (exit {proc.returncode}); "
                f"check the broker properties in {self.config_path}. Output:\n{message}"
            )

    def _wait_ready(self, log_offset: int) -> None:
        deadline = time.monotonic() + self.start_timeout
        started = False
        while time.monotonic() < deadline:
            code = self._process.exit_code()
            if code is not None:
                raise BrokerError(
                    f"Kafka broker exited with code {code} during startup "
                    f"(workdir {self.workdir}); last log lines:\n{self.log_tail()}"
                )
            started = started or log_contains(self.log_path, log_offset, _READY_LINE)
            if started and port_open(self.port) and answers_metadata(self.bootstrap):
                return
            time.sleep(0.2)
        raise BrokerError(
            f"Kafka broker did not start within {self.start_timeout:.0f} s on {self.bootstrap} "
            f"(workdir {self.workdir}); last log lines:\n{self.log_tail()}"
        )


@contextlib.contextmanager
def running_broker(**kwargs: object) -> Iterator[str]:
    """Run a private broker in a temp dir for the ``with`` block; yields its bootstrap address.

    Keyword arguments go to :class:`KafkaBroker`. Use ``KafkaBroker`` directly to kill or
    restart the broker mid-test.
    """
    with KafkaBroker(**kwargs) as broker:  # type: ignore[arg-type]
        yield broker.bootstrap


# -- helpers ---------------------------------------------------------------------------------


def new_cluster_id() -> str:
    # Same shape as `kafka-storage.sh random-uuid` (base64url UUID without padding) without
    # paying for a JVM start. Kafka rejects ids starting with "-" (they look like options).
    while True:
        cid = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not cid.startswith("-"):
            return cid


def answers_metadata(bootstrap: str, brokers: int = 1) -> bool:
    """Whether the cluster's metadata lists ``brokers`` brokers, when confluent-kafka is
    installed to ask; else trust the log line."""
    try:
        from confluent_kafka.admin import AdminClient
    except ImportError:
        return True
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=5)
    except Exception:
        return False
    return len(md.brokers) >= brokers


def read_properties(path: Path) -> dict[str, str]:
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return {}
    pairs = (line.split("=", 1) for line in lines if "=" in line and not line.startswith("#"))
    return {k.strip(): v.strip() for k, v in pairs}


def listener_port(listeners: str, name: str) -> int | None:
    for listener in listeners.split(","):
        if listener.startswith(f"{name}://"):
            return int(listener.rsplit(":", 1)[1])
    return None
