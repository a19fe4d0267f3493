"""The configuration of an agent job in PyFlink: its journal, its store, and the binding's
own settings."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from actionjournal.durable.config import JournalConfig
from actionjournal.operator.config import RunFailurePolicy
from actionjournal.stores.config import SqliteStoreConfig, StoreConfig


class AgentsConfig(BaseModel):
    """``journal`` settings and the ``store`` (``backend`` picks sqlite or kafka)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    journal: JournalConfig = Field(default_factory=JournalConfig)
    store: StoreConfig = Field(default_factory=SqliteStoreConfig)
    max_concurrent_runs: int = Field(256, gt=0)
    """Runs one operator subtask executes at once (threads for sync actions and calls)."""
    poll_interval_ms: int = Field(10, gt=0)
    """How often finished runs are collected and their outputs emitted."""
    checkpoint_timers: Literal["auto", "drain", "bundle-of-one"] = "auto"
    """How checkpoints keep the timers that resume pending runs (see docs/flink.md):
    ``drain`` uses actionjournal's operator (needs a JDK once, to compile it), ``bundle-of-one``
    one element per bundle (slower), ``auto`` the operator when it can be built."""
    on_run_failure: RunFailurePolicy = "fail"
    """A run that fails (an action raised): ``fail`` the task (Flink restores it and the run
    runs again), ``dead-letter`` it (a final ``RunFailed`` record, the input to the dead
    letter output, the key moves on), or ``retry-then-dead-letter`` (fail the task up to
    ``run_failure_restarts`` times, then dead-letter). See docs/guarantees.md."""
    run_failure_restarts: int = Field(3, ge=1)
    """``retry-then-dead-letter``: task restarts a failing run gets before it is dead-lettered
    (keep it below the job's restart strategy attempts)."""
    stats_file: str | None = None
    """When set, each subtask appends its call counts, and how it found finished runs
    (``run_wakeups``, ``run_polls``), here as a JSON line when it closes."""
