"""The index's transactions, on a thread of their own."""

from __future__ import annotations

import queue
import threading
from typing import Any


class Writer:
    """Runs the index's transactions on a thread of its own: SQLite's work (which releases
    the GIL) overlaps the next batch's reading and decoding. At most one batch waits."""

    def __init__(self, db: Any) -> None:
        self.db = db
        self._jobs: queue.Queue[list[tuple[str, list[tuple[Any, ...]]]] | None] = queue.Queue(1)
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._loop, name="index-writer", daemon=True)
        self._thread.start()

    def submit(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        self._check()
        self._jobs.put(statements)

    def drain(self) -> None:
        """Return once every submitted transaction is committed."""
        self._jobs.join()
        self._check()

    def close(self) -> None:
        self._jobs.put(None)
        self._thread.join()

    def _check(self) -> None:
        if self._error is not None:
            error, self._error = self._error, None
            raise error

    def _loop(self) -> None:
        while True:
            statements = self._jobs.get()
            try:
                if statements is None:
                    return
                if self._error is None:
                    self._run(statements)
            except BaseException as exc:  # handed to the indexing thread
                self._error = exc
            finally:
                self._jobs.task_done()

    def _run(self, statements: list[tuple[str, list[tuple[Any, ...]]]]) -> None:
        db = self.db
        db.execute("BEGIN")
        try:
            for sql, rows in statements:
                if rows:
                    db.executemany(sql, rows)
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
