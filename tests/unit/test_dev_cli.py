"""`actionjournal dev kafka|fluss start`: what it says, and what it refuses before starting."""

from __future__ import annotations

import dataclasses
import json
import socket
import subprocess
import sys

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


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ACTIONJOURNAL_CACHE", str(tmp_path))
    (tmp_path / "dev").mkdir()
    return tmp_path / "dev"


@pytest.mark.parametrize("service", ["kafka", "fluss"])
def test_status_with_nothing_running_says_so_on_stderr_only(cache, capsys, service):
    from actionjournal.dev import fluss, kafka

    main = {"kafka": kafka.main, "fluss": fluss.main}[service]
    assert main(["status"]) == 1
    out, err = capsys.readouterr()
    assert out == ""  # $(actionjournal dev kafka status) is empty, never a message
    assert err.strip() in ("no broker running", "no cluster running")


def test_a_state_file_with_pid_0_is_no_running_broker(cache, capsys):
    from actionjournal.dev import kafka

    state = cache / "kafka.json"
    state.write_text(
        '{"pid": 0, "bootstrap": "127.0.0.1:1", "workdir": "/nowhere", "port": 1, '
        '"controller_port": 2}'
    )
    assert kafka.status() is None  # kill(0, 0) succeeds: it signals our own process group
    assert not state.exists()
    assert kafka.main(["status"]) == 1
    assert capsys.readouterr().out == ""


def test_a_cluster_state_file_lists_each_broker_and_whether_it_lives(cache, capsys):
    from actionjournal.dev import kafka

    # A live process that looks like broker 2 of the cluster; brokers 1 and 3 are gone.
    workdir = cache / "kafka-3-brokers"
    config = workdir / "broker-2" / "server.properties"
    fake = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "kafka.Kafka", str(config)]
    )
    try:
        brokers = [
            {"pid": pid, "bootstrap": f"127.0.0.1:{port}", "workdir": str(workdir / f"broker-{n}"),
             "port": port, "controller_port": port + 1, "node_id": n}
            for n, pid, port in ((1, 999_999_991, 9001), (2, fake.pid, 9002), (3, 0, 9003))
        ]  # fmt: skip
        bootstrap = "127.0.0.1:9001,127.0.0.1:9002,127.0.0.1:9003"
        state = {"pid": 999_999_991, "bootstrap": bootstrap, "workdir": str(workdir)}
        (cache / "kafka.json").write_text(json.dumps({**state, "brokers": brokers}))
        assert kafka.main(["status"]) == 0
        out, err = capsys.readouterr()
        assert out == bootstrap + "\n"
        assert err.splitlines() == [
            f"broker 1: pid 999999991, port 9001, NOT alive, workdir {workdir}/broker-1",
            f"broker 2: pid {fake.pid}, port 9002, alive, workdir {workdir}/broker-2",
            f"broker 3: pid 0, port 9003, NOT alive, workdir {workdir}/broker-3",
        ]
    finally:
        fake.kill()
        fake.wait()
