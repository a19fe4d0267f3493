"""Options of public constructors and functions, checked when given: a misspelled choice
(``on_run_failure="dead-leter"``) must fail at once, naming the option, never behave as the
default."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from actionjournal.durable.errors import ConfigurationError

M = TypeVar("M", bound=BaseModel)


def checked(owner: str, model: type[M], **values: Any) -> M:
    """``model`` validated from ``values`` (only the options given), or a
    :class:`ConfigurationError` naming ``owner``'s option, its value and what it may be."""
    try:
        return model.model_validate(values)
    except ValidationError as exc:
        problems = []
        for error in exc.errors():
            name = ".".join(str(part) for part in error["loc"])
            given = values.get(str(error["loc"][0])) if error["loc"] else None
            problems.append(f"{name}={given!r}: {error['msg']}{_suggestion(error, given)}")
        raise ConfigurationError(f"{owner}: " + "; ".join(problems)) from None


def _suggestion(error: Any, given: Any) -> str:
    expected = (error.get("ctx") or {}).get("expected")
    if not isinstance(given, str) or not isinstance(expected, str):
        return ""
    choices = [part.strip(" '") for part in expected.replace(" or ", ", ").split(",")]
    close = difflib.get_close_matches(given, choices, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def check_callable(owner: str, name: str, value: Callable[..., Any] | None) -> None:
    """``value`` is a callable or ``None``, else a ConfigurationError naming the option."""
    if value is not None and not callable(value):
        raise ConfigurationError(
            f"{owner}: {name}={value!r} is not callable: pass a function, or None"
        )
