"""The agent's PyFlink function driven in this process, with what PyFlink and the agent
operator hand it faked: keyed state, timers, job parameters, the wake-up socket. For tests of
what the function keeps per key (state, timers, in-process sets) over many keys, without a
cluster; tests/e2e runs the real thing.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any

from pyflink.datastream import TimeDomain

from actionjournal.flink.function import RESTORED, RESTORED_BINDINGS, AgentFunction
from actionjournal.flink.wakeups import PARAMETER

TOKEN = "ab" * 16


class Timers:
    """A key's timers as the function registered and deleted them."""

    def __init__(self) -> None:
        self.event: set[int] = set()
        self.processing: set[int] = set()

    def register_event_time_timer(self, at: int) -> None:
        self.event.add(at)

    def delete_event_time_timer(self, at: int) -> None:
        self.event.discard(at)

    def register_processing_time_timer(self, at: int) -> None:
        self.processing.add(at)

    def delete_processing_time_timer(self, at: int) -> None:
        self.processing.discard(at)

    def current_processing_time(self) -> int:
        return int(time.time() * 1000)


class Operator:
    """The agent operator's end of the wake-up socket: keeps the binding the function reports
    (keys of finished runs are dropped: :meth:`Subtask.settle` fires their timers)."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.bindings: list[str] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    @property
    def address(self) -> str:
        return f"{self.server.getsockname()[1]} {TOKEN}"

    def _serve(self) -> None:
        connection, _ = self.server.accept()
        with connection, connection.makefile("rb") as stream:
            assert stream.read(len(TOKEN)) == TOKEN.encode()
            while header := stream.read(4):
                (length,) = struct.unpack(">i", header)
                if length == -2:  # idle: the key's length follows
                    (length,) = struct.unpack(">i", stream.read(4))
                if length == -1:
                    (size,) = struct.unpack(">i", stream.read(4))
                    self.bindings.append(stream.read(size).decode())
                else:
                    stream.read(length)

    def close(self) -> None:
        self.server.close()


class Subtask:
    """One subtask of the agent operator: keyed state and timers per key, job parameters;
    with ``operator`` (the default), actionjournal's Java operator around the function."""

    def __init__(
        self, function: AgentFunction, restored: bool = False, operator: bool = True
    ) -> None:
        self.function = function
        self.state: dict[Any, bytes] = {}  # what Flink keeps per key
        self.reads = 0  # state reads that a real job sends to the Java side
        self.timers: dict[Any, Timers] = {}
        self.parameters = {RESTORED: str(restored).lower()}
        self.operator = Operator() if operator else None
        if self.operator is not None:
            self.parameters |= {RESTORED_BINDINGS: "[]", PARAMETER: self.operator.address}
            self._keyed_state_backend = self  # PyFlink's, which knows the key's bytes
        self.key: Any = None
        function.open(self)  # type: ignore[arg-type]

    @property
    def _encoded_current_key(self) -> bytes:
        return repr(self.key).encode()

    # -- PyFlink's runtime context ---------------------------------------------------------

    def get_state(self, descriptor: Any) -> Subtask:
        return self  # one ValueState: this object, for the current key

    def value(self) -> bytes | None:
        self.reads += 1
        return self.state.get(self.key)

    def update(self, data: bytes) -> None:
        self.state[self.key] = data

    def get_job_parameter(self, key: str, default: str | None) -> str | None:
        return self.parameters.get(key, default)

    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_metrics_group(self) -> Any:
        return _Metrics()

    # -- driving the function ---------------------------------------------------------------

    def element(self, key: Any, value: Any) -> None:
        self.key = key
        list(self.function.process_element(value, Context(self, key, TimeDomain.PROCESSING_TIME)))

    def settle(self, key: Any, timeout: float = 10.0) -> list[Any]:
        """Fire the key's timer once its runs finished (as a wake-up would); its outputs."""
        key_id = self.function.engine.key_id(key)
        deadline = time.monotonic() + timeout
        outputs: list[Any] = []
        while key_id in self.function._runs:
            runs = self.function._runs[key_id]
            while not runs.has_results:
                assert time.monotonic() < deadline, f"the run of key {key!r} did not finish"
                time.sleep(0.001)
            self.key = key
            context = Context(self, key, TimeDomain.PROCESSING_TIME)
            outputs += list(self.function.on_timer(0, context))
        return outputs

    def close(self) -> None:
        self.function.close()
        if self.operator is not None:
            self.operator.close()


class Context:
    def __init__(self, subtask: Subtask, key: Any, domain: TimeDomain) -> None:
        self.subtask, self.key, self.domain = subtask, key, domain

    def get_current_key(self) -> Any:
        return self.key

    def timer_service(self) -> Timers:
        return self.subtask.timers.setdefault(self.key, Timers())

    def time_domain(self) -> TimeDomain:
        return self.domain


class _Metrics:
    def add_group(self, *names: str) -> _Metrics:
        return self

    def counter(self, name: str) -> _Metrics:
        return self

    def inc(self, n: int = 1) -> None:
        pass
