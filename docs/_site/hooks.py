"""MkDocs hooks of the documentation site (mkdocs.yml).

- The home page is README.md, its ``docs/...`` links made relative to the site.
- The API reference: one page per public package, generated from the package's
  ``__all__`` (each ``__init__`` names its public attributes, see actionjournal/_lazy.py),
  so every public name is documented as users import it (``actionjournal.stores.KafkaStore``)
  and a name added to ``__all__`` is documented without an edit here. An object exported by
  several packages is documented by the first of :data:`PACKAGES` and linked from the others.
- Links to repository files outside docs/ (``../examples/...``) must name files that exist;
  the site shows them as paths (it holds no copy of the repository). Images out of docs/
  (``![...](../benchmarks/results/soak/rss.png)``, committed results) are the exception: the
  site holds a copy of each under ``repository/``.
- The test suite's directives before code blocks (``<!-- docs-test: ... -->``, tests/docs.py;
  ``<!-- test: NAME -->``, tests/cluster) are left out of the pages.
- Sphinx roles of docstrings (``:class:`X```) are shown as the code they name.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files
from mkdocs.structure.pages import Page

log = logging.getLogger("mkdocs.hooks.actionjournal")
ROOT = Path(__file__).resolve().parents[2]

# The public packages, in the order an object exported by several is documented by the first.
PACKAGES = {
    "actionjournal": "What an agent's code imports: agents, actions, events, the local runner, "
    "call outcomes, retry policies and every public error.",
    "actionjournal.flink": "The PyFlink binding: agents as keyed operators in PyFlink "
    "DataStream jobs, their settings, Kafka sources and an exactly-once Kafka sink, savepoints "
    "([PyFlink jobs](../flink.md), [deploying](../deploying.md)). Needs the `flink` extra.",
    "actionjournal.operator": "The keyed run loop: the local runner, what an action sees, "
    "memory, dead letters.",
    "actionjournal.stores": "Journal stores and their settings ([which store when]"
    "(../stores.md)). A store is built from its config: "
    "`KafkaStore(KafkaStoreConfig(bootstrap_servers=..., topic=...))`; a job passes the "
    "config instead: `AgentsConfig(store=KafkaStoreConfig(...))`.",
    "actionjournal.chat": "Chat models as durable calls: connections, `ctx.chat`, and the "
    "event form.",
    "actionjournal.reconcilers": "Settling calls whose outcome a crash left unknown "
    "([reconcilers](../reconcilers.md)).",
    "actionjournal.tools.cleanup": "Cleanup of the journal: `CleanupLoop`, the continuous "
    "cleanup `actionjournal cleanup run` runs, for a scheduler of your own, and the plan and "
    "apply steps ([operations](../operations.md#continuous-cleanup-cleanup-run)).",
    "actionjournal.testing": "For your test suites: counting services, crash points, local "
    "Flink environments and the restore harness ([testing](../testing.md)).",
    "actionjournal.testing.harness": "The restore-scenario harness: steps, journals by store "
    "config, crash steps in a child process.",
}
_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|data|attr|exc|obj|const):(<code>)~?")
_DIRECTIVE = re.compile(r"^[ \t]*<!--\s*(?:docs-)?test:.*?-->[ \t]*\n", re.M)
_IMAGE = re.compile(r"(!\[[^\]]*\]\()((?:\.\./)+)([^)#\s]+\.(?:png|svg|jpg))\)")
_LINK = re.compile(r"(?<!!)\[([^\]]+)\]\(((?:\.\./)+[^)#\s]+)(#[^)]*)?\)")


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    config.nav.append({"API": [{name: _page(name)} for name in PACKAGES]})
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    home = re.sub(r"\]\(docs/", "](", (ROOT / "README.md").read_text())
    files.append(File.generated(config, "index.md", content=home))
    owner: dict[int, str] = {}
    for name in PACKAGES:
        files.append(File.generated(config, _page(name), content=_reference(name, owner)))
    for image in sorted(_images_out_of_docs()):
        uri = f"repository/{image.relative_to(ROOT).as_posix()}"
        files.append(File.generated(config, uri, abs_src_path=str(image)))
    return files


def _images_out_of_docs() -> set[Path]:
    """The repository's images (outside docs/) that the pages show."""
    found = set()
    for page in (ROOT / "docs").glob("**/*.md"):
        for match in _IMAGE.finditer(page.read_text()):
            path = (page.parent / match.group(2) / match.group(3)).resolve()
            outside = path.is_relative_to(ROOT) and not path.is_relative_to(ROOT / "docs")
            if outside and path.exists():  # a missing one: the page's link fails the build
                found.add(path)
    return found


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    """Test directives left out; links out of docs/ to repository files checked, then shown
    as the path."""
    source = ROOT / "docs" / page.file.src_uri if page.file.src_uri != "index.md" else ROOT

    def shown(match: re.Match[str]) -> str:
        text, target = match.group(1), match.group(2)
        base = source.parent if source != ROOT else ROOT
        path = (base / target).resolve()
        if not path.is_relative_to(ROOT) or path.is_relative_to(ROOT / "docs"):
            return match.group(0)
        if not path.exists():
            log.warning("%s links to %s, which is not in the repository", page.file.src_uri, target)
        where = path.relative_to(ROOT).as_posix()
        return text if where in text else f"{text} (`{where}` in the repository)"

    def image(match: re.Match[str]) -> str:
        path = (source.parent if source != ROOT else ROOT) / match.group(2) / match.group(3)
        where = path.resolve().relative_to(ROOT).as_posix()
        if where.startswith("docs/"):
            return match.group(0)
        up = "../" * page.file.src_uri.count("/")
        return f"{match.group(1)}{up}repository/{where})"

    return _LINK.sub(shown, _IMAGE.sub(image, _DIRECTIVE.sub("", markdown)))


def on_page_content(html: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    return _ROLE.sub(r"\1", html)


def _page(package: str) -> str:
    return f"reference/{package}.md"


def _reference(package: str, owner: dict[int, str]) -> str:
    """The page of ``package``: its names by kind, each documented once over all pages."""
    module = importlib.import_module(package)
    lines = [f"# `{package}`", "", PACKAGES[package], ""]
    groups: dict[str, list[str]] = {"Classes": [], "Functions": [], "Errors": [], "Other": []}
    for name in module.__all__:
        value = getattr(module, name)
        groups[_kind(value)].append(name)
    for title, names in groups.items():
        if not names:
            continue
        lines += [f"## {title}", ""]
        # A name that is the object's own comes before its aliases (old names), which link to it.
        names.sort(key=lambda name: getattr(getattr(module, name), "__name__", name) != name)
        for name in names:
            value = getattr(module, name)
            path = f"{package}.{name}"
            first = owner.setdefault(id(value), path)
            if first == path:
                lines += [f"::: {path}", ""]
            else:
                lines += [f"### `{name}`", "", f"The same object as [`{first}`][{first}].", ""]
    return "\n".join(lines)


def _kind(value: Any) -> str:
    if inspect.isclass(value):
        return "Errors" if issubclass(value, BaseException) else "Classes"
    if inspect.isfunction(value) or inspect.isbuiltin(value):
        return "Functions"
    return "Other"
