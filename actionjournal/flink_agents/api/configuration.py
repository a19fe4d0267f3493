"""Configuration as Flink Agents reads and writes it: keys with typed values and options."""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any


class ConfigOption:
    """A key, the type of its value, and its default."""

    def __init__(self, key: str, config_type: type[Any], default: Any | None = None) -> None:
        self._key = key
        self._type = config_type
        self._default_value = default

    def get_key(self) -> str:
        return self._key

    def get_type(self) -> type[Any]:
        return self._type

    def get_default_value(self) -> Any:
        return self._default_value

    def __repr__(self) -> str:
        return f"ConfigOption({self._key!r}, {self._type.__name__}, {self._default_value!r})"


class WritableConfiguration(ABC):
    @abstractmethod
    def set_str(self, key: str, value: str) -> None: ...

    @abstractmethod
    def set_int(self, key: str, value: int) -> None: ...

    @abstractmethod
    def set_float(self, key: str, value: float) -> None: ...

    @abstractmethod
    def set_bool(self, key: str, value: bool) -> None: ...

    @abstractmethod
    def set(self, option: ConfigOption, value: Any) -> None: ...


class ReadableConfiguration(ABC):
    @abstractmethod
    def get_int(self, key: str, default: int | None = None) -> int: ...

    @abstractmethod
    def get_float(self, key: str, default: float | None = None) -> float: ...

    @abstractmethod
    def get_bool(self, key: str, default: bool | None = None) -> bool: ...

    @abstractmethod
    def get_str(self, key: str, default: str | None = None) -> str: ...

    @abstractmethod
    def get(self, option: ConfigOption) -> Any: ...


class Configuration(WritableConfiguration, ReadableConfiguration, ABC):
    """Read and write access; ``AgentsExecutionEnvironment.get_config()`` returns one."""
