"""`actionjournal dev kafka|fluss start`: what it says, and what it refuses before starting."""

from __future__ import annotations

import dataclasses
import socket

import pytest

from actionjournal.dev import process


@dataclasses.dataclass
class Info:
    bootstrap: str
    pid: int = 4242
    workdir: str = "/tmp/dev"


def start_with(running, started=None):
    calls = []

    def start(workdir, port):
        calls.append((workdir, port))
        return started or Info(f"127.0.0.1:{port or 5555}")

    return calls, lambda workdir, port: process._start(
        "kafka", "broker", start, lambda: running, workdir, port
    )


def test_a_running_server_on_another_port_is_not_returned_for_port_p(capsys):
    calls, start = start_with(Info("127.0.0.1:9092"))
    with pytest.raises(process.DevProcessError, match=r"already runs at 127\.0\.0\.1:9092 \(pid "
                       r"4242\), not on port 9999: stop it first"):  # fmt: skip
        start(None, 9999)
    assert calls == []
    assert start(None, 9092).bootstrap == "127.0.0.1:9092"  # its own port: it is the one
    assert start(None, None).bootstrap == "127.0.0.1:9092"
    assert "broker already running: pid 4242" in capsys.readouterr().err


def test_a_port_in_use_is_refused_before_starting():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        calls, start = start_with(None)
        with pytest.raises(process.DevProcessError, match=f"port {port} is already in use"):
            start(None, port)
    assert calls == []


def test_start_says_what_it_does(capsys):
    calls, start = start_with(None)
    assert start("/w", None).bootstrap == "127.0.0.1:5555"
    assert calls == [("/w", None)]
    err = capsys.readouterr().err.splitlines()
    assert err[0].startswith("starting the broker (the first start downloads its jars")
    assert err[1].startswith("broker ready after ") and "pid 4242" in err[1]
