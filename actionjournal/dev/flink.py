"""A local Apache Flink session cluster (a JobManager and TaskManagers) for dev and tests.

The apache-flink wheel ships a whole Flink distribution (``pyflink/bin``, ``lib``,
``conf``): the cluster runs from it, with its own configuration, logs, pid files,
checkpoints and savepoints in a work directory (not inside the virtualenv), free ports,
small memory sizes, and ``python.executable`` set to this interpreter so the Python
workers import what this virtualenv has. Jobs go to it with PyFlink's own ``flink`` CLI
(``flink run --python job.py ...``) once :meth:`FlinkCluster.env` is in the environment.

Every process of the cluster, and every Python worker its TaskManagers start, carries
``ACTIONJOURNAL_DEV_FLINK=<workdir>`` in its environment: :meth:`FlinkCluster.stop` ends
them all by pid, including TaskManagers started after a loss and the Python workers a
``kill -9`` of their TaskManager leaves behind without a parent. Finding them reads
``/proc``; elsewhere only the recorded JobManager and TaskManager pids are stopped.

Two ways to use it, like :mod:`~actionjournal.dev.kafka`: in-process for tests
(``with FlinkCluster() as cluster: ... cluster.kill_taskmanager("tm-0")``), or detached
(``actionjournal dev flink start|stop|status|env``), recorded in ``<cache>/dev/flink.json``.

One job, longer than 500 lines: the local Flink cluster. Most of it is finding and ending
its processes (TaskManagers replaced after a loss, Python workers left without a parent),
which the in-process class and the detached command share.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import importlib.util
import json
import os
import re
import shutil
import signal
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import actionjournal._maven as maven
from actionjournal.dev.process import (
    DevProcessError,
    ServerProcess,
    alive,
    cmdline,
    dev_main,
    dev_parser,
    end_processes,
    free_port,
    read_state,
    send_signal,
    start_detached,
    stop_detached,
    write_state,
)
from actionjournal.dev.server import DevServer

__all__ = [
    "MARKER",
    "STATE_BACKENDS",
    "ClusterInfo",
    "FlinkCluster",
    "FlinkClusterError",
    "flink_home",
    "main",
    "parser",
    "resume",
    "start",
    "status",
    "stop",
]

MARKER = "ACTIONJOURNAL_DEV_FLINK"  # in the environment of every process of a cluster
_JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
_TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
STATE_BACKENDS: dict[str, dict[str, str]] = {
    "hashmap": {"state.backend.type": "hashmap"},
    # Incremental: a checkpoint uploads the RocksDB files written since the last one, so
    # its cost follows what changed, not how many keys the job holds (docs/deploying.md).
    "rocksdb": {"state.backend.type": "rocksdb", "execution.checkpointing.incremental": "true"},
}
"""Flink settings of each state backend the dev cluster and ``local_env`` offer."""


class FlinkClusterError(DevProcessError):
    """The cluster could not be started, reached or stopped."""


@dataclasses.dataclass(frozen=True)
class ClusterInfo:
    """What a running cluster is and where: the contents of the dev state file."""

    pid: int  # the JobManager's
    bootstrap: str  # the REST address (web UI, `flink` CLI)
    workdir: str
    port: int
    rpc_port: int
    taskmanagers: dict[str, int]  # resource id -> pid
    flink_version: str = ""


def flink_home() -> Path:
    """The Flink distribution inside the installed apache-flink wheel."""
    spec = importlib.util.find_spec("pyflink")
    if spec is None or spec.origin is None:
        raise FlinkClusterError(
            "PyFlink is not installed: pip install 'actionjournal[flink]' (apache-flink)"
        )
    home = Path(spec.origin).parent
    if not (home / "bin" / "jobmanager.sh").exists():
        raise FlinkClusterError(f"no Flink distribution in {home} (bin/jobmanager.sh missing)")
    return home


def flink_version() -> str:
    return importlib.metadata.version("apache-flink")


class FlinkCluster(DevServer[ClusterInfo]):
    """A JobManager and ``taskmanagers`` TaskManagers bound to a work directory.

    ``workdir=None`` uses a fresh temp dir, deleted by :meth:`close`. Ports default to free
    ones, saved in the work directory. ``options`` override or extend the generated
    ``config.yaml`` (flat keys, e.g. ``{"heartbeat.timeout": "30s"}``); they are saved in the
    work directory too, and ``None`` takes the saved ones (a cluster started again, or
    attached to, keeps its settings).
    """

    service = "flink"

    def __init__(
        self,
        workdir: str | os.PathLike[str] | None = None,
        *,
        taskmanagers: int = 2,
        slots: int = 2,
        port: int | None = None,
        options: Mapping[str, str] | None = None,
        start_timeout: float = 180.0,
    ) -> None:
        super().__init__(workdir)
        for sub in ("conf", "log", "pids", "tmp"):
            (self.workdir / sub).mkdir(parents=True, exist_ok=True)
        saved = _read_json(self.workdir / "ports.json")
        self.port = port or saved.get("rest") or free_port()
        self.rpc_port = saved.get("rpc") or free_port(self.port)
        self.taskmanager_count = taskmanagers
        self.slots = slots
        saved_options = _read_json(self.workdir / "options.json")
        self.options = dict(saved_options if options is None else options)
        self.start_timeout = start_timeout
        self.jobmanager = ServerProcess("JobManager", self.log_dir / "jobmanager.out")
        self.taskmanagers: dict[str, ServerProcess] = {}

    # -- where things are ------------------------------------------------------------------

    @property
    def servers(self) -> tuple[ServerProcess, ...]:
        return (self.jobmanager, *self.taskmanagers.values())

    @property
    def rest_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def conf_dir(self) -> Path:
        return self.workdir / "conf"

    @property
    def log_dir(self) -> Path:
        return self.workdir / "log"

    @property
    def checkpoint_dir(self) -> Path:
        return self.workdir / "checkpoints"

    @property
    def savepoint_dir(self) -> Path:
        return self.workdir / "savepoints"

    def env(self) -> dict[str, str]:
        """What a shell needs to use PyFlink's ``flink`` CLI against this cluster."""
        return {
            "FLINK_CONF_DIR": str(self.conf_dir),
            "FLINK_LOG_DIR": str(self.log_dir),
            "PATH": f"{flink_home() / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        }

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> ClusterInfo:
        """Start what is not running: the JobManager, then TaskManagers up to the count.

        On a running cluster this replaces lost TaskManagers (under new resource ids) and
        ends the processes they left behind (:meth:`orphans`).
        """
        home = flink_home()
        self._write_config(home)
        fresh = not self.jobmanager.is_running()
        before = set(self.taskmanagers)
        try:
            if fresh:
                cmd = [str(home / "bin" / "jobmanager.sh"), "start-foreground"]
                self.jobmanager.launch(cmd, self.workdir, self._process_env())
            for name in [n for n, p in self.taskmanagers.items() if not p.is_running()]:
                del self.taskmanagers[name]
            for _ in range(self.taskmanager_count - len(self.taskmanagers)):
                self.start_taskmanager(wait=False)
            self._wait_registered()
            self.end_orphans()
        except BaseException:
            if fresh:
                self.kill()
            else:  # a running cluster keeps running; only what this call started goes
                for name in set(self.taskmanagers) - before:
                    self.kill_taskmanager(name)
            raise
        return self.info()

    def start_taskmanager(self, wait: bool = True) -> str:
        """Start one more TaskManager; returns its resource id (``tm-<n>``, never reused)."""
        used = [int(m) for p in self.log_dir.glob("taskmanager-tm-*.out") for m in _tm_number(p)]
        name = f"tm-{max(used, default=-1) + 1}"
        process = ServerProcess(f"TaskManager {name}", self.log_dir / f"taskmanager-{name}.out")
        cmd = [
            str(flink_home() / "bin" / "taskmanager.sh"), "start-foreground",
            f"-Dtaskmanager.resource-id={name}",
        ]  # fmt: skip
        process.launch(cmd, self.workdir, self._process_env())
        self.taskmanagers[name] = process
        if wait:
            self._wait_registered()
        return name

    def kill_taskmanager(self, name: str) -> None:
        """Crash one TaskManager JVM (SIGKILL), as a lost machine would. Its Python workers
        are not signalled: they may outlive it (:meth:`orphans`); :meth:`stop` ends them."""
        self.taskmanagers.pop(name).kill()

    def stop(self, timeout: float | None = None) -> None:
        """Stop the TaskManagers, then the JobManager (SIGTERM, then SIGKILL), then every
        other process of this cluster still alive (orphaned Python workers)."""
        timeout = self.stop_timeout if timeout is None else timeout
        for process in [*self.taskmanagers.values(), self.jobmanager]:
            if process.pid is not None:
                send_signal(process.pid, signal.SIGTERM)
        for process in [*self.taskmanagers.values(), self.jobmanager]:
            process.stop(timeout)
        self.taskmanagers.clear()
        end_processes(self.processes(), timeout=10)

    def kill(self) -> None:
        """Crash every process of the cluster (SIGKILL)."""
        for process in [*self.taskmanagers.values(), self.jobmanager]:
            if process.pid is not None:
                send_signal(process.pid, signal.SIGKILL)
                process.wait_exit(10)
                process.forget()
        self.taskmanagers.clear()
        end_processes(self.processes(), timeout=0)

    def is_running(self) -> bool:
        return self.jobmanager.is_running()

    def attach(self, info: ClusterInfo) -> None:
        """Manage a cluster started by another process (from its :class:`ClusterInfo`)."""
        self.jobmanager.attach(info.pid)
        for name, pid in info.taskmanagers.items():
            process = ServerProcess(f"TaskManager {name}", self.log_dir / f"taskmanager-{name}.out")
            if _runs(pid, _TASKMANAGER_MAIN, str(self.workdir)):
                process.attach(pid)
                self.taskmanagers[name] = process

    def info(self) -> ClusterInfo:
        if self.jobmanager.pid is None:
            raise FlinkClusterError("the cluster is not started")
        tms = {n: p.pid for n, p in self.taskmanagers.items() if p.pid is not None}
        return ClusterInfo(
            self.jobmanager.pid, self.bootstrap, str(self.workdir), self.port, self.rpc_port,
            tms, flink_version(),
        )  # fmt: skip

    # -- what runs ---------------------------------------------------------------------------

    def processes(self) -> list[int]:
        """Pids of every live process of this cluster: JVMs, Python workers, their shells."""
        found = set()
        for process in [self.jobmanager, *self.taskmanagers.values()]:
            if process.pid is not None and alive(process.pid):
                found.add(process.pid)
        marker = f"{MARKER}={self.workdir}".encode()
        for entry in Path("/proc").glob("[0-9]*"):
            try:
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.add(int(entry.name))
            except OSError:
                continue
        return sorted(pid for pid in found if pid != os.getpid() and alive(pid))

    def orphans(self) -> list[int]:
        """Processes of this cluster no live JobManager or TaskManager started, transitively:
        typically the Python workers (and their shells) of a killed TaskManager."""
        ours = self.processes()
        servers = {p.pid for p in [self.jobmanager, *self.taskmanagers.values()]}
        served = {pid for pid in ours if pid in servers}
        parents = {pid: _parent(pid) for pid in ours}
        changed = True
        while changed:
            grown = {pid for pid in ours if parents[pid] in served} - served
            served |= grown
            changed = bool(grown)
        return [pid for pid in ours if pid not in served]

    def end_orphans(self, timeout: float = 10.0) -> list[int]:
        """End :meth:`orphans` (SIGTERM, then SIGKILL); returns their pids."""
        orphans = self.orphans()
        end_processes(orphans, timeout)
        return orphans

    def rest(self, path: str, method: str = "GET", body: Any = None) -> Any:
        """Call the JobManager's REST API; returns the decoded JSON answer."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.rest_url + path, data=data, method=method,
            headers={"Content-Type": "application/json"},
        )  # fmt: skip
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise FlinkClusterError(
                f"{method} {path} on the JobManager at {self.rest_url} failed: HTTP {exc.code} "
                f"{exc.read()[:2000].decode('utf-8', 'replace')}"
            ) from None

    def log_tail(self, server: str = "jobmanager", lines: int = 30) -> str:
        process = self.taskmanagers.get(server, self.jobmanager)
        return process.log_tail(lines)

    def __repr__(self) -> str:
        state = "running" if self.is_running() else "stopped"
        return f"<FlinkCluster {self.rest_url} {state} workdir={self.workdir}>"

    # -- internals ---------------------------------------------------------------------------

    def _process_env(self) -> dict[str, str]:
        return {
            MARKER: str(self.workdir),
            "FLINK_CONF_DIR": str(self.conf_dir),
            "FLINK_LOG_DIR": str(self.log_dir),
            "FLINK_PID_DIR": str(self.workdir / "pids"),
        }

    def _is_server(self, pid: int) -> bool:
        return pid in {p.pid for p in [self.jobmanager, *self.taskmanagers.values()]}

    def _write_config(self, home: Path) -> None:
        (self.workdir / "ports.json").write_text(
            json.dumps({"rest": self.port, "rpc": self.rpc_port}) + "\n"
        )
        (self.workdir / "options.json").write_text(json.dumps(self.options) + "\n")
        for path in (home / "conf").iterdir():
            if path.suffix in (".properties", ".xml"):
                shutil.copy(path, self.conf_dir / path.name)
        options = {
            # The distribution's JVM flags (module opens Flink needs on Java 17).
            "env.java.opts.all": _java_opts(home / "conf" / "config.yaml"),
            "jobmanager.rpc.address": "127.0.0.1",
            "jobmanager.rpc.port": str(self.rpc_port),
            "jobmanager.bind-host": "127.0.0.1",
            "rest.address": "127.0.0.1",
            "rest.bind-address": "127.0.0.1",
            "rest.port": str(self.port),
            "taskmanager.host": "127.0.0.1",
            "taskmanager.bind-host": "127.0.0.1",
            # Small: this runs next to tests on small machines.
            "jobmanager.memory.process.size": "1024m",
            "taskmanager.memory.process.size": "1300m",
            "taskmanager.numberOfTaskSlots": str(self.slots),
            "parallelism.default": "1",
            # Workers and job clients run this interpreter, which has actionjournal.
            "python.executable": sys.executable,
            "python.client.executable": sys.executable,
            "io.tmp.dirs": str(self.workdir / "tmp"),
            "execution.checkpointing.dir": self.checkpoint_dir.as_uri(),
            "execution.checkpointing.savepoint-dir": self.savepoint_dir.as_uri(),
            # A killed TaskManager is noticed after two failed heartbeats (2 x interval).
            "heartbeat.interval": "2s",
            "heartbeat.timeout": "20s",
            # Loaded small machines start an RPC service or answer an RPC in more than
            # Flink's default 10 s.
            "pekko.startup-timeout": "60s",
            "pekko.ask.timeout": "30s",
        }
        options.update(self.options)
        body = "".join(f"{key}: {json.dumps(value)}\n" for key, value in options.items())
        (self.conf_dir / "config.yaml").write_text("# written by actionjournal.dev.flink\n" + body)

    def _wait_registered(self) -> None:
        """Until the JobManager answers and every running TaskManager registered with it."""
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            for process in [self.jobmanager, *self.taskmanagers.values()]:
                code = process.exit_code()
                if code is not None:
                    raise FlinkClusterError(
                        f"Flink {process.name} exited with code {code} during startup "
                        f"(workdir {self.workdir}); last lines of {process.log_path}:\n"
                        f"{process.log_tail()}"
                    )
            try:
                registered = {tm["id"] for tm in self.rest("/taskmanagers")["taskmanagers"]}
            except (OSError, FlinkClusterError, ValueError, KeyError):
                registered = set()
            if set(self.taskmanagers) <= registered:
                return
            time.sleep(0.5)
        raise FlinkClusterError(
            f"the Flink cluster did not start within {self.start_timeout:.0f} s (workdir "
            f"{self.workdir}); last lines of {self.jobmanager.log_path}:\n"
            f"{self.jobmanager.log_tail()}"
        )


# -- detached dev cluster (actionjournal dev flink ...) ---------------------------------------


def start(
    workdir: str | os.PathLike[str] | None = None,
    *,
    port: int | None = None,
    taskmanagers: int = 2,
    state_backend: str | None = None,
    config: Sequence[str] = (),
) -> ClusterInfo:
    """Start the detached dev cluster, or bring a running one back to ``taskmanagers``.

    Checkpoints, savepoints and logs persist in ``workdir`` (default ``<cache>/dev/flink``),
    and so do the settings: ``state_backend`` (a name of :data:`STATE_BACKENDS`) and
    ``config`` (``KEY=VALUE`` Flink settings) when either is given, else those it last ran
    with.
    """
    if status() is not None:
        return resume(taskmanagers, state_backend, config)
    workdir = workdir or maven.cache_dir("dev", "flink")
    wanted = settings(state_backend, config)
    return start_detached(
        "flink",
        status,
        lambda: FlinkCluster(
            workdir,
            taskmanagers=taskmanagers,
            port=port,
            options=wanted,
        ),
    )


def resume(
    taskmanagers: int = 2, state_backend: str | None = None, config: Sequence[str] = ()
) -> ClusterInfo:
    """The running dev cluster with lost TaskManagers replaced (up to ``taskmanagers``) and
    the processes they left behind ended, saying so on stderr. Settings cannot change while
    it runs: other ones than it runs with are refused."""
    current = status()
    if current is None:
        raise FlinkClusterError("no dev cluster running: actionjournal dev flink start")
    cluster = _attached(current, taskmanagers)
    running = {**STATE_BACKENDS["hashmap"], **cluster.options}  # Flink's default backend
    for key, value in (settings(state_backend, config) or {}).items():
        if running.get(key, value) != value:
            raise FlinkClusterError(
                f"the dev cluster runs with {key}: {running[key]}, not {value}: settings "
                "change only with a new start (`actionjournal dev flink stop`, then start)"
            )
    lost = sorted(set(current.taskmanagers) - set(cluster.taskmanagers))
    orphans = cluster.orphans()
    info = cluster.start()
    cluster.detach()
    write_state("flink", info)
    started = sorted(set(info.taskmanagers) - set(current.taskmanagers))
    if lost:
        print(
            f"TaskManager {', '.join(lost)} was lost: replaced by {', '.join(started)}",
            file=sys.stderr,
        )
    elif started:
        print(f"started TaskManager {', '.join(started)}", file=sys.stderr)
    if orphans:
        print(
            f"ended {len(orphans)} process(es) a lost TaskManager left behind: "
            f"pid {', '.join(map(str, orphans))}",
            file=sys.stderr,
        )
    return info


def settings(state_backend: str | None, config: Sequence[str]) -> dict[str, str] | None:
    """The Flink settings ``start`` was asked for (None: none, keep the saved ones)."""
    if state_backend is None and not config:
        return None
    wanted = dict(STATE_BACKENDS[state_backend]) if state_backend else {}
    for item in config:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise FlinkClusterError(f"--config {item!r}: write it as KEY=VALUE")
        wanted[key.strip()] = value.strip()
    return wanted


def status() -> ClusterInfo | None:
    """The detached dev cluster if its JobManager runs, else None (clearing a stale file)."""
    return read_state("flink", ClusterInfo, _is_our_cluster)


def stop(timeout: float = 30.0) -> ClusterInfo | None:
    """Stop the detached dev cluster and every process of it; None if none was running."""
    return stop_detached("flink", status, lambda info: _attached(info).stop(timeout))


def print_env() -> int:
    """``actionjournal dev flink env``: shell exports for PyFlink's ``flink`` CLI."""
    info = status()
    if info is None:
        print("error: no dev Flink cluster running: actionjournal dev flink start", file=sys.stderr)
        return 1
    env = FlinkCluster(info.workdir).env()
    env["PATH"] = env["PATH"].split(os.pathsep, 1)[0]  # PyFlink's bin/, put before $PATH
    for name, value in env.items():
        print(f"export {name}={_shell_quote(value)}" + (':"$PATH"' if name == "PATH" else ""))
    return 0


_DESCRIPTION = (
    "Run a local Apache Flink session cluster (a JobManager and TaskManagers) from the "
    "Flink distribution inside the installed PyFlink, for dev; submit jobs to it with "
    "PyFlink's flink CLI (see docs/deploying.md)."
)
_ENV_HELP = 'print shell exports for PyFlink\'s flink CLI: eval "$(actionjournal dev flink env)"'


def _count(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        count = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if count < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: the cluster needs at least 1 TaskManager")
    return count


def _start_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--taskmanagers",
        type=_count,
        default=2,
        help="TaskManagers, of 2 slots each (default: 2); on a running cluster, lost ones are "
        "replaced up to this number",
    )
    parser.add_argument(
        "--state-backend",
        choices=sorted(STATE_BACKENDS),
        help="Flink's state backend for the jobs: rocksdb (with incremental checkpoints) or "
        "hashmap (Flink's default); default: what the cluster last ran with",
    )
    parser.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Flink setting for the cluster's config.yaml (repeatable), e.g. "
        "--config state.backend.rocksdb.timer-service.factory=HEAP",
    )


