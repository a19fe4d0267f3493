"""Python code blocks of README.md and docs/*.md, so tests run them as written
(tests/test_docs_samples.py runs every one; a few tests run some with more checks).

A block runs alone, in a new interpreter and working directory, unless an HTML comment
right before its fence says otherwise::

    <!-- docs-test: flink slow continues -->
    <!-- docs-test: kafka broker:9092=aj_kafka_bootstrap -->
    <!-- docs-test: file=shop.py -->
    <!-- docs-test: continues pytest file=test_shop.py -->
    <!-- docs-test: excerpt of examples/parallel_sentiment/job.py -->
    <!-- docs-test: not run: why this block cannot run -->

Words:

- ``slow``, ``flink``, ``kafka``, ``fluss``: the pytest markers of what the block needs.
- ``continues``: the block runs after the page's previous block that runs, in the same
  interpreter and working directory (a page-level sequence, run in page order).
- ``file=NAME``: the block is the file NAME in the working directory, imported as a
  module; with ``pytest`` it is a test module, run by ``python -m pytest NAME``.
- ``TEXT=FIXTURE``: TEXT in the block (a placeholder address) is replaced by the value
  of the pytest fixture FIXTURE.
- ``not run: REASON``: an exemption; the block is only compiled, and its test is skipped
  with the reason.
- ``excerpt of PATH``: an exemption for a block that shows part of a repository file
  that other tests run; each of its lines must be a line of that file, in order.

A sequence runs as one script would: a reader pastes its blocks into one file, in order.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
MARKERS = ("slow", "flink", "kafka", "fluss")
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
DIRECTIVE = re.compile(r"^\s*<!--\s*docs-test:(.*?)-->\s*$")
PYTHON = {"python", "py", "python3"}


class DocsTestError(Exception):
    """A docs-test directive that cannot be honoured (says where)."""


@dataclass(frozen=True)
class Block:
    """One python block: where it is, its code and what its directive says."""

    page: str  # relative to the repository root
    line: int  # of the opening fence, 1-based
    heading: str
    code: str
    markers: tuple[str, ...] = ()
    continues: bool = False
    file: str | None = None
    pytest: bool = False
    substitutions: tuple[tuple[str, str], ...] = ()
    not_run: str | None = None
    excerpt: str | None = None
    previous: Block | None = field(default=None, compare=False, repr=False)

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line} {self.heading}".rstrip()

    def chain(self) -> list[Block]:
        """This block and the blocks it continues, first one first."""
        blocks = [self]
        while blocks[0].continues:
            assert blocks[0].previous is not None
            blocks.insert(0, blocks[0].previous)
        return blocks

    def all_markers(self) -> list[str]:
        """Markers of the whole sequence: running this block runs its predecessors."""
        return [m for m in MARKERS if any(m in b.markers for b in self.chain())]


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]


def _directive(words: str, where: str) -> dict:
    words = words.strip()
    found: dict = {"markers": [], "substitutions": []}
    if words.startswith("not run:"):
        reason = words.removeprefix("not run:").strip()
        if not reason:
            raise DocsTestError(f"{where}: 'not run:' needs a reason")
        return {"not_run": reason}
    if words.startswith("excerpt of "):
        path = words.removeprefix("excerpt of ").strip()
        if not (ROOT / path).is_file():
            raise DocsTestError(f"{where}: 'excerpt of' names no file of the repository: {path}")
        return {"excerpt": path}
    for word in words.split():
        if word in MARKERS:
            found["markers"].append(word)
        elif word in ("continues", "pytest"):
            found[word] = True
        elif word.startswith("file="):
            found["file"] = word.removeprefix("file=")
        elif "=" in word:
            text, fixture = word.rsplit("=", 1)
            found["substitutions"].append((text, fixture))
        else:
            raise DocsTestError(f"{where}: unknown docs-test word {word!r} (see tests/docs.py)")
    if found.get("pytest") and not found.get("file"):
        raise DocsTestError(f"{where}: 'pytest' needs file=NAME")
    found["markers"] = tuple(found["markers"])
    found["substitutions"] = tuple(found["substitutions"])
    return found


def blocks_of(path: Path) -> list[Block]:
    """Every python block of a Markdown page, in page order, with its directive."""
    page = str(path.relative_to(ROOT))
    lines = path.read_text().splitlines()
    blocks: list[Block] = []
    heading, pending, fence, i = "", None, None, 0
    while i < len(lines):
        line = lines[i]
        opened = FENCE.match(line)
        if opened is None:
            if line.startswith("#"):
                heading = line.lstrip("#").strip()
            match = DIRECTIVE.match(line)
            if match:
                pending = (_directive(match.group(1), f"{page}:{i + 1}"), i + 1)
            elif line.strip() and pending is not None:
                raise DocsTestError(f"{page}:{pending[1]}: a docs-test comment not before a block")
            i += 1
            continue
        indent, fence, lang = opened.groups()
        start, body = i + 1, []  # the opening fence's line, 1-based
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent) :] if lines[i].startswith(indent) else lines[i])
            i += 1
        i += 1
        if lang not in PYTHON:
            if pending is not None:
                raise DocsTestError(
                    f"{page}:{pending[1]}: a docs-test comment before a {lang!r} block"
                )
            continue
        directive = pending[0] if pending else {}
        runnable = [b for b in blocks if not (b.not_run or b.excerpt)]
        previous = runnable[-1] if runnable else None  # exempt blocks are in no sequence
        if directive.get("continues") and previous is None:
            raise DocsTestError(f"{page}:{start}: 'continues' but no block before runs")
        blocks.append(
            Block(page, start, heading, "\n".join(body) + "\n", previous=previous, **directive)
        )
        pending = None
    if pending is not None:
        raise DocsTestError(f"{page}:{pending[1]}: a docs-test comment not before a block")
    return blocks


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks_of(path)]


def docs_sample(page: str, containing: str) -> str:
    """The one python block of ``docs/<page>`` that contains ``containing``."""
    (block,) = [b.code for b in blocks_of(DOCS / page) if containing in b.code]
    return block
