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
_TABLET_READY = "New tablet server callback for tablet server {}"
REPLICATED_OPTIONS = {
    # A follower's fetch that finds nothing new waits this long at the leader. Fluss 0.9.1 does
    # not answer a parked follower fetch when a write arrives, so an acks=all append waits for
    # the followers' next fetch: p50 ~500 ms with the default 500 ms. See docs/fluss.md.
    "log.replica.fetch.wait-max-time": "5ms",
    # acks=all needs this many copies (a tablet-server setting: no table property, nothing a
    # client can read): with 3 replicas, two of three lost fail appends instead of resting
    # on one copy.
    "log.replica.min-in-sync-replicas-number": "2",
    "default.replication.factor": "3",
}
"""Server settings of a cluster of several tablet servers; docs/fluss.md explains them."""

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
    tablet_pid: int  # tablet server 0's
    port: int
    zookeeper_port: int
    tablet_port: int
    fluss_version: str = FLUSS_VERSION
    tablet_pids: tuple[int, ...] = ()
    """Every tablet server's, by id (0, 1, ...)."""
    tablet_ports: tuple[int, ...] = ()


def fluss_jars() -> Path:
    """Directory of the Fluss server jars, downloaded through Maven on first use."""
    return maven.resolve(f"fluss-{FLUSS_VERSION}", _COORDINATES)


