"""Process plumbing shared by the dev services (:mod:`~actionjournal.dev.kafka`,
:mod:`~actionjournal.dev.fluss`, :mod:`~actionjournal.dev.flink`).

They run JVM servers next to tests: find ``java``, pick free loopback ports,
launch a server in its own session with its output appended to a log file, wait for it,
stop it (SIGTERM, then SIGKILL) or crash it (SIGKILL), and remember a detached dev service
in a small JSON state file so that another process can stop it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

import actionjournal._maven as maven

__all__ = [
    "DevProcessError",
    "ServerProcess",
    "alive",
    "clear_state",
    "cmdline",
    "dev_main",
    "dev_parser",
    "free_port",
    "java",
    "log_contains",
    "log_tail",
    "port_open",
    "read_state",
    "send_signal",
    "start_detached",
    "stop_detached",
    "write_state",
]

T = TypeVar("T")


class DevProcessError(RuntimeError):
    """A dev server could not be started, reached or stopped."""


def java() -> str:
    """Path of the ``java`` to run servers with: ``$JAVA_HOME/bin/java`` or the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home, "bin", "java")) if home else shutil.which("java")
    if not found or not os.access(found, os.X_OK):
        raise DevProcessError(
            "java not found: install a JDK 17+ (e.g. `apt-get install openjdk-17-jre-headless`)"
            " or set JAVA_HOME"
        )
    return found


