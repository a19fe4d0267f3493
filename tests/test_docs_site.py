"""The documentation site (mkdocs.yml, ``make docs``) builds strictly, and its API reference
shows every public name as users import it, with its signature."""

from __future__ import annotations

import html
import importlib
import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.docs import ROOT

_HOOKS = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs/_site/hooks.py")
assert _HOOKS is not None and _HOOKS.loader is not None
hooks = importlib.util.module_from_spec(_HOOKS)
_HOOKS.loader.exec_module(hooks)
PACKAGES = hooks.PACKAGES  # the site's own list of public packages


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("site")
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    warnings = [line for line in done.stderr.splitlines() if not line.startswith("INFO")]
    assert done.returncode == 0 and warnings == [], done.stderr[-4000:]
    return out


def text(page: Path) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", page.read_text()))


def test_the_api_reference_documents_every_public_name_where_users_import_it(site):
    for package in PACKAGES:
        page = (site / "reference" / package / "index.html").read_text()
        for name in importlib.import_module(package).__all__:
            anchor = f'id="{package}.{name}"'
            alias = f'<h3 id="{name.lower()}"><code>{name}</code>'  # linked to where documented
            assert anchor in page or alias in page, f"{package}.{name} is not in the reference"


def test_constructors_and_signatures_are_shown(site):
    stores = text(site / "reference" / "actionjournal.stores" / "index.html")
    assert re.search(r"KafkaStore\(\s*config: KafkaStoreConfig,", stores)
    assert "KafkaStore(KafkaStoreConfig(bootstrap_servers=..., topic=...))" in stores
    root = text(site / "reference" / "actionjournal" / "index.html")
    assert re.search(r"LocalRunner\(\s*agent: Agent,\s*store: Store,", root)


def test_pages_show_no_test_directives_and_no_sphinx_roles(site):
    for page in site.rglob("*.html"):
        shown = page.read_text()
        assert "docs-test:" not in shown and "<!-- test:" not in shown, page
        assert not re.search(r":(class|func|meth|mod|exc):", text(page)), page
