"""The Flink Agents configuration object, and how its options become actionjournal's.

Upstream's keys keep their meaning where actionjournal has the setting (the journal's
store, the threads that run calls); actionjournal's journal settings are reachable as
``journal.<name>`` keys (``journal.on_divergence`` ...). A value that does not map is
refused with its key when the agent is built, never silently ignored (docs/porting.md).
"""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from actionjournal.durable.config import JournalConfig
from actionjournal.durable.errors import ConfigurationError
from actionjournal.flink_agents.api.configuration import ConfigOption, Configuration
from actionjournal.flink_agents.api.core_options import AgentConfigOptions as Options
from actionjournal.flink_agents.api.core_options import AgentExecutionOptions
from actionjournal.stores.config import NoStoreConfig, SqliteStoreConfig
from actionjournal.stores.fluss.config import FlussStoreConfig
from actionjournal.stores.kafka.config import KafkaStoreConfig

StoreConfig = SqliteStoreConfig | KafkaStoreConfig | FlussStoreConfig | NoStoreConfig
_JOURNAL = "journal."


class AgentConfiguration(Configuration):
    """Flat ``key -> value`` settings (upstream: ``flink_agents.plan.configuration``)."""

    def __init__(self, conf_data: dict[str, Any] | None = None) -> None:
        self.conf_data: dict[str, Any] = dict(conf_data or {})

    def get_int(self, key: str, default: int | None = None) -> int:
        return self._typed(key, int, default)

    def get_float(self, key: str, default: float | None = None) -> float:
        return self._typed(key, float, default)

    def get_bool(self, key: str, default: bool | None = None) -> bool:
        return self._typed(key, bool, default)

    def get_str(self, key: str, default: str | None = None) -> str:
        return self._typed(key, str, default)

    def get(self, option: ConfigOption) -> Any:
        return self._typed(option.get_key(), option.get_type(), option.get_default_value())

    def set_str(self, key: str, value: str) -> None:
        self.conf_data[key] = value

    def set_int(self, key: str, value: int) -> None:
        self.conf_data[key] = value

    def set_float(self, key: str, value: float) -> None:
        self.conf_data[key] = value

    def set_bool(self, key: str, value: bool) -> None:
        self.conf_data[key] = value

    def set(self, option: ConfigOption, value: Any) -> None:
        self.conf_data[option.get_key()] = value

    def get_conf_data(self) -> dict[str, Any]:
        return self.conf_data

    def get_config_data_by_prefix(self, prefix: str) -> dict[str, Any]:
        start = f"{prefix}."
        return {k[len(start) :]: v for k, v in self.conf_data.items() if k.startswith(start)}

    def load_from_file(self, config_path: str | None = None) -> None:
        """Add the ``agent:`` section of a YAML file, its nested keys joined with dots."""
        if not config_path:
            return
        import yaml

        raw = yaml.safe_load(Path(config_path).read_text()) or {}
        self.conf_data.update(_flatten(raw.get("agent") or {}))

    def _typed(self, key: str, config_type: type[Any], default: Any) -> Any:
        value = self.conf_data.get(key)
        if value is None:
            return default
        try:
            if config_type is bool and isinstance(value, str):
                if value.strip().lower() not in ("true", "false"):
                    raise ValueError(value)
                return value.strip().lower() == "true"
            if issubclass(config_type, Enum) and isinstance(value, str):
                return (
                    config_type(value.lower())
                    if value not in config_type.__members__
                    else config_type[value]
                )
            return config_type(value)
        except (ValueError, TypeError) as exc:
            raise ValueError(
                f"Invalid value for {key}: {value!r} is not a {config_type.__name__}"
            ) from exc


def _flatten(data: dict[str, Any], parent: str = "") -> dict[str, Any]:
    flat: dict[str, Any] = {}
    for key, value in data.items():
        name = f"{parent}.{key}" if parent else str(key)
        flat.update(_flatten(value, name) if isinstance(value, dict) else {name: value})
    return flat


