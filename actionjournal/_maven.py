"""Resolve Maven artifacts (with their runtime dependencies) into a local jar directory.

Dev tooling (a real Kafka broker, later Fluss and ZooKeeper) runs from jars published on
Maven Central instead of from downloaded distribution tarballs: Maven already knows how to
fetch and cache them, and ``~/.m2`` makes repeat resolutions work without network access.

The jars land in ``<cache>/maven/<name>/`` outside the repository, where ``<cache>`` is
``$ACTIONJOURNAL_CACHE`` or ``~/.cache/actionjournal``. A stamp file marks a finished
resolution, so a second call costs one ``stat``.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from xml.sax.saxutils import escape

__all__ = ["MavenError", "cache_dir", "resolve"]

# Pinned so the result does not depend on the local Maven's default plugin version, and so a
# warm ~/.m2 needs no metadata lookups.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1"

_STAMP = ".resolved.json"


class MavenError(RuntimeError):
    """Maven is missing or could not resolve the requested artifacts."""


def cache_dir(*parts: str) -> Path:
    """Return (and create) a directory under the actionjournal cache root."""
    root = os.environ.get("ACTIONJOURNAL_CACHE") or Path.home() / ".cache" / "actionjournal"
    path = Path(root).expanduser().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path


def resolve(name: str, coordinates: Sequence[str], *, timeout: float = 900.0) -> Path:
    """Return a directory holding the jars of ``coordinates`` and their runtime dependencies.

    ``name`` names the cache entry and should include a version (``"kafka-4.1.1"``);
    coordinates are ``group:artifact:version`` or ``group:artifact:version:classifier``.
    Use the result as a Java class path with ``f"{path}/*"``. Safe to call from several
    processes at once: one resolves, the others wait for it.
    """
    if not name or "/" in name or name.startswith("."):
        raise ValueError(f"bad cache entry name {name!r}: use something like 'kafka-4.1.1'")
    coords = [_parse(c) for c in coordinates]
    if not coords:
        raise ValueError("resolve() needs at least one Maven coordinate")
    root = cache_dir("maven")
    dest = root / name
    expected = {"coordinates": list(coordinates)}
    if _stamp_matches(dest, expected):
        return dest

    with open(root / f".{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file is closed
        if _stamp_matches(dest, expected):  # another process finished while we waited
            return dest
        mvn = shutil.which("mvn")
        if mvn is None:
            raise MavenError(
                "mvn not found on PATH: install Maven (e.g. `apt-get install maven`) "
                f"to download {', '.join(coordinates)}"
            )
        with tempfile.TemporaryDirectory(dir=root, prefix=f".{name}-") as tmp:
            work = Path(tmp)
            jars = work / "jars"
            (work / "pom.xml").write_text(_pom(coords))
            cmd = [
                mvn, "-q", "-B", "-f", str(work / "pom.xml"),
                f"{DEPENDENCY_PLUGIN}:copy-dependencies",
                f"-DoutputDirectory={jars}",
                "-DincludeScope=runtime",
            ]  # fmt: skip
            try:
                proc = subprocess.run(
                    cmd, capture_output=True, text=True, timeout=timeout, check=False
                )
            except subprocess.TimeoutExpired as exc:
                raise MavenError(
                    f"mvn did not finish resolving {name} within {timeout:.0f} s; check "
                    "network access to Maven Central (or a mirror in ~/.m2/settings.xml)"
                ) from exc
            if proc.returncode != 0 or not any(jars.glob("*.jar")):
                output = re.sub(r"\x1b\[[0-9;]*m", "", proc.stdout + proc.stderr)
                lines = [x for x in output.splitlines() if x.strip() not in ("", "[ERROR]")]
                # Drop Maven's generic "re-run with -e / -X" advice after the real error.
                cut = next((i for i, x in enumerate(lines) if "To see the full stack" in x), None)
                tail = "\n".join(lines[:cut][-25:])
                raise MavenError(
                    f"mvn failed to resolve {', '.join(coordinates)} (exit {proc.returncode}); "
                    "check the coordinates and network access to Maven Central (or a mirror "
                    f"in ~/.m2/settings.xml). Maven said:\n{tail}"
                )
            (jars / _STAMP).write_text(json.dumps(expected))
            if dest.exists():  # stale entry from other coordinates or an interrupted run
                shutil.rmtree(dest)
            jars.rename(dest)
    return dest


def _parse(coordinate: str) -> tuple[str, ...]:
    parts = coordinate.split(":")
    if len(parts) not in (3, 4) or not all(parts):
        raise ValueError(
            f"bad Maven coordinate {coordinate!r}: expected group:artifact:version"
            " or group:artifact:version:classifier"
        )
    return tuple(parts)


def _pom(coords: list[tuple[str, ...]]) -> str:
    deps = []
    for group, artifact, version, *classifier in coords:
        extra = f"<classifier>{escape(classifier[0])}</classifier>" if classifier else ""
        deps.append(
            f"    <dependency><groupId>{escape(group)}</groupId>"
            f"<artifactId>{escape(artifact)}</artifactId>"
            f"<version>{escape(version)}</version>{extra}</dependency>"
        )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0">\n'
        "  <modelVersion>4.0.0</modelVersion>\n"
        "  <groupId>actionjournal.tools</groupId><artifactId>resolve</artifactId>"
        "<version>0</version><packaging>pom</packaging>\n"
        "  <dependencies>\n" + "\n".join(deps) + "\n  </dependencies>\n</project>\n"
    )


def _stamp_matches(dest: Path, expected: dict[str, list[str]]) -> bool:
    try:
        return bool(json.loads((dest / _STAMP).read_text()) == expected)
    except (OSError, ValueError):
        return False
