"""What a soak runs with, the faults it injects when, and what each fault did; kept in its
state file so that a resumed soak goes on with the same settings."""

from __future__ import annotations

from typing import Literal

import msgspec

FaultKind = Literal["tm-kill", "leader-kill"]
FAULT_KINDS: tuple[FaultKind, ...] = ("tm-kill", "leader-kill")


class Fault(msgspec.Struct, frozen=True):
    """``kind`` at ``at_s`` seconds of soak time (time with load, a resumed soak's pause not
    counted)."""

    kind: FaultKind
    at_s: float


class Settings(msgspec.Struct, frozen=True):
    minutes: float = 10.0
    rate: float = 8.0
    """Orders per second, produced at a steady pace. 8/s is what the 2-core machine the soak
    was written on sustains beside other work (processed p50 0.5 s; at 20/s the backlog
    grew without end), with room to catch up after a fault (docs/scale.md)."""
    keys: int = 100_000
    """Agent keys (customers); input ``i`` goes to key ``i * 7919 mod keys``, so every key
    gets its first input before any gets its second."""
    faults: tuple[Fault, ...] = ()
    parallelism: int = 2
    checkpoint_interval_s: int = 10
    retained_checkpoints: int = 3
    journal_partitions: int = 8
    topic_partitions: int = 4
    service_latency_ms: tuple[float, float] = (5.0, 50.0)
    """Each durable call's latency at the service: uniform between the two."""
    warmup_s: float = 120.0
    """RSS slopes are fitted after this long (from a TaskManager's start or its job's
    latest restart, whichever is later)."""
    rss_slope_limit: float = 2.0
    """MB/min: a TaskManager whose RSS (JVM and workers) grows faster than this after warm-up
    fails the soak (2 MB/min is 20 GB a week); 0: not checked."""
    sample_every_s: float = 5.0
    broker_down_s: float = 45.0
    """How long a killed broker stays down before it is started again."""
    cleanup_every_s: float = 30.0
    cleanup_margin_s: float = 30.0
    drain_timeout_s: float = 600.0
    input_topic: str = "soak-orders"
    output_topic: str = "soak-charged"
    journal_topic: str = "soak-journal"
    namespace: str = "soak"
    operator_uid: str = "orders"  # the uid of examples/kafka_orders' agent

    @property
    def seconds(self) -> float:
        return self.minutes * 60


def default_faults(minutes: float) -> tuple[Fault, ...]:
    """A TaskManager SIGKILL at 40 % of the run, the journal leader's SIGKILL at 70 %."""
    seconds = minutes * 60
    return (Fault("tm-kill", round(0.4 * seconds)), Fault("leader-kill", round(0.7 * seconds)))


def parse_faults(text: str) -> tuple[Fault, ...]:
    """``tm-kill@240,leader-kill@420`` (seconds of soak time); an empty string: none."""
    faults = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        kind, _, at = part.partition("@")
        if kind not in FAULT_KINDS or not at:
            raise ValueError(f"fault {part!r}: write KIND@SECONDS, KIND one of {FAULT_KINDS}")
        faults.append(Fault(kind, float(at)))  # type: ignore[arg-type]
    return tuple(sorted(faults, key=lambda f: f.at_s))


class FaultRecord(msgspec.Struct):
    kind: str
    at_s: float
    """Soak time of the kill."""
    wall: float
    """``time.time()`` of the kill."""
    target: str
    node: int | None = None
    """The broker killed (``leader-kill``)."""
    back_wall: float | None = None
    """When the replacement TaskManager registered / the broker served again."""
    running_wall: float | None = None
    """``tm-kill``: when every task of the job ran again."""
