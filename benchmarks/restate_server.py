"""A private Restate server for the peer benchmark, started and stopped by the benchmark.

``restate-server`` 1.7.12 comes from the npm registry (``@restatedev/restate-server``, whose
platform package ships the binary), installed once with npm into the actionjournal cache
(``$ACTIONJOURNAL_CACHE`` or ``~/.cache/actionjournal``, under ``restate/``). The server keeps
its durable defaults (the log's RocksDB WAL is fsynced) and gets a fresh base directory in a
temp dir; telemetry is off.

At start-up the server asks GitHub for its latest release, and nothing of a benchmark may
leave the machine: the server and the service's HTTP server (hypercorn, serving the Python
SDK's app) therefore run in a network namespace of their own that has only a loopback
interface, and the benchmark talks to the server through its Unix sockets (``ingress.sock``,
``admin.sock``), which live in the file system and so cross namespaces. Making the namespace
needs root, ``unshare``, ``nsenter`` and ``ip``.

Everything that cannot be found, installed or started raises :class:`ServiceUnavailable`.
"""

from __future__ import annotations

import contextlib
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

from actionjournal._maven import cache_dir
from benchmarks.postgres import ServiceUnavailable

VERSION = "1.7.12"
PACKAGE = "@restatedev/restate-server"
NODE = "bench"  # the node name: its sockets are in <base dir>/<node name>/
SERVICE_PORT = 9080  # inside the namespace: nothing else listens there
START_TIMEOUT_S = 120
ROOT = Path(__file__).resolve().parent.parent


def binary() -> Path:
    """The restate-server binary of this platform, installed with npm on first use."""
    arch = {"x86_64": "x64", "amd64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(
        platform.machine().lower()
    )
    system = {"Linux": "linux", "Darwin": "darwin"}.get(platform.system())
    if arch is None or system is None:
        raise ServiceUnavailable(
            f"{PACKAGE} {VERSION} ships no binary for {platform.system()} {platform.machine()}"
        )
    prefix = cache_dir("restate", VERSION)
    found = prefix / "node_modules" / f"{PACKAGE}-{system}-{arch}" / "bin" / "restate-server"
    if found.exists():
        return found
    npm = shutil.which("npm")
    if npm is None:
        raise ServiceUnavailable(
            f"restate-server is not installed in {prefix} and there is no npm to install it "
            f"with: install Node.js and npm, or run `npm install --prefix {prefix} "
            f"{PACKAGE}@{VERSION}` by hand"
        )
    print(f"restate: installing {PACKAGE}@{VERSION} with npm into {prefix} ...", flush=True)
    # --ignore-scripts: the package's only install script is a download counter.
    command = [npm, "install", "--prefix", str(prefix), "--no-audit", "--no-fund"]
    command += ["--ignore-scripts", f"{PACKAGE}@{VERSION}"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600)
    if done.returncode != 0 or not found.exists():
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise ServiceUnavailable(
            f"`{' '.join(command)}` (exit code {done.returncode}) did not install {found}: "
            + " | ".join(tail)
        )
    return found


def _namespace_tools() -> tuple[str, str, str]:
    if os.geteuid() != 0:
        raise ServiceUnavailable(
            "the Restate server needs a network namespace of its own (it contacts GitHub at "
            "start-up), and making one needs root"
        )
    tools = [shutil.which(name) for name in ("unshare", "nsenter", "ip")]
    if None in tools:
        raise ServiceUnavailable(
            "unshare, nsenter (package util-linux) and ip (package iproute2) are needed to run "
            "the Restate server in a network namespace of its own"
        )
    unshare, nsenter, ip = tools
    assert unshare and nsenter and ip
    return unshare, nsenter, ip


def _tail(log: Path) -> str:
    lines = log.read_text(errors="replace").strip().splitlines() if log.exists() else []
    return " | ".join(lines[-5:]) or "(no output)"


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)


@contextlib.contextmanager
def running_restate(app: str) -> Iterator[httpx.Client]:
    """A client of a fresh server's ingress with ``app`` (``module:attribute``, importable
    from the repository root) deployed; everything is stopped and removed on exit."""
    server_binary = binary()
    unshare, nsenter, ip = _namespace_tools()
    workdir = Path(tempfile.mkdtemp(prefix="aj-bench-restate-"))
    sockets = workdir / "data" / NODE
    env = {**os.environ, "RESTATE_DISABLE_TELEMETRY": "true", "NO_COLOR": "1"}
    started: list[subprocess.Popen] = []
    try:
        server_log = workdir / "server.log"
        server_cmd = [unshare, "--net", "sh", "-c", f'{ip} link set lo up && exec "$0" "$@"']
        server_cmd += [str(server_binary), "--no-logo", "--base-dir", str(workdir / "data")]
        server_cmd += ["--node-name", NODE, "--log-disable-ansi-codes", "true"]
        with server_log.open("w") as log:
            server = subprocess.Popen(server_cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
        started.append(server)
        admin = httpx.Client(
            transport=httpx.HTTPTransport(uds=str(sockets / "admin.sock")),
            base_url="http://restate",
            timeout=30,
        )
        _wait(lambda: admin.get("/health").status_code == 200, server, server_log, "start")
        service_log = workdir / "service.log"
        service_cmd = [nsenter, "--target", str(server.pid), "--net", "--", sys.executable]
        service_cmd += ["-m", "hypercorn", app, "--bind", f"127.0.0.1:{SERVICE_PORT}"]
        with service_log.open("w") as log:
            service = subprocess.Popen(
                service_cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT
            )
        started.append(service)

        def registered() -> bool:
            reply = admin.post("/deployments", json={"uri": f"http://127.0.0.1:{SERVICE_PORT}"})
            return reply.status_code in (200, 201)

        _wait(registered, service, service_log, "register the service")
        admin.close()
        print(f"restate: restate-server {VERSION} running in {workdir}", flush=True)
        with httpx.Client(
            transport=httpx.HTTPTransport(uds=str(sockets / "ingress.sock")),
            base_url="http://restate",
            timeout=60,
        ) as ingress:
            yield ingress
    finally:
        for process in reversed(started):
            _stop(process)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait(ready, process: subprocess.Popen, log: Path, what: str) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServiceUnavailable(
                f"Restate: could not {what}, the process exited with code "
                f"{process.returncode}: {_tail(log)}"
            )
        with contextlib.suppress(httpx.HTTPError, OSError):
            if ready():
                return
        time.sleep(0.5)
    raise ServiceUnavailable(f"Restate: could not {what} within {START_TIMEOUT_S} s: {_tail(log)}")
