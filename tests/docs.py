"""Code samples of the docs, so tests can run them as written."""

from __future__ import annotations

import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs"


def docs_sample(page: str, containing: str) -> str:
    """The one python block of ``docs/<page>`` that contains ``containing``."""
    text = (DOCS / page).read_text()
    (block,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if containing in b]
    return block
