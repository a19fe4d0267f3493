"""The Python side of the wake-up socket (RunWakeups.java reads what these tests read):
the token first, then each finished run's key as a big-endian length and the key bytes, and
the journal binding as -1, a length and the JSON."""

from __future__ import annotations

import contextlib
import logging
import socket
import struct
from collections.abc import Iterator

from actionjournal.flink.wakeups import PARAMETER, RunWakeups


class Context:
    def __init__(self, parameters: dict[str, str]) -> None:
        self.parameters = parameters

    def get_job_parameter(self, key: str, default: str | None) -> str | None:
        return self.parameters.get(key, default)


def read_exactly(conn: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = conn.recv(n - len(data))
        assert chunk, "the sender closed early"
        data += chunk
    return data


@contextlib.contextmanager
def connected(token: str) -> Iterator[tuple[RunWakeups, socket.socket]]:
    """A RunWakeups connected to a local listener, and the listener's end of it."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        wakeups = RunWakeups.connect(Context({PARAMETER: f"{port} {token}"}))
        assert wakeups is not None
        conn, _ = server.accept()
        with conn:
            yield wakeups, conn
        wakeups.close()


def test_sends_the_token_then_each_key_framed():
    token = "ab" * 16
    with connected(token) as (wakeups, conn):
        wakeups.send(b"\x00key-1")
        wakeups.send(b"")
        assert read_exactly(conn, 32) == token.encode()
        (n,) = struct.unpack(">i", read_exactly(conn, 4))
        assert read_exactly(conn, n) == b"\x00key-1"
        assert struct.unpack(">i", read_exactly(conn, 4)) == (0,)
    assert not wakeups.alive
    wakeups.send(b"after close")  # ignored: the timers still find the run


def test_the_binding_is_framed_apart_from_keys():
    with connected("cd" * 16) as (wakeups, conn):
        wakeups.send_binding('[["sqlite","/j.db","ü"],0,"default",1]')
        wakeups.send(b"k")
        read_exactly(conn, 32)
        marker, n = struct.unpack(">ii", read_exactly(conn, 8))
        assert marker == -1
        assert read_exactly(conn, n).decode() == '[["sqlite","/j.db","ü"],0,"default",1]'
        assert read_exactly(conn, 5) == struct.pack(">i", 1) + b"k"


def test_a_key_after_which_no_run_is_left_is_marked_idle():
    with connected("ef" * 16) as (wakeups, conn):
        wakeups.send(b"busy")
        wakeups.send(b"last", idle=True)
        read_exactly(conn, 32)
        assert read_exactly(conn, 8) == struct.pack(">i", 4) + b"busy"
        assert read_exactly(conn, 12) == struct.pack(">ii", -2, 4) + b"last"


def test_without_the_operator_parameter_runs_are_polled_for():
    assert RunWakeups.connect(Context({})) is None


def test_an_unreachable_operator_falls_back_to_polling_with_a_warning(caplog):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
    with caplog.at_level(logging.WARNING, logger="actionjournal.flink.wakeups"):
        assert RunWakeups.connect(Context({PARAMETER: f"{port} {'00' * 16}"})) is None
    assert "found by polling instead" in caplog.text