def journal_config(conf: AgentConfiguration) -> JournalConfig:
    """``journal.<setting>`` keys as actionjournal's journal settings."""
    settings = {k[len(_JOURNAL) :]: v for k, v in conf.conf_data.items() if k.startswith(_JOURNAL)}
    try:
        return JournalConfig(**settings)
    except ValidationError as exc:
        raise ConfigurationError(f"journal.* settings of the agents configuration: {exc}") from None


def store_config(conf: AgentConfiguration, sqlite_path: str) -> StoreConfig:
    """The journal store that ``actionStateStoreBackend`` and its options describe.

    Unset means the embedded SQLite journal at ``sqlite_path`` (upstream: no journal, no
    durability); ``none`` gives upstream's behaviour.
    """
    backend = conf.get(Options.ACTION_STATE_STORE_BACKEND)
    key = Options.ACTION_STATE_STORE_BACKEND.get_key()
    try:
        if backend is None or backend.lower() == "sqlite":
            return SqliteStoreConfig(path=sqlite_path)
        if backend.lower() == "none":
            return NoStoreConfig()
        if backend.lower() == "kafka":
            return KafkaStoreConfig(
                bootstrap_servers=conf.get(Options.KAFKA_BOOTSTRAP_SERVERS),
                partitions=conf.get(Options.KAFKA_ACTION_STATE_TOPIC_NUM_PARTITIONS),
                replication_factor=conf.get(Options.KAFKA_ACTION_STATE_TOPIC_REPLICATION_FACTOR),
                **_given(conf, topic=Options.KAFKA_ACTION_STATE_TOPIC),
            )
        if backend.lower() == "fluss":
            return FlussStoreConfig(
                bootstrap_servers=conf.get(Options.FLUSS_BOOTSTRAP_SERVERS),
                database=conf.get(Options.FLUSS_ACTION_STATE_DATABASE),
                buckets=conf.get(Options.FLUSS_ACTION_STATE_TABLE_BUCKETS),
                client_config=_fluss_security(conf),
                **_given(conf, table=Options.FLUSS_ACTION_STATE_TABLE),
            )
    except ValidationError as exc:
        raise ConfigurationError(
            f"the {backend} journal of the agents configuration: {exc}"
        ) from None
    raise ConfigurationError(
        f"{key}={backend!r}: use sqlite (the default), kafka, fluss, or none (no journal: "
        "actions re-run after a failure)"
    )


def async_threads(conf: AgentConfiguration) -> int | None:
    """``num-async-threads`` when set: the threads that run a subtask's calls and actions."""
    if AgentExecutionOptions.NUM_ASYNC_THREADS.get_key() not in conf.conf_data:
        return None
    return conf.get(AgentExecutionOptions.NUM_ASYNC_THREADS)


def _given(conf: AgentConfiguration, **options: ConfigOption) -> dict[str, Any]:
    """The options that are set, by our name (unset ones keep actionjournal's default)."""
    return {name: conf.get(o) for name, o in options.items() if conf.get(o) is not None}


def _fluss_security(conf: AgentConfiguration) -> dict[str, str]:
    if conf.get(Options.FLUSS_SASL_JAAS_CONFIG) is not None:
        raise ConfigurationError(
            f"{Options.FLUSS_SASL_JAAS_CONFIG.get_key()} is not supported: set "
            f"{Options.FLUSS_SASL_USERNAME.get_key()} and {Options.FLUSS_SASL_PASSWORD.get_key()}"
        )
    protocol = conf.get(Options.FLUSS_SECURITY_PROTOCOL)
    client = {} if protocol == "PLAINTEXT" else {"security.protocol": protocol}
    if conf.get(Options.FLUSS_SASL_USERNAME) is not None:
        client["security.sasl.mechanism"] = conf.get(Options.FLUSS_SASL_MECHANISM)
        client["security.sasl.username"] = conf.get(Options.FLUSS_SASL_USERNAME)
        client["security.sasl.password"] = conf.get(Options.FLUSS_SASL_PASSWORD) or ""
    return client
