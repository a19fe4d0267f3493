"""A real local Apache Fluss cluster (ZooKeeper, CoordinatorServer, TabletServer) for dev and tests.

Like :mod:`~actionjournal.dev.kafka`, it runs from Maven Central jars (see
:mod:`~actionjournal._maven`): only a JDK 17+ and Maven are needed, no Docker and no
distribution tarball. ZooKeeper is the copy shaded into the ``fluss-server`` jar, so one
resolution serves all three processes.

Two ways to use it:

* in-process, for tests::

      with running_cluster() as bootstrap: ...           # private cluster in a temp dir

      with FlussCluster() as cluster:                      # when the test stops servers
          cluster.kill_tablet_server(); cluster.start_tablet_server()

* detached, for development (``actionjournal dev fluss start|stop|status``): :func:`start`
  leaves the cluster running and records it in ``<cache>/dev/fluss.json`` so that
  :func:`stop` works from another process.

The bootstrap address clients use is the CoordinatorServer's.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import actionjournal._maven as maven
from actionjournal.dev.process import (
    DevProcessError,
    ServerProcess,
    alive,
    cmdline,
    dev_main,
    dev_parser,
    free_port,
    java,
    log_contains,
    port_open,
    read_state,
    start_detached,
    stop_detached,
)
from actionjournal.dev.server import DevServer

__all__ = [
    "FLUSS_VERSION",
    "ClusterInfo",
    "FlussCluster",
    "FlussClusterError",
    "fluss_jars",
    "main",
    "parser",
    "running_cluster",
    "start",
    "status",
    "stop",
]

# The server the pyfluss 1.0 client is tested against here. Fluss 1.0.x *server* jars are not
# served by the Maven Central mirror these machines use (only a POM-less fluss-client 1.0.0),
# while fluss-server 0.9.1-incubating (a shaded 85 MB jar) is, and pyfluss 1.0 speaks to it.
FLUSS_VERSION = "0.9.1-incubating"
_LOG4J_VERSION = "2.25.4"
# fluss-server leaves the slf4j binding to the distribution; without one it logs nothing.
_COORDINATES = [
    f"org.apache.fluss:fluss-server:{FLUSS_VERSION}",
    f"org.apache.logging.log4j:log4j-slf4j-impl:{_LOG4J_VERSION}",
    f"org.apache.logging.log4j:log4j-core:{_LOG4J_VERSION}",
]
_ZOOKEEPER_MAIN = (
    "org.apache.fluss.shaded.zookeeper3.org.apache.zookeeper.server.quorum.QuorumPeerMain"
)
_COORDINATOR_MAIN = "org.apache.fluss.server.coordinator.CoordinatorServer"
_TABLET_MAIN = "org.apache.fluss.server.tablet.TabletServer"
# Small heaps and a single-threaded GC: this runs next to tests on small CI boxes. Arrow and
# Fluss's memory code reflect into these packages.
_JVM_OPTS = [
    "-XX:+UseSerialGC",
    "-XX:+ExitOnOutOfMemoryError",
    "-Djava.awt.headless=true",
    "--add-opens=java.base/java.nio=ALL-UNNAMED",
    "--add-opens=java.base/java.util=ALL-UNNAMED",
    "--add-opens=java.base/java.lang=ALL-UNNAMED",
]
_HEAP = {"zookeeper": "-Xmx128m", "coordinator": "-Xmx256m", "tablet": "-Xmx512m"}
# Logged by the CoordinatorServer once a tablet server registered and got its metadata:
# from then on tables can be created and written.
_TABLET_READY = "New tablet server callback for tablet server 0"

_LOG4J2 = """\
status = warn
appender.out.type = Console
appender.out.name = out
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = out
logger.zk.name = org.apache.fluss.shaded.zookeeper3
logger.zk.level = WARN
logger.curator.name = org.apache.fluss.shaded.curator5
logger.curator.level = WARN
"""


class FlussClusterError(DevProcessError):
    """The cluster could not be started, reached or stopped."""


@dataclasses.dataclass(frozen=True)
class ClusterInfo:
    """What a running cluster is and where: the contents of the dev state file."""

    pid: int  # the CoordinatorServer's
    bootstrap: str
    workdir: str
    zookeeper_pid: int
    tablet_pid: int
    port: int
    zookeeper_port: int
    tablet_port: int
    fluss_version: str = FLUSS_VERSION


def fluss_jars() -> Path:
    """Directory of the Fluss server jars, downloaded through Maven on first use."""
    return maven.resolve(f"fluss-{FLUSS_VERSION}", _COORDINATES)


class FlussCluster(DevServer[ClusterInfo]):
    """ZooKeeper, a CoordinatorServer and TabletServer 0, bound to a work directory and ports.

    ``workdir=None`` uses a fresh temp dir, deleted by :meth:`close`. Ports default to free
    ones and are saved in the work directory, so a stopped or killed server comes back where
    clients expect it. ``server_options`` override or extend both servers' ``server.yaml``.
    """

    service = "fluss"

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        server_options: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
    ) -> None:
        super().__init__(workdir)
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        saved = _read_ports(self.workdir / "ports.json")
        self.port = port or saved.get("coordinator") or free_port()
        self.zookeeper_port = saved.get("zookeeper") or free_port(self.port)
        self.tablet_port = saved.get("tablet") or free_port(self.port, self.zookeeper_port)
        self.server_options = dict(server_options or {})
        self.start_timeout = start_timeout
        self.zookeeper = ServerProcess("ZooKeeper", self.log_path("zookeeper"))
        self.coordinator = ServerProcess("CoordinatorServer", self.log_path("coordinator"))
        self.tablet = ServerProcess("TabletServer", self.log_path("tablet"))

    @property
    def servers(self) -> tuple[ServerProcess, ...]:
        # stopped in reverse: the tablet server first, so it deregisters with the coordinator
        return (self.zookeeper, self.coordinator, self.tablet)

    def log_path(self, server: str) -> Path:
        """Log of ``zookeeper``, ``coordinator`` or ``tablet``, appended to across restarts."""
        return self.workdir / "logs" / f"{server}.log"

    def info(self) -> ClusterInfo:
        pids = (self.coordinator.pid, self.zookeeper.pid, self.tablet.pid)
        if None in pids:
            raise FlussClusterError("the cluster is not (completely) started")
        coordinator, zookeeper, tablet = pids
        return ClusterInfo(
            coordinator, self.bootstrap, str(self.workdir), zookeeper, tablet,  # type: ignore[arg-type]
            self.port, self.zookeeper_port, self.tablet_port,
        )  # fmt: skip

    def start(self) -> ClusterInfo:
        """Start what is not running: ZooKeeper, then the coordinator, then the tablet server."""
        java_bin = java()
        classpath = f"{fluss_jars()}/*"
        self._write_config()
        try:
            if not self.zookeeper.is_running():
                self._launch(self.zookeeper, java_bin, classpath, "zookeeper")
                self._wait(self.zookeeper, lambda: port_open(self.zookeeper_port))
            if not self.coordinator.is_running():
                self._launch(self.coordinator, java_bin, classpath, "coordinator")
                self._wait(self.coordinator, lambda: port_open(self.port))
            self._start_tablet(java_bin, classpath)
        except BaseException:
            self.kill()
            raise
        return self.info()

    def start_tablet_server(self) -> None:
        """Start the tablet server again (after :meth:`stop_tablet_server` or a kill)."""
        self._start_tablet(java(), f"{fluss_jars()}/*")

    def stop_tablet_server(self, timeout: float = 30.0) -> None:
        """Shut the tablet server down cleanly (SIGTERM: it flushes its logs and deregisters)."""
        self.tablet.stop(timeout)

    def kill_tablet_server(self) -> None:
        """Crash the tablet server (SIGKILL), as a power loss of its machine would."""
        self.tablet.kill()

    def restart_tablet_server(self) -> None:
        self.stop_tablet_server()
        self.start_tablet_server()

    def log_tail(self, server: str = "tablet", lines: int = 30) -> str:
        return {"zookeeper": self.zookeeper, "coordinator": self.coordinator}.get(
            server, self.tablet
        ).log_tail(lines)

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<FlussCluster {self.bootstrap} {state} workdir={self.workdir}>"

    # -- internals -----------------------------------------------------------------------

    def _write_config(self) -> None:
        ports = {"zookeeper": self.zookeeper_port, "coordinator": self.port}
        ports["tablet"] = self.tablet_port
        (self.workdir / "ports.json").write_text(json.dumps(ports) + "\n")
        (self.workdir / "log4j2.properties").write_text(_LOG4J2)
        zk = self.workdir / "zookeeper"
        zk.mkdir(exist_ok=True)
        # tickTime 500 ms allows sessions of 1-10 s. A killed tablet server's registration
        # must expire before its restarted incarnation can register again, so shorter is a
        # quicker restart; but a session shorter than a JVM's pauses on a loaded machine
        # expires under a starting tablet server, which then never becomes ready (seen at
        # load 60 with 4 s). 10 s is the longest this tickTime allows.
        (zk / "zoo.cfg").write_text(
            "# written by actionjournal.dev.fluss\n"
            f"tickTime=500\ndataDir={zk / 'data'}\nclientPort={self.zookeeper_port}\n"
            "clientPortAddress=127.0.0.1\nmaxClientCnxns=0\nadmin.enableServer=false\n"
        )
        common = {
            "zookeeper.address": f"127.0.0.1:{self.zookeeper_port}",
            "zookeeper.path.root": "/fluss",
            "zookeeper.client.session-timeout": "10s",
            "remote.data.dir": str(self.workdir / "remote"),
            "default.bucket.number": "1",
            "default.replication.factor": "1",
            "netty.server.num-worker-threads": "4",
        }
        servers = {
            "coordinator": {"bind.listeners": f"FLUSS://127.0.0.1:{self.port}"},
            "tablet": {
                "bind.listeners": f"FLUSS://127.0.0.1:{self.tablet_port}",
                "tablet-server.id": "0",
                "data.dir": str(self.workdir / "data"),
            },
        }
        for name, own in servers.items():
            conf = self.workdir / name
            conf.mkdir(exist_ok=True)
            options = {**common, **own, **self.server_options}
            body = "".join(f"{k}: {v}\n" for k, v in options.items())
            (conf / "server.yaml").write_text("# written by actionjournal.dev.fluss\n" + body)

    def _command(self, java_bin: str, classpath: str, server: str) -> list[str]:
        main, args = {
            "zookeeper": (_ZOOKEEPER_MAIN, [str(self.workdir / "zookeeper" / "zoo.cfg")]),
            "coordinator": (_COORDINATOR_MAIN, ["--configDir", str(self.workdir / "coordinator")]),
            "tablet": (_TABLET_MAIN, ["--configDir", str(self.workdir / "tablet")]),
        }[server]
        return [
            java_bin, _HEAP[server], *_JVM_OPTS,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp", classpath, main, *args,
        ]  # fmt: skip

    def _launch(self, process: ServerProcess, java_bin: str, classpath: str, server: str) -> int:
        return process.launch(self._command(java_bin, classpath, server), self.workdir)

    def _start_tablet(self, java_bin: str, classpath: str) -> None:
        if self.tablet.is_running():
            return
        coordinator_log = self.log_path("coordinator")
        offset = coordinator_log.stat().st_size if coordinator_log.exists() else 0
        self._launch(self.tablet, java_bin, classpath, "tablet")
        self._wait(
            self.tablet,
            lambda: (
                log_contains(coordinator_log, offset, _TABLET_READY) and port_open(self.tablet_port)
            ),
        )

    def _wait(self, process: ServerProcess, ready: Callable[[], bool]) -> None:
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for p in (self.zookeeper, self.coordinator, process):
                code = p.exit_code()
                if code is not None:
                    raise FlussClusterError(
                        f"Fluss {p.name} exited with code {code} during startup (workdir "
                        f"{self.workdir}); last lines of {p.log_path}:\n{p.log_tail()}"
                    )
            if ready():
                return
            time.sleep(0.1)
        raise FlussClusterError(
            f"Fluss {process.name} did not become ready within {self.start_timeout:.0f} s "
            f"(workdir {self.workdir}); last lines of {process.log_path}:\n{process.log_tail()}"
        )


@contextlib.contextmanager
def running_cluster(**kwargs: object) -> Iterator[str]:
    """Run a private cluster in a temp dir for the ``with`` block; yields its bootstrap address.

    Keyword arguments go to :class:`FlussCluster`. Use ``FlussCluster`` directly to stop or
    kill the tablet server mid-test.
    """
    with FlussCluster(**kwargs) as cluster:  # type: ignore[arg-type]
        yield cluster.bootstrap


# -- detached dev cluster (actionjournal dev fluss ...) ---------------------------------------


def start(workdir: str | os.PathLike[str] | None = None, *, port: int | None = None) -> ClusterInfo:
    """Start the detached dev cluster (or return the one already running).

    Data persists in ``workdir`` (default ``<cache>/dev/fluss``) across stop/start.
    """
    workdir = workdir or maven.cache_dir("dev", "fluss")
    return start_detached("fluss", status, lambda: FlussCluster(workdir, port=port))


def status() -> ClusterInfo | None:
    """The detached dev cluster if its coordinator runs, else None (clearing a stale state file)."""
    return read_state("fluss", ClusterInfo, _is_our_cluster)


def stop(timeout: float = 30.0) -> ClusterInfo | None:
    """Stop the detached dev cluster; returns what was stopped, or None if none was running."""

    def stop_cluster(info: ClusterInfo) -> None:
        cluster = FlussCluster(info.workdir)
        for process, pid, main in (
            (cluster.tablet, info.tablet_pid, _TABLET_MAIN),
            (cluster.coordinator, info.pid, _COORDINATOR_MAIN),
            (cluster.zookeeper, info.zookeeper_pid, _ZOOKEEPER_MAIN),
        ):
            if _runs(pid, main, info.workdir):
                process.attach(pid)
                process.stop(timeout)

    return stop_detached("fluss", status, stop_cluster)


_DESCRIPTION = (
    f"Run a local Apache Fluss {FLUSS_VERSION} cluster (ZooKeeper, CoordinatorServer, one "
    "TabletServer) for dev."
)


def parser() -> argparse.ArgumentParser:
    return dev_parser("fluss", "cluster", _DESCRIPTION)


def main(argv: Sequence[str] | None = None) -> int:
    """``actionjournal dev fluss start|stop|status``; returns a process exit code."""
    return dev_main(
        argv,
        service="fluss",
        what="cluster",
        description=_DESCRIPTION,
        start=lambda workdir, port: start(workdir, port=port),
        stop=stop,
        status=status,
    )


# -- helpers ---------------------------------------------------------------------------------


def _read_ports(path: Path) -> dict[str, int]:
    try:
        return {k: int(v) for k, v in json.loads(path.read_text()).items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _runs(pid: int, main_class: str, workdir: str) -> bool:
    """Guard against a recycled pid: the process must be ``main_class`` run from ``workdir``."""
    if not alive(pid):
        return False
    args = cmdline(pid)
    if args is None:
        return True  # no /proc (macOS): trust the state file
    return main_class.encode() in args and any(workdir.encode() in a for a in args)


def _is_our_cluster(info: ClusterInfo) -> bool:
    return _runs(info.pid, _COORDINATOR_MAIN, info.workdir)


if __name__ == "__main__":
    raise SystemExit(main())