class FlussCluster(DevServer[ClusterInfo]):
    """ZooKeeper, a CoordinatorServer and ``tablet_servers`` TabletServers (ids 0..N-1),
    bound to a work directory and ports.

    ``workdir=None`` uses a fresh temp dir, deleted by :meth:`close`. Ports default to free
    ones and are saved in the work directory, so a stopped or killed server comes back where
    clients expect it. ``server_options`` override or extend every server's ``server.yaml``;
    with several tablet servers :data:`REPLICATED_OPTIONS` come first.
    """

    service = "fluss"

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        port: int | None = None,
        server_options: Mapping[str, str] | None = None,
        start_timeout: float = 120.0,
        tablet_servers: int = 1,
    ) -> None:
        super().__init__(workdir)
        if tablet_servers < 1:
            raise ValueError(f"a cluster has at least one tablet server, not {tablet_servers}")
        (self.workdir / "logs").mkdir(parents=True, exist_ok=True)
        saved = _read_ports(self.workdir / "ports.json")
        self.port = port or saved.get("coordinator") or free_port()
        self.zookeeper_port = saved.get("zookeeper") or free_port(self.port)
        taken = [self.port, self.zookeeper_port]
        self.tablet_ports: list[int] = []
        for server in range(tablet_servers):
            chosen = saved.get(_tablet_name(server)) or free_port(*taken)
            taken.append(chosen)
            self.tablet_ports.append(chosen)
        self.tablet_port = self.tablet_ports[0]
        replicated = REPLICATED_OPTIONS if tablet_servers > 1 else {}
        self.server_options = {**replicated, **(server_options or {})}
        self.start_timeout = start_timeout
        self.zookeeper = ServerProcess("ZooKeeper", self.log_path("zookeeper"))
        self.coordinator = ServerProcess("CoordinatorServer", self.log_path("coordinator"))
        self.tablets = [
            ServerProcess(f"TabletServer {n}", self.log_path(_tablet_name(n)))
            for n in range(tablet_servers)
        ]
        self.tablet = self.tablets[0]

    @property
    def servers(self) -> tuple[ServerProcess, ...]:
        # stopped in reverse: tablet servers first, so they deregister with the coordinator
        return (self.zookeeper, self.coordinator, *self.tablets)

    def log_path(self, server: str) -> Path:
        """Log of ``zookeeper``, ``coordinator``, ``tablet`` (server 0) or ``tablet-N``,
        appended to across restarts."""
        return self.workdir / "logs" / f"{server}.log"

    def info(self) -> ClusterInfo:
        tablets = [process.pid for process in self.tablets]
        coordinator, zookeeper = self.coordinator.pid, self.zookeeper.pid
        if coordinator is None or zookeeper is None or None in tablets:
            raise FlussClusterError("the cluster is not (completely) started")
        pids = tuple(pid for pid in tablets if pid is not None)
        return ClusterInfo(
            coordinator, self.bootstrap, str(self.workdir), zookeeper, pids[0],
            self.port, self.zookeeper_port, self.tablet_port,
            tablet_pids=pids, tablet_ports=tuple(self.tablet_ports),
        )  # fmt: skip

    def start(self) -> ClusterInfo:
        """Start what is not running: ZooKeeper, then the coordinator, then tablet servers."""
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
            for server in range(len(self.tablets)):
                self._start_tablet(java_bin, classpath, server)
        except BaseException:
            self.kill()
            raise
        return self.info()

    def start_tablet_server(self, server: int = 0) -> None:
        """Start tablet server ``server`` again (after :meth:`stop_tablet_server` or a kill)."""
        self._start_tablet(java(), f"{fluss_jars()}/*", server)

    def stop_tablet_server(self, timeout: float = 30.0, server: int = 0) -> None:
        """Shut a tablet server down cleanly (SIGTERM: it flushes its logs and deregisters)."""
        self.tablets[server].stop(timeout)

    def kill_tablet_server(self, server: int = 0) -> None:
        """Crash a tablet server (SIGKILL), as a power loss of its machine would."""
        self.tablets[server].kill()

    def restart_tablet_server(self, server: int = 0) -> None:
        self.stop_tablet_server(server=server)
        self.start_tablet_server(server)

    def running_tablet_servers(self) -> list[int]:
        """Ids of the tablet servers whose process runs."""
        return [n for n, process in enumerate(self.tablets) if process.is_running()]

    def log_tail(self, server: str = "tablet", lines: int = 30) -> str:
        named = {"zookeeper": self.zookeeper, "coordinator": self.coordinator}
        named.update((_tablet_name(n), process) for n, process in enumerate(self.tablets))
        return named.get(server, self.tablet).log_tail(lines)

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<FlussCluster {self.bootstrap} {state} workdir={self.workdir}>"

    # -- internals -----------------------------------------------------------------------

    def _write_config(self) -> None:
        ports = {"zookeeper": self.zookeeper_port, "coordinator": self.port}
        ports.update((_tablet_name(n), port) for n, port in enumerate(self.tablet_ports))
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
        servers: dict[str, dict[str, str]] = {
            "coordinator": {"bind.listeners": f"FLUSS://127.0.0.1:{self.port}"}
        }
        for n, port in enumerate(self.tablet_ports):
            servers[_tablet_name(n)] = {
                "bind.listeners": f"FLUSS://127.0.0.1:{port}",
                "tablet-server.id": str(n),
                "data.dir": str(self.workdir / ("data" if n == 0 else f"data-{n}")),
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
        }.get(server, (_TABLET_MAIN, ["--configDir", str(self.workdir / server)]))
        heap = _HEAP.get(server, _HEAP["tablet"])
        return [
            java_bin, heap, *_JVM_OPTS,
            f"-Dlog4j2.configurationFile={self.workdir / 'log4j2.properties'}",
            "-cp", classpath, main, *args,
        ]  # fmt: skip

    def _launch(self, process: ServerProcess, java_bin: str, classpath: str, server: str) -> int:
        return process.launch(self._command(java_bin, classpath, server), self.workdir)

    def _start_tablet(self, java_bin: str, classpath: str, server: int) -> None:
        process = self.tablets[server]
        if process.is_running():
            return
        coordinator_log = self.log_path("coordinator")
        offset = coordinator_log.stat().st_size if coordinator_log.exists() else 0
        self._launch(process, java_bin, classpath, _tablet_name(server))
        ready = _TABLET_READY.format(server)
        port = self.tablet_ports[server]
        self._wait(
            process, lambda: log_contains(coordinator_log, offset, ready) and port_open(port)
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


def start(
    workdir: str | os.PathLike[str] | None = None,
    *,
    port: int | None = None,
    tablet_servers: int | None = None,
) -> ClusterInfo:
    """Start the detached dev cluster with ``tablet_servers`` (default 1), or return the one
    already running (refused if it has another number of tablet servers).

    Data persists in ``workdir`` (default ``<cache>/dev/fluss``, ``<cache>/dev/fluss-N-tablet-
    servers`` for several) across stop/start.
    """
    running = status()
    found = len(running.tablet_pids or (running.tablet_pid,)) if running else None
    if running is not None and tablet_servers is not None and found != tablet_servers:
        raise DevProcessError(
            f"a dev Fluss cluster with {found} tablet server(s) already runs at "
            f"{running.bootstrap}: stop it first (`actionjournal dev fluss stop`), then start "
            f"{tablet_servers}"
        )
    count = tablet_servers or 1
    name = "fluss" if count == 1 else f"fluss-{count}-tablet-servers"
    workdir = workdir or maven.cache_dir("dev", name)
    return start_detached(
        "fluss", status, lambda: FlussCluster(workdir, port=port, tablet_servers=count)
    )


def status() -> ClusterInfo | None:
    """The detached dev cluster if its coordinator runs, else None (clearing a stale state file)."""
    return read_state("fluss", ClusterInfo, _is_our_cluster)


def stop(timeout: float = 30.0) -> ClusterInfo | None:
    """Stop the detached dev cluster; returns what was stopped, or None if none was running."""

    def stop_cluster(info: ClusterInfo) -> None:
        tablet_pids = info.tablet_pids or (info.tablet_pid,)
        cluster = FlussCluster(info.workdir, tablet_servers=len(tablet_pids))
        tablets = [
            (process, pid, _TABLET_MAIN)
            for process, pid in zip(cluster.tablets, tablet_pids, strict=True)
        ]
        for process, pid, main in (
            *tablets,
            (cluster.coordinator, info.pid, _COORDINATOR_MAIN),
            (cluster.zookeeper, info.zookeeper_pid, _ZOOKEEPER_MAIN),
        ):
            if _runs(pid, main, info.workdir):
                process.attach(pid)
                process.stop(timeout)

    return stop_detached("fluss", status, stop_cluster)


_DESCRIPTION = (
    f"Run a local Apache Fluss {FLUSS_VERSION} cluster (ZooKeeper, CoordinatorServer, one "
    "TabletServer or several) for dev."
)


def _start_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--tablet-servers",
        type=int,
        choices=range(1, 10),
        metavar="N",
        help="tablet servers (default 1); 3 for tables with replication 3: the servers then "
        "require 2 in-sync replicas for acks=all and answer followers' fetches within 5 ms "
        "(docs/fluss.md)",
    )


