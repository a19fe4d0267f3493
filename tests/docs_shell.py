"""A docs page run top to bottom as a reader pastes it into a terminal.

The page's ``sh`` blocks run in order in one ``bash -euo pipefail`` session (a variable
used before any block defines it fails the run), and each python block marked
``<!-- docs-test: file=NAME -->`` is saved as NAME in the session's current directory
where the page says to save it. A ``sh`` block right after ``<!-- test: not run: REASON -->``
is skipped (one a test cannot run as written, e.g. an install from the network); one after
``<!-- test: NAME -->`` can be found by its name. Blocks of other languages (sample output)
are not run. The page's markers are HTML comments: the site leaves them out.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.docs import FENCE, ROOT, blocks_of

_NAME = re.compile(r"^\s*<!--\s*test:\s*(.*?)\s*-->\s*$")
_MARK = "@@docs-step "


@dataclass(frozen=True)
class Step:
    """One ``sh`` block to run, or one file to save, at ``line`` of the page."""

    line: int
    code: str
    name: str | None = None  # <!-- test: NAME -->
    file: str | None = None  # a python block saved as this file


def steps(page: Path) -> list[Step]:
    files = {b.line: b for b in blocks_of(page) if b.file}
    lines = page.read_text().splitlines()
    found: list[Step] = []
    name, i = None, 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if opened is None:
            marker = _NAME.match(lines[i])
            if marker:
                name = marker.group(1)
            elif lines[i].strip():
                name = None
            i += 1
            continue
        indent, fence, lang = opened.groups()
        start, body = i + 1, []
        i += 1
        while i < len(lines) and not lines[i].strip().startswith(fence):
            body.append(lines[i][len(indent) :])
            i += 1
        i += 1
        code = "\n".join(body) + "\n"
        if lang == "sh" and not (name or "").startswith("not run:"):
            found.append(Step(start, code, name=name))
        elif start in files:
            found.append(Step(start, code, file=files[start].file))
        name = None
    return found


def script(page_steps: list[Step]) -> str:
    """The steps as one bash script that prints a marker line before each step's output."""
    parts = []
    for step in page_steps:
        parts.append(f"printf '\\n{_MARK}%s\\n' {step.line}")
        if step.file:
            parts.append(f"cat > {step.file} <<'__DOCS_FILE__'\n{step.code}__DOCS_FILE__")
        else:
            parts.append(step.code)
    return "\n".join(parts) + "\n"


def run(
    page_steps: list[Step], env: dict[str, str], timeout: float, cwd: Path = ROOT
) -> tuple[int, list[str]]:
    """Run the steps in one bash session: its exit code, and the output of each step that
    ran, in order (fewer than the steps when one failed)."""
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", script(page_steps)],
        cwd=cwd,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=timeout,
    )
    outputs: list[str] = []
    for text in done.stdout.splitlines(keepends=True):
        if text.startswith(_MARK):
            outputs.append("")
        elif outputs:
            outputs[-1] += text
    return done.returncode, outputs
