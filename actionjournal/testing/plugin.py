"""pytest plugin: store fixtures for users' and our own restore tests.

Loaded automatically (entry point ``pytest11``) when actionjournal is installed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actionjournal.stores.sqlite import SqliteStore


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[SqliteStore]:
    """A fresh SQLite journal in the test's temporary directory."""
    store = SqliteStore(tmp_path / "journal.db")
    yield store
    store.close()
