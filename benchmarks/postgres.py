"""A private PostgreSQL server for the peer benchmark, started and stopped by the benchmark.

It uses the Debian package's binaries (``postgresql``), installed with apt when they are
missing and the benchmark runs as root. The server gets a fresh data directory in a temp
dir, listens on 127.0.0.1 on a free port, trusts local connections and keeps PostgreSQL's
durable defaults (``fsync=on``, ``synchronous_commit=on``): a step is committed to disk
when DBOS returns from it, as our SQLite appends are. PostgreSQL refuses to run as root,
so as root the server runs as the ``postgres`` user that the package creates.

Everything that cannot be found, installed or started raises :class:`ServiceUnavailable`
with what failed and why.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PACKAGE = "postgresql"
SUPERUSER = "bench"


class ServiceUnavailable(RuntimeError):
    """A service a benchmark needs could not be installed or started; the message says why."""


def _bindir() -> Path | None:
    """Where initdb and pg_ctl are: Debian keeps them out of PATH, in /usr/lib/postgresql/N/bin."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    on_path = shutil.which("pg_ctl")
    return Path(on_path).resolve().parent if on_path else None


def _install() -> Path:
    if os.geteuid() != 0:
        raise ServiceUnavailable(
            f"PostgreSQL is not installed (no pg_ctl under /usr/lib/postgresql/*/bin or on "
            f"PATH) and this is not root, so it cannot be installed: run "
            f"`apt-get install {PACKAGE}` as root"
        )
    if shutil.which("apt-get") is None:
        raise ServiceUnavailable(
            "PostgreSQL is not installed and there is no apt-get to install it with; install "
            "PostgreSQL (initdb, pg_ctl) by hand"
        )
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"postgres: installing the Debian package {PACKAGE!r} ...", flush=True)
    for cmd in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", PACKAGE]):
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
            raise ServiceUnavailable(
                f"`{' '.join(cmd)}` failed with exit code {done.returncode}: " + " | ".join(tail)
            )
    bindir = _bindir()
    if bindir is None:
        raise ServiceUnavailable(f"apt-get installed {PACKAGE!r} but no pg_ctl can be found")
    return bindir


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _runner() -> tuple[list[str], pwd.struct_passwd | None]:
    """The command prefix that runs a server binary as a user PostgreSQL accepts."""
    if os.geteuid() != 0:
        return [], None
    try:
        user = pwd.getpwnam("postgres")
    except KeyError:
        raise ServiceUnavailable(
            "running as root, and PostgreSQL refuses to run as root, but there is no "
            "'postgres' user to run it as (the Debian package creates one: apt-get install "
            f"{PACKAGE}, or `useradd --system postgres`)"
        ) from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise ServiceUnavailable("running as root but `runuser` is missing (package util-linux)")
    return [runuser, "-u", "postgres", "--"], user


def _run(cmd: list[str], what: str, log: Path | None = None) -> None:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        detail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        if log is not None and log.exists():
            detail += log.read_text(errors="replace").strip().splitlines()[-5:]
        raise ServiceUnavailable(
            f"{what} failed (exit code {done.returncode}): " + " | ".join(detail)
        )


@contextlib.contextmanager
def running_postgres() -> Iterator[str]:
    """Yield the URL of a fresh local server's ``postgres`` database; stop it on exit."""
    bindir = _bindir() or _install()
    prefix, user = _runner()
    workdir = Path(tempfile.mkdtemp(prefix="aj-bench-pg-"))
    data, log = workdir / "data", workdir / "server.log"
    if user is not None:
        os.chown(workdir, user.pw_uid, user.pw_gid)
    port = _free_port()
    started = False
    try:
        initdb = [str(bindir / "initdb"), "-D", str(data), "-U", SUPERUSER, "--auth=trust"]
        initdb += ["--encoding=UTF8", "--no-locale"]
        _run([*prefix, *initdb], "initdb of a temporary PostgreSQL data directory")
        options = f"-p {port} -c listen_addresses=127.0.0.1 -k {workdir} -c max_connections=50"
        start = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
        start += ["-w", "-t", "60", "start"]
        _run([*prefix, *start], f"starting PostgreSQL on 127.0.0.1:{port}", log)
        started = True
        print(f"postgres: {bindir.parent.name} running on 127.0.0.1:{port} ({data})", flush=True)
        yield f"postgresql://{SUPERUSER}@127.0.0.1:{port}/postgres"
    finally:
        if started:
            subprocess.run(
                [*prefix, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                capture_output=True,
                timeout=120,
            )
        shutil.rmtree(workdir, ignore_errors=True)
