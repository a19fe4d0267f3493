from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from actionjournal.stores import MemoryStore, SqliteStore
from actionjournal.stores.base import ActionStateStore

STORE_KINDS = ["memory", "sqlite"]


def make_store(kind: str, tmp_path: Path, **kwargs) -> ActionStateStore:
    if kind == "memory":
        return MemoryStore(**kwargs)
    if kind == "sqlite":
        return SqliteStore(tmp_path / "journal.db", **kwargs)
    raise ValueError(kind)


@pytest.fixture(params=STORE_KINDS)
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[ActionStateStore]:
    s = make_store(request.param, tmp_path)
    yield s
    s.close()