def parser() -> argparse.ArgumentParser:
    return dev_parser("flink", "cluster", _DESCRIPTION, _start_options, {"env": _ENV_HELP})


def main(argv: Sequence[str] | None = None) -> int:
    """``actionjournal dev flink start|stop|status|env``; returns a process exit code."""
    return dev_main(
        argv,
        service="flink",
        what="cluster",
        description=_DESCRIPTION,
        start=lambda workdir, port, **options: start(workdir, port=port, **options),
        stop=stop,
        status=status,
        start_options=_start_options,
        commands={"env": (_ENV_HELP, print_env)},
        resume=resume,
    )


# -- helpers ---------------------------------------------------------------------------------


def _attached(info: ClusterInfo, taskmanagers: int | None = None) -> FlinkCluster:
    cluster = FlinkCluster(
        info.workdir, port=info.port, taskmanagers=taskmanagers or len(info.taskmanagers)
    )
    cluster.attach(info)
    return cluster


def _java_opts(config: Path) -> str:
    """``env.java.opts.all`` of the distribution's config.yaml (a nested key there)."""
    match = re.search(r"^\s+all:\s*(.+)$", config.read_text(), re.MULTILINE)
    return match.group(1).strip() if match else ""


def _shell_quote(value: str) -> str:
    return "'" + value.replace("'", "'\\''") + "'"


def _tm_number(path: Path) -> list[str]:
    return re.findall(r"taskmanager-tm-(\d+)\.out$", path.name)


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _parent(pid: int) -> int | None:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return None


def _runs(pid: int, main_class: str, workdir: str) -> bool:
    """Guard against a recycled pid: ``main_class`` with this cluster's configuration."""
    if not alive(pid):
        return False
    args = cmdline(pid)
    if args is None:
        return True  # no /proc (macOS): trust the state file
    conf = str(Path(workdir) / "conf").encode()
    return main_class.encode() in args and any(conf in a for a in args)


def _is_our_cluster(info: ClusterInfo) -> bool:
    return _runs(info.pid, _JOBMANAGER_MAIN, info.workdir)


if __name__ == "__main__":
    raise SystemExit(main())
