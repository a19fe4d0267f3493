"""``cleanup apply --vacuum``: give the pages a cleanup freed in a SQLite journal back to the
file system.

A delete leaves SQLite's file as large as it was: the freed pages are reused by later
appends, never returned. ``VACUUM`` rewrites the file without them; in WAL mode the
rewrite goes through the write-ahead log, so a ``TRUNCATE`` checkpoint follows to bring
the main file down to size. It needs the file alone for a moment: a job writing to it
makes it wait (``BUSY_TIMEOUT_S``), then fail, with nothing lost.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from actionjournal.tools.toolkit import ToolError, fmt_bytes

BUSY_TIMEOUT_S = 30.0


def file_size(path: Path) -> int:
    """The journal's bytes on disk: the file and its write-ahead log."""
    return sum(p.stat().st_size for p in (path, Path(f"{path}-wal")) if p.exists())


def vacuum(path: Path) -> tuple[int, int]:
    """VACUUM the journal at ``path``; its size before and after."""
    before = file_size(path)
    try:
        db = sqlite3.connect(path, timeout=BUSY_TIMEOUT_S, isolation_level=None)
        try:
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        finally:
            db.close()
    except sqlite3.Error as exc:
        raise ToolError(
            f"VACUUM of SQLite journal {path} failed ({exc}); the cleanup itself is applied. "
            "Run the same apply again with --vacuum while no job writes to the file"
        ) from None
    return before, file_size(path)


def size_note(path: Path) -> str:
    """What ``cleanup apply`` says about the file when it does not vacuum it."""
    return (
        f"SQLite journal {path} keeps its size ({fmt_bytes(file_size(path))}): the freed "
        "pages are reused by later appends; --vacuum gives them back to the file system"
    )
