"""Delivery reports of appends: each append waits for its own, one waiting append polls for all."""

from __future__ import annotations

import contextlib
import threading
import time

from confluent_kafka import KafkaError, Message, Producer


class Delivery:
    """One append's delivery report, set by whichever thread polls the producer."""

    __slots__ = ("_gate", "done", "error", "offset")

    def __init__(self) -> None:
        # Held until the report arrives or the append is promoted to poll for everyone. A
        # bare lock: a threading.Event (a Condition in Python) cost 2 us to create alone.
        self._gate = threading.Lock()
        self._gate.acquire()
        self.done = False
        self.error: KafkaError | None = None
        self.offset = -1

    def __call__(self, error: KafkaError | None, message: Message) -> None:
        self.error = error
        if error is None:
            offset = message.offset()
            self.offset = -1 if offset is None else offset  # None: never seen (acks=all)
        self.done = True
        self.wake()

    def wake(self) -> None:
        with contextlib.suppress(RuntimeError):  # already woken and not asleep again yet
            self._gate.release()

    def sleep(self, timeout: float) -> None:
        """Until :meth:`wake` (also one that came before) or ``timeout`` seconds."""
        self._gate.acquire(timeout=timeout)


class Reports:
    """Leader/followers dispatch of delivery reports.

    One waiting append at a time polls the producer (the leader) and so serves
    the reports of everyone; the others sleep on their own event. A lone append
    is therefore woken by its own poll, without a hand-off between threads (the
    hand-off cost about a quarter of a local acks=all round trip). When the
    leader's report is in, it promotes a waiting append to poll in its place.
    """

    def __init__(self, producer: Producer) -> None:
        self._producer = producer
        self._lock = threading.Lock()
        self._leader: Delivery | None = None
        self._waiting: set[Delivery] = set()

    def wait(self, delivery: Delivery, timeout: float) -> bool:
        """Block until ``delivery`` has its report; False after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        try:
            while True:
                remaining = deadline - time.monotonic()
                with self._lock:
                    if delivery.done:
                        return True
                    if remaining <= 0:
                        return False
                    leading = self._leader is None
                    if leading:
                        self._leader = delivery
                    else:
                        self._waiting.add(delivery)
                if not leading:
                    delivery.sleep(remaining)  # then the loop re-checks done / leadership
                    continue
                try:
                    while not delivery.done and time.monotonic() < deadline:
                        self._producer.poll(min(0.1, max(0.0, deadline - time.monotonic())))
                finally:
                    with self._lock:
                        self._leader = None
                        self._promote()
        finally:
            with self._lock:
                self._waiting.discard(delivery)
                self._promote()

    def poll_if_idle(self) -> None:
        """Serve client errors and logs while nobody appends."""
        with self._lock:
            if self._leader is not None or self._waiting:
                return
            self._leader = idle = Delivery()
        try:
            self._producer.poll(0)
        finally:
            with self._lock:
                if self._leader is idle:
                    self._leader = None
                self._promote()

    def _promote(self) -> None:
        # Called with the lock held whenever a thread stops waiting: no follower may be
        # left sleeping while nobody polls.
        if self._leader is None:
            for waiting in self._waiting:
                if not waiting.done:
                    waiting.wake()
                    return
