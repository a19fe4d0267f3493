"""Promises of the documentation as a whole: which pages exist, what they hold, where they
are linked from (the python blocks themselves run in tests/test_docs_samples.py)."""

from __future__ import annotations

import re
import typing

from actionjournal.stores import StoreConfig
from tests.docs import DOCS, ROOT


def table_rows(text: str) -> list[list[str]]:
    """The rows of the page's Markdown tables, as cells (header and rule left out)."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if "|" in line else []
        if cells and not set(line) <= set("|- :"):
            rows.append(cells)
    return rows


def test_which_store_when_is_one_table_on_one_page_linked_from_the_readme():
    page = (DOCS / "stores.md").read_text()
    (header, *rows) = table_rows(page)
    assert header[:2] == ["store", "use it for"]
    backends = {
        typing.get_args(c.model_fields["backend"].annotation)[0]
        for c in typing.get_args(typing.get_args(StoreConfig)[0])
    }
    named = {re.match(r"\*\*(\w+)\*\*", row[0]).group(1).lower() for row in rows}
    assert named == backends  # every store a job can be configured with, once
    assert "](docs/stores.md)" in (ROOT / "README.md").read_text()