def describe(info: ClusterInfo) -> str:
    """One line per process: pid, port and whether it is alive (for ``status``)."""
    pids = info.tablet_pids or (info.tablet_pid,)
    ports = info.tablet_ports or (info.tablet_port,)
    lines = [f"coordinator: pid {info.pid}, port {info.port}, workdir {info.workdir}"]
    for n, (pid, port) in enumerate(zip(pids, ports, strict=True)):
        state = "alive" if _runs(pid, _TABLET_MAIN, info.workdir) else "NOT alive"
        lines.append(f"tablet server {n}: pid {pid}, port {port}, {state}")
    return "\n".join(lines)


def parser() -> argparse.ArgumentParser:
    return dev_parser("fluss", "cluster", _DESCRIPTION, _start_options)


def main(argv: Sequence[str] | None = None) -> int:
    """``actionjournal dev fluss start [--tablet-servers N]|stop|status``; an exit code."""
    return dev_main(
        argv,
        service="fluss",
        what="cluster",
        description=_DESCRIPTION,
        start=lambda workdir, port, tablet_servers: start(
            workdir, port=port, tablet_servers=tablet_servers
        ),
        stop=stop,
        status=status,
        start_options=_start_options,
        resume=lambda tablet_servers: start(tablet_servers=tablet_servers),
        describe=describe,  # type: ignore[arg-type]
    )


# -- helpers ---------------------------------------------------------------------------------


def _tablet_name(server: int) -> str:
    """Tablet server N's name in ports.json, logs and config dirs (server 0 is ``tablet``)."""
    return "tablet" if server == 0 else f"tablet-{server}"


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
