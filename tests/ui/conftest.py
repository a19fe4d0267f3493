"""Fixtures of the explorer's tests: the scenario journal (made once per module) and
``actionjournal ui`` servers started as real processes on free loopback ports."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.ui.journals import Made, make_journal

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Made]:
    found = make_journal(tmp_path_factory.mktemp("ui-journal"))
    yield found
    found.store.close()


class Server:
    def __init__(self, proc: subprocess.Popen, url: str, token: str | None) -> None:
        self.proc = proc
        self.url = url
        self.token = token

    def client(self, token: str | None = "default") -> httpx.Client:
        token = self.token if token == "default" else token
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def wait_indexed(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        with self.client() as c:
            while time.monotonic() < deadline:
                status = c.get("/api/status").json()
                if status["indexed"]:
                    return
                time.sleep(0.1)
        raise AssertionError(f"the explorer did not index the journal in {timeout} s")


@pytest.fixture
def start_ui(tmp_path: Path) -> Iterator[Callable[..., Server]]:
    started: list[subprocess.Popen] = []

    def start(journal: Path | list[str], *args: str, token: str | None = None) -> Server:
        """``journal``: a SQLite file, or the store options of another journal."""
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        if token:
            args = (*args, "--token", token)
        proc = subprocess.Popen(
            [sys.executable, "-m", "actionjournal.tools.cli", "ui",
             *(journal if isinstance(journal, list) else ["--store", "sqlite", "--path",
                                                          str(journal)]),
             "--port", "0", "--poll", "0.2",
             "--index", str(tmp_path / f"index-{len(started)}.sqlite"), *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT,
        )  # fmt: skip
        started.append(proc)
        line = proc.stdout.readline() if proc.stdout else ""
        if "http://" not in line:
            proc.wait(10)
            raise AssertionError(f"actionjournal ui did not start: {line}{proc.stderr.read()}")
        url = line.split("http://", 1)[1].split()[0].rstrip("/")
        server = Server(proc, f"http://{url}", token)
        server.wait_indexed()
        return server

    yield start
    for proc in started:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(15)
