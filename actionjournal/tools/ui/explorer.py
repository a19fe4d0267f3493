"""One explorer: its journal, its index kept up to date by a follower thread, its settings.

The follower reads the journal from where the index stopped, then polls for what is
appended (Kafka and Fluss journals are followed live the same way). Pages read the index
through their own connections and never wait for it; the follower's last failure (a
broker that went away) is shown on every page until a later poll succeeds.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from actionjournal.tools.ui import journal as jr
from actionjournal.tools.ui.index import Readers, default_path
from actionjournal.tools.ui.indexer import Indexer
from actionjournal.tools.ui.security import ActionLog, Guard
from actionjournal.tools.ui.values import Shown

log = logging.getLogger("actionjournal.ui")


@dataclass
class Settings:
    """What ``actionjournal ui`` was started with, besides the journal."""

    index: Path | None = None
    token: str | None = None
    allow_actions: bool = False
    redact: list[str] = field(default_factory=list)
    redrive_topic: str | None = None
    redrive_bootstrap: str | None = None
    checkpoints: Path | None = None
    plan: dict[str, Any] | None = None  # the agent's plan (actionjournal plan), if given
    poll_s: float = 1.0
    action_log: Path | None = None


class Explorer:
    """The journal, the index, the follower; built once per server."""

    def __init__(self, journal: jr.Journal, settings: Settings) -> None:
        self.journal = journal
        self.settings = settings
        self.shown = Shown(settings.redact)
        self.guard = Guard(settings.token)
        self.actions = ActionLog(settings.action_log)
        self.store = journal.open()  # for the pages' reads of a run's records
        self._follow_store = journal.open()
        path = settings.index or default_path(
            jr.identity_of(self.store), journal.namespace, journal.operator_uid
        )
        self.indexer = Indexer(journal, self._follow_store, path)
        self.readers = Readers(path)
        self.store_lock = threading.Lock()
        self.first_pass_done = threading.Event()
        self.started_at = time.time()
        self.first_pass_s: float | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._follow, name="index-follower", daemon=True)

    @property
    def index_path(self) -> Path:
        return self.indexer.path

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=60)
        self.readers.close()
        self.indexer.close()
        self._follow_store.close()
        self.store.close()

    def wait_indexed(self, timeout: float) -> bool:
        return self.first_pass_done.wait(timeout)

    def status(self) -> dict[str, Any]:
        indexer = self.indexer
        return {
            "journal": self.journal.describe(),
            "namespace": self.journal.namespace,
            "operator_uid": self.journal.operator_uid,
            "index": str(self.index_path),
            "indexed": self.first_pass_done.is_set(),
            "records_indexed": indexer.records_indexed,
            "first_pass_s": self.first_pass_s,
            "caught_up_at": indexer.caught_up_at,
            "error": indexer.error,
            "read_only": not self.settings.allow_actions,
        }

    def _follow(self) -> None:
        wait = self.settings.poll_s
        while not self._stop.is_set():
            try:
                start = time.perf_counter()
                self.indexer.catch_up()
                if not self.first_pass_done.is_set():
                    self.first_pass_s = time.perf_counter() - start
                    self.first_pass_done.set()
                wait = self.settings.poll_s
            except Exception as exc:  # shown on the pages; the next poll tries again
                self.indexer.error = f"{type(exc).__name__}: {exc}"
                log.warning("reading %s failed: %s", self.journal.describe(), exc)
                wait = min(max(wait * 2, self.settings.poll_s), 30.0)
            self._stop.wait(wait)
