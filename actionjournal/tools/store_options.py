"""Which journal a command reads: ``--store ...`` options become the job's own store config.

The tools name a store the way a job does (:mod:`actionjournal.stores.config`), so a plan
records its location as that config's dump and ``apply`` reopens exactly that. A tool never
creates a journal: a mistyped path, topic or table is an error, not a new empty journal.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pydantic

from actionjournal.durable.codec import RecordCodec
from actionjournal.durable.errors import ConfigurationError, StoreError
from actionjournal.durable.store import Cleanable, Inspectable
from actionjournal.stores.config import SqliteStoreConfig
from actionjournal.stores.factory import open_store
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig
from actionjournal.tools.toolkit import ToolError, UsageError, seconds

ToolStoreConfig = SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig
BACKENDS = ("sqlite", "kafka", "fluss")
DEFAULT_TIMEOUT_S = 30.0
_LOCATION = pydantic.TypeAdapter(ToolStoreConfig)
# The option that sets each config field, for error messages.
_OPTIONS = {
    "path": "--path",
    "bootstrap_servers": "--bootstrap",
    "topic": "--topic",
    "database": "--database",
    "table": "--table",
    "client_config": "--client-config",
    "admin_timeout_s": "--timeout",
    "request_timeout_s": "--timeout",
}
_USE = (
    "use --store sqlite --path FILE, --store kafka --bootstrap HOST:PORT [--topic TOPIC], or "
    "--store fluss --bootstrap HOST:PORT [--table TABLE] [--database DB]"
)


def add_store_args(parser: argparse.ArgumentParser, required: bool = True) -> None:
    group = parser.add_argument_group("journal store (the job's store settings)")
    group.add_argument(
        "--store", required=required, choices=BACKENDS, help="the backend the job journals to"
    )
    group.add_argument("--path", help="sqlite: the journal file")
    group.add_argument("--bootstrap", help="kafka, fluss: bootstrap servers host:port[,...]")
    group.add_argument(
        "--topic", help=f"kafka: the journal topic (default: {_default(KafkaStoreConfig, 'topic')})"
    )
    group.add_argument(
        "--database",
        help=f"fluss: the journal's database (default: {_default(FlussStoreConfig, 'database')})",
    )
    group.add_argument(
        "--table", help=f"fluss: the journal table (default: {_default(FlussStoreConfig, 'table')})"
    )
    group.add_argument(
        "--client-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="kafka, fluss: a client setting (SASL/SSL...); repeat for more; never written to "
        "a plan (default: none)",
    )
    group.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT_S,
        metavar="SECONDS",
        help="kafka, fluss: how long to wait for the cluster before giving up",
    )
    group.add_argument(
        "--signing-key-env",
        metavar="VAR",
        help="name of an environment variable holding journal.signing_key, if the job signs "
        "its journal (records are then verified, and cleanup's boundary records signed)",
    )


def _default(kind: type[ToolStoreConfig], field: str) -> str:
    """The store's own default, which a job that sets nothing journals to."""
    return str(kind.model_fields[field].default)


def _client_settings(args: argparse.Namespace) -> dict[str, str]:
    settings: dict[str, str] = {}
    for item in args.client_config:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise UsageError(f"--client-config takes KEY=VALUE, not {item!r}")
        settings[name] = value
    return settings


def _build(kind: type[ToolStoreConfig], **fields: Any) -> ToolStoreConfig:
    """The config, or a usage error naming the option that is wrong (never its value: secrets)."""
    try:
        return kind(**fields)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        field = str(error["loc"][0]) if error["loc"] else ""
        message = str(error["msg"]).removeprefix("Value error, ")
        raise UsageError(f"{_OPTIONS.get(field, field)}: {message}") from None


def store_config(args: argparse.Namespace) -> ToolStoreConfig | None:
    """The store the options name; ``None`` when no ``--store`` was given."""
    backend = args.store
    given = {
        "--path": args.path,
        "--bootstrap": args.bootstrap,
        "--topic": args.topic,
        "--database": args.database,
        "--table": args.table,
    }
    if backend is None:
        named = [option for option, value in given.items() if value is not None]
        if named:
            raise UsageError(f"{', '.join(named)} need --store: {_USE}")
        return None
    wanted = {
        "sqlite": ("--path",),
        "kafka": ("--bootstrap", "--topic"),
        "fluss": ("--bootstrap", "--table", "--database"),
    }[backend]
    foreign = [o for o, value in given.items() if value is not None and o not in wanted]
    if foreign:
        raise UsageError(f"{', '.join(foreign)} not for --store {backend}: {_USE}")
    if backend == "sqlite":
        if not args.path:
            raise UsageError("--store sqlite needs --path FILE (the journal file)")
        if args.client_config:
            raise UsageError("--client-config is for --store kafka or fluss")
        return _build(SqliteStoreConfig, path=str(Path(args.path).resolve()))
    if not args.bootstrap:
        raise UsageError(f"--store {backend} needs --bootstrap HOST:PORT")
    if backend == "kafka":
        return _build(
            KafkaStoreConfig,
            bootstrap_servers=args.bootstrap,
            topic=args.topic or _default(KafkaStoreConfig, "topic"),
            create_topic=False,
            client_config=_client_settings(args),
            admin_timeout_s=args.timeout,
            recovery_cache_bytes=0,
        )
    return _build(
        FlussStoreConfig,
        bootstrap_servers=args.bootstrap,
        table=args.table or _default(FlussStoreConfig, "table"),
        **({"database": args.database} if args.database else {}),
        create_table=False,
        client_config=_client_settings(args),
        request_timeout_s=args.timeout,
        recovery_cache_bytes=0,
    )


