"""Promises of the documentation as a whole: which pages exist, what they hold, where they
are linked from (the python blocks themselves run in tests/test_docs_samples.py)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import typing

from actionjournal.stores import StoreConfig
from tests import docs_shell
from tests.docs import DOCS, ROOT, blocks_of


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


def test_getting_started_runs_as_written_and_again_in_the_same_directory(tmp_path):
    """The page's commands, pasted in order (shop.py saved where it says), then everything
    after the setup again: the crash, the restart and the evidence hold both times."""
    page = docs_shell.steps(DOCS / "getting-started.md")
    setup, *rest = page
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    code, out = docs_shell.run([setup, *rest, *rest], env, timeout=300)
    assert code == 0, out
    kinds = ["setup", *("file" if s.file else "sh" for s in rest)]
    first = [text for kind, text in zip(kinds, out[: len(page)], strict=True) if kind == "sh"]
    again = [text for kind, text in zip(kinds[1:], out[len(page) :], strict=True) if kind == "sh"]
    (workdir,) = tmp_path.iterdir()  # the page's `cd "$(mktemp -d)"`
    crash, restart, ledger, inspect = first
    # bash says "Killed" (a terminal's bash: the word alone), then the page's own line
    assert "Killed" in crash
    assert crash.split()[-8:] == ["killed:", "exit", "status", "137", "o-1", "30", "o-2", "12"]
    assert "calls made: 3, answered by the journal: 1, finished actions replayed: 1" in restart
    assert ledger.split() == ["1", "o-1", "30", "1", "o-2", "12", "1", "o-3", "5"]
    tree = inspect
    assert tree.startswith("key 'alice' (key id ") and "run seq=1  finished" in tree
    assert tree.count("__main__:charge  finished") == 1 and "-> {'order': 'o-2'" in tree
    assert "call 1 __main__:ship  finished" in tree
    # Again, in the same directory: nothing killed, nothing charged again.
    assert "killed" not in again[0]
    assert "calls made: 0, answered by the journal: 0, finished actions replayed: 3" in again[1]
    assert again[2].split() == ledger.split()
    assert (workdir / "payments.log").read_text().count("o-2") == 1


def test_the_chat_page_pasted_into_one_file_runs_and_runs_again(tmp_path):
    """Its blocks, in order, as one script: no block redefines another's class, and its
    asserts hold on a second run over the journal of the first."""
    code = "\n".join(
        b.code for b in blocks_of(DOCS / "chat-models.md") if not (b.not_run or b.excerpt)
    )
    (tmp_path / "page.py").write_text(code)
    for attempt in ("first", "second"):
        done = subprocess.run(
            [sys.executable, "page.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300
        )
        assert done.returncode == 0, f"{attempt} run:\n{done.stderr[-3000:]}"
        assert "'verdict'" in done.stdout