def free_port(*avoid: int | None) -> int:
    """A port on 127.0.0.1 that nothing listens on right now, other than those in ``avoid``."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in avoid:
            return port


def port_open(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def log_contains(path: Path, offset: int, needle: str) -> bool:
    """Whether ``needle`` was logged after byte ``offset`` (the log's size at launch)."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return needle.encode() in f.read()
    except OSError:
        return False


def log_tail(path: Path, lines: int = 30) -> str:
    """The last ``lines`` lines of a log, for error messages."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - 64 * 1024))
            text = f.read().decode("utf-8", "replace")
    except OSError:
        return "(no log file)"
    return "\n".join(text.splitlines()[-lines:]) or "(log is empty)"


def send_signal(pid: int, sig: int) -> bool:
    """Signal ``pid``; False if it no longer exists."""
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return False
    return True


def alive(pid: int) -> bool:
    if pid <= 0:  # kill(0) and kill(-1) signal groups: no single process is meant
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # an exited but unreaped child still answers kill(0)
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def end_processes(pids: Sequence[int], timeout: float) -> None:
    """SIGTERM ``pids`` and SIGKILL those still alive after ``timeout`` seconds (at once
    when it is 0)."""
    for pid in pids:
        send_signal(pid, signal.SIGTERM if timeout else signal.SIGKILL)
    deadline = time.monotonic() + timeout
    while any(alive(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    for pid in pids:
        if alive(pid):
            send_signal(pid, signal.SIGKILL)


def cmdline(pid: int) -> list[bytes] | None:
    """The command line of ``pid``, or None where there is no /proc (then trust state files)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return None


def _kill_quietly(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(10)


class ServerProcess:
    """One server process: launched by us (a child) or attached to by pid (a detached one).

    A launched process runs in its own session, so Ctrl-C in a terminal or test runner does
    not reach it before we stop it cleanly, and a detached dev server outlives us. Until
    :meth:`detach`, a process we launched is killed when this object is garbage collected,
    so a test that crashes before stopping it leaves no JVM behind.
    """

    def __init__(self, name: str, log_path: Path) -> None:
        self.name = name
        self.log_path = log_path
        self.pid: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._finalizer: weakref.finalize | None = None

    def launch(self, cmd: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> int:
        """Start ``cmd`` (with ``env`` added to ours); returns the log's size before launch
        (where its new output begins)."""
        self.forget()
        offset = self.log_path.stat().st_size if self.log_path.exists() else 0
        with open(self.log_path, "ab") as log:
            self._proc = subprocess.Popen(
                list(cmd), stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                cwd=cwd, start_new_session=True, env={**os.environ, **(env or {})},
            )  # fmt: skip
        self.pid = self._proc.pid
        self._finalizer = weakref.finalize(self, _kill_quietly, self._proc)
        return offset

    def attach(self, pid: int) -> None:
        """Manage a process started by another (now gone) ``ServerProcess``."""
        self.forget()
        self.pid = pid

    def exit_code(self) -> int | None:
        """The exit code if a process we launched has exited, else None."""
        return self._proc.poll() if self._proc is not None else None

    def is_running(self) -> bool:
        if self.pid is None:
            return False
        if self._proc is not None:
            return self._proc.poll() is None
        return alive(self.pid)

    def stop(self, timeout: float = 20.0) -> None:
        """Shut down cleanly (SIGTERM), falling back to SIGKILL after ``timeout`` seconds."""
        if self.pid is None:
            return
        if send_signal(self.pid, signal.SIGTERM) and not self.wait_exit(timeout):
            self.kill()
            return
        self.forget()

    def kill(self) -> None:
        """Crash the process (SIGKILL), as a power loss would."""
        if self.pid is None:
            return
        send_signal(self.pid, signal.SIGKILL)
        if not self.wait_exit(10):
            raise DevProcessError(f"{self.name} pid {self.pid} survived SIGKILL")
        self.forget()

    def wait_exit(self, timeout: float) -> bool:
        if self._proc is not None:
            try:
                self._proc.wait(timeout)
            except subprocess.TimeoutExpired:
                return False
            return True
        deadline = time.monotonic() + timeout
        while self.pid is not None and alive(self.pid):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
        return True

    def detach(self) -> None:
        """Leave the process running after this object and this Python process are gone."""
        if self._finalizer is not None:
            self._finalizer.detach()

    def forget(self) -> None:
        self.detach()
        self._finalizer = None
        self._proc = None
        self.pid = None

    def log_tail(self, lines: int = 30) -> str:
        return log_tail(self.log_path, lines)


# -- detached dev services: state files and the `actionjournal dev <service>` command ----------


def _state_path(service: str) -> Path:
    return maven.cache_dir("dev") / f"{service}.json"


def write_state(service: str, info: Any) -> None:
    """Record a detached service (a dataclass instance) so that another process can stop it."""
    _state_path(service).write_text(json.dumps(dataclasses.asdict(info), indent=2) + "\n")


def read_state(service: str, kind: Callable[..., T], is_ours: Callable[[T], bool]) -> T | None:
    """The recorded service if ``is_ours`` still says it runs, else None (clearing the file)."""
    path = _state_path(service)
    try:
        info = kind(**json.loads(path.read_text()))
    except FileNotFoundError:
        return None
    except (ValueError, TypeError):
        path.unlink(missing_ok=True)
        return None
    if is_ours(info):
        return info
    path.unlink(missing_ok=True)
    return None


def clear_state(service: str) -> None:
    _state_path(service).unlink(missing_ok=True)


def start_detached(service: str, running: Callable[[], T | None], server: Callable[[], Any]) -> T:
    """The detached ``service`` that is ``running()``, else a new ``server()`` started,
    detached and recorded."""
    current = running()
    if current is not None:
        return current
    new = server()
    new.start()
    info = new.detach()
    write_state(service, info)
    return info


def stop_detached(
    service: str, running: Callable[[], T | None], stop: Callable[[T], None]
) -> T | None:
    """Stop the detached ``service`` that is ``running()`` and forget it; what was stopped,
    or None when none was running."""
    info = running()
    if info is None:
        return None
    stop(info)
    clear_state(service)
    return info


class ServiceInfo(Protocol):
    @property
    def bootstrap(self) -> str: ...
    @property
    def pid(self) -> int: ...
    @property
    def workdir(self) -> str: ...


class _Parser(argparse.ArgumentParser):
    """Usage errors in the tools' format: one ``error:`` line, exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        print(f"error: {self.prog}: {message}", file=sys.stderr)
        raise SystemExit(2)


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 1-65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 < port < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: a port is between 1 and 65535")
    return port


def dev_parser(
    service: str,
    what: str,
    description: str,
    start_options: Callable[[argparse.ArgumentParser], Any] | None = None,
    commands: Mapping[str, str] | None = None,
) -> argparse.ArgumentParser:
    """The parser of ``actionjournal dev <service>``; ``start_options`` adds options to
    ``start``, ``commands`` more subcommands (name -> help)."""
    parser = _Parser(prog=f"actionjournal dev {service}", description=description)
    sub = parser.add_subparsers(
        dest="command",
        required=True,
        metavar="|".join(["start", "stop", "status", *(commands or {})]),
        parser_class=_Parser,
    )
    p_start = sub.add_parser(
        "start",
        help=f"start the {what} (or find the running one) and print its bootstrap address",
        description=f"Start the {what} detached; it runs until `actionjournal dev {service} "
        "stop`. Its data persists in the work directory across stop and start.",
    )
    p_start.add_argument(
        "--workdir",
        help=f"config, data and log dir (default: <cache>/dev/{service}, where <cache> is "
        "$ACTIONJOURNAL_CACHE or ~/.cache/actionjournal)",
    )
    p_start.add_argument(
        "--port", type=port_number, help="client port (default: a free one, picked at start)"
    )
    if start_options is not None:
        start_options(p_start)
    sub.add_parser("stop", help=f"stop the {what}", description=f"Stop the {what}.")
    sub.add_parser(
        "status",
        help="print the bootstrap address if running (exit 1 if not)",
        description=f"Print the {what}'s bootstrap address if it runs; exit 1 if not.",
    )
    for name, text in (commands or {}).items():
        sub.add_parser(name, help=text, description=text)
    return parser


def dev_main(
    argv: Sequence[str] | None,
    *,
    service: str,
    what: str,
    description: str,
    start: Callable[..., ServiceInfo],
    stop: Callable[[], ServiceInfo | None],
    status: Callable[[], ServiceInfo | None],
    start_options: Callable[[argparse.ArgumentParser], Any] | None = None,
    commands: Mapping[str, tuple[str, Callable[[], int]]] | None = None,
    resume: Callable[..., ServiceInfo] | None = None,
    describe: Callable[[ServiceInfo], str] | None = None,
) -> int:
    """``actionjournal dev <service> start|stop|status``; returns a process exit code.

    ``what`` names the thing in messages ("broker", "cluster"); ``start`` takes the work
    directory and client port options, and as keywords the options ``start_options`` adds.
    ``commands`` adds subcommands: name -> (help, function returning an exit code).
    ``resume`` (those keywords) is what ``start`` does when the service already runs.
    ``describe`` says more of a running service for ``status`` (default: its pid and work
    directory). ``status`` prints only the bootstrap address on stdout, so that
    ``$(actionjournal dev ... status)`` is that address or empty; the rest goes to stderr.
    """
    commands = commands or {}
    helps = {name: text for name, (text, _) in commands.items()}
    args = dev_parser(service, what, description, start_options, helps).parse_args(argv)
    options = {k: v for k, v in vars(args).items() if k not in ("command", "workdir", "port")}
    try:
        if args.command in commands:
            return commands[args.command][1]()
        if args.command == "start":
            info = _start(service, what, start, status, args.workdir, args.port, options, resume)
            print(info.bootstrap)
        elif args.command == "stop":
            stopped = stop()
            print(f"stopped {what} pid {stopped.pid}" if stopped else f"no {what} running")
        else:
            running = status()
            if running is None:
                print(f"no {what} running", file=sys.stderr)
                return 1
            print(running.bootstrap)
            details = (
                describe(running)
                if describe is not None
                else f"pid {running.pid}, workdir {running.workdir}"
            )
            print(details, file=sys.stderr)
    except (DevProcessError, maven.MavenError) as exc:
        first, *rest = str(exc).strip().splitlines() or [""]
        print("\n".join([f"error: {first}", *(f"  {line}" for line in rest)]), file=sys.stderr)
        return 1
    return 0


def _start(
    service: str,
    what: str,
    start: Callable[..., ServiceInfo],
    status: Callable[[], ServiceInfo | None],
    workdir: str | None,
    port: int | None,
    options: Mapping[str, Any] | None = None,
    resume: Callable[..., ServiceInfo] | None = None,
) -> ServiceInfo:
    """Start the service, saying so on stderr; a running one is reused only on its own port."""
    running = status()
    if running is not None:
        if port is not None and not running.bootstrap.endswith(f":{port}"):
            raise DevProcessError(
                f"a dev {what} already runs at {running.bootstrap} (pid {running.pid}), not on "
                f"port {port}: stop it first (`actionjournal dev {service} stop`), or leave out "
                "--port"
            )
        print(f"{what} already running: pid {running.pid}, workdir {running.workdir}",
              file=sys.stderr)  # fmt: skip
        return running if resume is None else resume(**(options or {}))
    if port is not None and port_open(port):
        raise DevProcessError(
            f"port {port} is already in use by another program: pick another --port, or leave "
            "it out for a free one"
        )
    print(
        f"starting the {what} (the first start downloads its jars with Maven, which can take "
        "minutes)...",
        file=sys.stderr,
        flush=True,
    )
    began = time.monotonic()
    info = start(workdir, port, **(options or {}))
    print(
        f"{what} ready after {time.monotonic() - began:.0f} s: pid {info.pid}, workdir "
        f"{info.workdir}",
        file=sys.stderr,
    )
    return info