def location(config: ToolStoreConfig, store: object = None) -> dict[str, Any]:
    """What a plan records to reach the store again: the config without client settings;
    the one the opened ``store`` found (its real partition or bucket count) when it has one."""
    found = getattr(store, "config", None)
    if isinstance(found, type(config)):
        config = found
    return config.model_dump(mode="json", exclude={"client_config"})


def config_from_location(
    data: Any, args: argparse.Namespace | None = None, where: str = "the plan"
) -> ToolStoreConfig:
    """A recorded location as a config again, with this command's client settings."""
    try:
        config = _LOCATION.validate_python(data)
    except pydantic.ValidationError as exc:
        error = exc.errors()[0]
        place = ".".join(str(part) for part in error["loc"])
        raise ToolError(
            f"{where} names no usable store location ({place}: {error['msg']})"
        ) from None
    if args is not None and args.client_config:
        if isinstance(config, SqliteStoreConfig):
            raise UsageError("--client-config is for --store kafka or fluss")
        config = _build(type(config), **{**dict(config), "client_config": _client_settings(args)})
    return config


def describe(config: ToolStoreConfig) -> str:
    if isinstance(config, SqliteStoreConfig):
        return f"SQLite journal {config.path}"
    if isinstance(config, KafkaStoreConfig):
        return f"Kafka topic {config.topic!r} on {config.bootstrap_servers}"
    return f"Fluss table {config.database}.{config.table} on {config.bootstrap_servers}"


def signing_key(args: argparse.Namespace) -> str | None:
    """The job's ``journal.signing_key`` from the variable ``--signing-key-env`` names."""
    var = getattr(args, "signing_key_env", None)
    if not var:
        return None
    value = os.environ.get(var)
    if not value:
        raise UsageError(f"--signing-key-env {var}: the environment variable is not set")
    return value


def record_codec(args: argparse.Namespace) -> RecordCodec:
    key = signing_key(args)
    return RecordCodec(key.encode() if key else None)


@contextlib.contextmanager
def opened(
    config: ToolStoreConfig, codec: RecordCodec, *, write: bool = False
) -> Iterator[Inspectable]:
    """:func:`open_journal` for a ``with`` block: closed after it, and a journal that cannot
    be read (a damaged SQLite file) is an error naming it."""
    store = open_journal(config, codec, write=write)
    try:
        yield store
    except StoreError as exc:
        raise ToolError(str(exc)) from None
    finally:
        store.close()


def open_journal(
    config: ToolStoreConfig, codec: RecordCodec, *, write: bool = False
) -> Inspectable:
    """Open an existing journal for the tools (:func:`~actionjournal.stores.open_store` with
    ``existing=True``); never creates one. Only ``write=True`` (``cleanup apply``, a
    quarantine) may change it."""
    try:
        return open_store(config, codec, existing=True, read_only=not write)
    except (StoreError, ConfigurationError) as exc:
        raise ToolError(str(exc)) from None
    except Exception as exc:  # a client setting the Kafka or Fluss client does not accept
        if type(exc).__name__ not in ("KafkaException", "FlussError"):
            raise
        raise UsageError(f"--client-config: {exc}") from None


def cleanable(store: Inspectable, config: ToolStoreConfig) -> Cleanable:
    """``store`` as one cleanup can shrink, else the tools' one-line refusal."""
    if isinstance(store, Cleanable):
        return store
    refuse_cleanup(config)
    raise ToolError(f"{describe(config)} cannot be cleaned up")


def refuse_cleanup(config: ToolStoreConfig) -> None:
    """Cleanup deletes below an offset, which only some stores can do."""
    if isinstance(config, FlussStoreConfig):
        raise ToolError(
            f"{describe(config)}: cleanup does not apply to Fluss journals: a log table cannot "
            "delete below an offset; its records go with the table's TTL (table.log.ttl), "
            "which must stay longer than the oldest checkpoint you may restore (docs/fluss.md)"
        )
