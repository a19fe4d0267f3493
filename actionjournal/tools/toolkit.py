"""What the operator tools share: store options, key options, errors with exit codes, progress.

Exit codes of every operator tool (``journal inspect``, ``cleanup plan``, ``cleanup apply``):

* 0: done.
* 1: refused or failed with a clear message on stderr; for ``cleanup apply``, nothing was
  deleted.
* 2: usage: a missing or bad option.
* 3: ``cleanup apply`` only: boundaries were journaled and some deletions failed part-way;
  running the same apply again finishes the job.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.identity import key_id as make_key_id
from actionjournal.stores.base import ActionStateStore

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3

BACKENDS = ("sqlite", "kafka")


class ToolError(Exception):
    """A refusal or failure the user can act on; ``code`` is the process exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


class UsageError(ToolError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of exiting, so callers keep control."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def add_store_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_argument_group("journal store")
    group.add_argument(
        "--store", required=required, metavar="BACKEND", help="sqlite or kafka (the job's store)"
    )
    group.add_argument("--path", help="sqlite: the journal file")
    group.add_argument("--bootstrap", help="kafka: bootstrap servers host:port[,host:port]")
    group.add_argument("--topic", help="kafka: the journal topic")
    group.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="kafka: a librdkafka setting (SASL/SSL...); repeat for more",
    )
    group.add_argument(
        "--signing-key-env",
        metavar="VAR",
        help="name of an environment variable holding journal.signing_key, if the job signs "
        "its journal (records are then verified, and cleanup's boundary records signed)",
    )


def add_namespace_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--namespace", default="default", help="journal.namespace of the job (default: default)"
    )
    parser.add_argument(
        "--operator-uid",
        help="the agent operator's uid; may be left out when the namespace has only one",
    )


def add_progress_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )


def store_location(args: argparse.Namespace) -> dict[str, Any] | None:
    """The store the options name, validated; ``None`` when no ``--store`` was given."""
    backend = args.store
    if backend is None:
        if args.path or args.bootstrap or args.topic:
            raise UsageError("--path/--bootstrap/--topic need --store sqlite|kafka")
        return None
    if backend not in BACKENDS:
        raise UsageError(
            f"unknown store {backend!r}: use --store sqlite --path FILE or "
            "--store kafka --bootstrap HOST:PORT --topic TOPIC"
        )
    if backend == "sqlite":
        if not args.path:
            raise UsageError("--store sqlite needs --path FILE (the journal file)")
        if args.bootstrap or args.topic:
            raise UsageError("--bootstrap/--topic are for --store kafka")
        return {"backend": "sqlite", "path": str(Path(args.path).resolve())}
    if not args.bootstrap or not args.topic:
        raise UsageError("--store kafka needs --bootstrap HOST:PORT and --topic TOPIC")
    if args.path:
        raise UsageError("--path is for --store sqlite")
    client_config: dict[str, str] = {}
    for item in args.client_config:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--client-config takes KEY=VALUE, not {item!r}")
        client_config[name] = value
    return {
        "backend": "kafka",
        "bootstrap": args.bootstrap,
        "topic": args.topic,
        "client_config": client_config,
    }


def record_codec(args: argparse.Namespace) -> RecordCodec:
    var = getattr(args, "signing_key_env", None)
    if not var:
        return RecordCodec()
    value = os.environ.get(var)
    if not value:
        raise UsageError(f"--signing-key-env {var}: the environment variable is not set")
    return RecordCodec(value.encode())


def open_store(location: dict[str, Any], codec: RecordCodec) -> ActionStateStore:
    """Open an existing journal; never creates one (a typo must not make a new journal)."""
    from actionjournal.durable.errors import StoreError

    if location["backend"] == "sqlite":
        path = Path(location["path"])
        if not path.is_file():
            raise ToolError(f"no SQLite journal at {path}: the file does not exist")
        import sqlite3

        try:
            with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
                tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master")}
        except sqlite3.Error as exc:
            raise ToolError(f"{path} is not a readable SQLite file: {exc}") from None
        if "journal" not in tables or "meta" not in tables:
            raise ToolError(f"{path} is an SQLite file but not an actionjournal journal")
        from actionjournal.stores.sqlite import SqliteStore

        try:
            return SqliteStore(path, codec)
        except StoreError as exc:
            raise ToolError(str(exc)) from None
    try:
        from actionjournal.stores.kafka import KafkaActionStateStore
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise ToolError(f"the Kafka store needs confluent-kafka: {exc}") from None
    try:
        return KafkaActionStateStore.open_existing(
            location["bootstrap"],
            location["topic"],
            location.get("client_config") or {},
            codec,
            admin_timeout_s=float(os.environ.get("ACTIONJOURNAL_ADMIN_TIMEOUT_S", "30")),
        )
    except StoreError as exc:
        raise ToolError(str(exc)) from None


def describe_location(location: dict[str, Any]) -> str:
    if location["backend"] == "sqlite":
        return f"SQLite journal {location['path']}"
    return f"Kafka topic {location['topic']!r} on {location['bootstrap']}"


def add_key_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--key", help="the Flink key's value, e.g. user_1 (see --key-type)")
    parser.add_argument(
        "--key-type",
        default="str",
        choices=("str", "int", "json"),
        help="how to read --key: key ids are digests of typed keys, so 1 and '1' differ",
    )
    parser.add_argument("--key-id", help="the key id (hex digest) instead of --key")


def key_id_from_args(args: argparse.Namespace) -> str | None:
    if args.key is not None and args.key_id is not None:
        raise UsageError("give --key or --key-id, not both")
    if args.key_id is not None:
        return args.key_id
    if args.key is None:
        return None
    raw = args.key
    try:
        value: Any = {"str": str, "int": int, "json": json.loads}[args.key_type](raw)
    except ValueError as exc:
        raise UsageError(f"--key {raw!r} is not a valid {args.key_type}: {exc}") from None
    try:
        return make_key_id(value)
    except TypeError as exc:
        raise UsageError(str(exc)) from None


class ProgressBar:
    """A plain one-line progress bar on stderr: ``label [#####.....]  45% 450/1000``.

    Draws only when enabled (by default when stderr is a terminal), at most 10 times a
    second, so scripts and logs are not flooded.
    """

    def __init__(self, label: str, enabled: bool | None = None, stream: TextIO | None = None):
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.label = label
        self._last = 0.0
        self._drawn = False

    def __call__(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self._last < 0.1 and done < total:
            return
        self._last = now
        fraction = min(1.0, done / total) if total > 0 else 1.0
        width = 30
        filled = int(fraction * width)
        bar = "#" * filled + "." * (width - filled)
        self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {done}/{total}")
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False


def fmt_time(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) + f".{int(ts % 1 * 1000):03d}"


def fmt_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover


def run_tool(fn: Any, argv: list[str]) -> int:
    """Run a tool's main; a ToolError becomes its message on stderr and its exit code."""
    try:
        return fn(argv)
    except ToolError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.code
