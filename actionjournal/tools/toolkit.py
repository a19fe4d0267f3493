"""What every operator command shares: errors and exit codes, argument parsing, times, output.

Exit codes of every command:

* 0: done.
* 1: refused or failed with a clear message on stderr; for ``cleanup apply``, nothing was
  deleted.
* 2: usage: a missing or bad option.
* 3: ``cleanup apply`` only: boundaries were journaled and some deletions failed part-way;
  running the same apply again finishes the job.
* 130: interrupted (Ctrl-C). 141: stdout was closed early (``| head``): nothing is printed.

An error is one line on stderr starting with ``error:``, never a traceback
(``ACTIONJOURNAL_DEBUG=1`` adds the traceback of an unexpected one).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from actionjournal.durable.errors import ActionJournalError
from actionjournal.durable.records import record_time

EXIT_OK = 0
EXIT_REFUSED = 1
EXIT_USAGE = 2
EXIT_PARTIAL = 3
EXIT_INTERRUPTED = 130
EXIT_PIPE = 141


class ToolError(Exception):
    """A refusal or failure the user can act on; ``code`` is the process exit code."""

    def __init__(self, message: str, code: int = EXIT_REFUSED) -> None:
        super().__init__(message)
        self.code = code


class UsageError(ToolError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_USAGE)


class _HelpFormatter(argparse.HelpFormatter):
    """Every option's help ends with its default, when it has one worth saying."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and "%(default)" not in text
            and "default" not in text
            and default not in (None, False, [], argparse.SUPPRESS)
        ):
            text += " (default: %(default)s)"
        return text


class ArgumentParser(argparse.ArgumentParser):
    """argparse that raises :class:`UsageError` instead of printing usage and exiting."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{self.prog}: {message}")


def report(message: str, prefix: str = "error") -> None:
    """``prefix: message`` on stderr; later lines (details such as a log tail) indented."""
    ProgressBar.end_line()
    first, *rest = str(message).strip().splitlines() or [""]
    lines = [f"{prefix}: {first}", *(f"  {line}" for line in rest)]
    print("\n".join(lines), file=sys.stderr, flush=True)


def warn(message: str) -> None:
    report(message, "warning")


def run_tool(fn: Callable[[list[str]], int], argv: Sequence[str]) -> int:
    """Run a command; whatever goes wrong becomes one ``error:`` line and an exit code."""
    try:
        code = fn(list(argv))
        sys.stdout.flush()  # a closed pipe shows here, inside the handler
        return code
    except ToolError as exc:
        report(str(exc))
        return exc.code
    except SystemExit as exc:  # argparse after --help, or a parser that exits by itself
        return exc.code if isinstance(exc.code, int) else EXIT_USAGE
    except BrokenPipeError:
        # The reader (``| head``) has gone: stop quietly, and keep Python's own flush at exit
        # from failing on the same pipe.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_PIPE
    except KeyboardInterrupt:
        report("interrupted; nothing was left half done by the interruption itself")
        return EXIT_INTERRUPTED
    except ActionJournalError as exc:
        report(str(exc))
        return EXIT_REFUSED
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        report(f"{exc.strerror or exc}{where}")
        return EXIT_REFUSED
    except Exception as exc:
        if os.environ.get("ACTIONJOURNAL_DEBUG"):
            traceback.print_exc()
        report(
            f"unexpected {type(exc).__name__}: {exc} (a bug in actionjournal: please report it; "
            "ACTIONJOURNAL_DEBUG=1 shows where it happened)"
        )
        return EXIT_REFUSED


# -- options every command shares -------------------------------------------------------------


def add_namespace_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--namespace", default="default", help="journal.namespace of the job")
    parser.add_argument(
        "--operator-uid",
        help="the agent operator's uid; may be left out when the namespace has only one, or "
        "with --snapshot (which names it)",
    )


def add_progress_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: when stderr is a terminal)",
    )


# -- values of options -----------------------------------------------------------------------


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds, at least 0."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a number of seconds, at least 0")
    return value


_UNITS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def duration(text: str) -> float:
    """An argparse type: a time span above 0, in seconds: ``90``, ``90s``, ``500ms``, ``5m``,
    ``1h``, ``1d``."""
    number = text.strip()
    unit = next((u for u in ("ms", "s", "m", "h", "d") if number.endswith(u)), "s")
    number = number.removesuffix(unit).strip()
    try:
        value = float(number) * _UNITS[unit]
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a duration: give a number with a unit, e.g. 30s, 5m, 1h"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a duration above 0, e.g. 30s, 5m, 1h")
    return value


def positive_int(text: str) -> int:
    """An argparse type: an integer, at least 0."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: give a whole number, at least 0")
    return value


LATEST_TIME = datetime(9999, 12, 31).timestamp()
FUTURE_SLACK_S = 60.0


def parse_time(text: str, option: str, now: float | None = None) -> float:
    """Epoch seconds or ISO 8601 (without an offset: local time); refuses what names no time.

    Times in the future are accepted with a warning: the caller decides what they mean.
    """
    value: float
    try:
        value = float(text)
    except ValueError:
        try:
            value = datetime.fromisoformat(text).timestamp()
        except (ValueError, OverflowError, OSError):
            raise UsageError(
                f"{option} {text!r}: give seconds since the epoch or an ISO 8601 time, "
                "e.g. 2026-01-31T12:00:00+00:00"
            ) from None
    if not math.isfinite(value) or value < 0 or value > LATEST_TIME:
        raise UsageError(
            f"{option} {text!r} is not a time between 1970 and 9999: give seconds since the "
            "epoch or an ISO 8601 time, e.g. 2026-01-31T12:00:00+00:00"
        )
    now = time.time() if now is None else now
    if value > now + FUTURE_SLACK_S:
        warn(f"{option} {fmt_time(value)} is in the future (now: {fmt_time(now)})")
    return value


def check_output_file(path: str | Path, option: str = "--out") -> Path:
    """Refuse an output file that cannot be written, before any long work starts."""
    path = Path(path)
    if path.is_dir():
        raise UsageError(f"{option} {path} is a directory: give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise UsageError(f"{option} {path}: the directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UsageError(f"{option} {path}: not writable")
    return path


# -- output ----------------------------------------------------------------------------------


class ProgressBar:
    """A plain one-line progress bar on stderr: ``label [#####.....]  45% 450/1000``.

    Draws only when enabled (by default when stderr is a terminal), at most 10 times a
    second, so scripts and logs are not flooded.
    """

    _open: ProgressBar | None = None  # the bar whose line is not finished yet

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
        self._drawn = True  # before drawing: an interrupt while drawing still ends the line
        ProgressBar._open = self
        self.stream.write(f"\r{self.label} [{bar}] {fraction:4.0%} {done}/{total}")
        self.stream.flush()

    def close(self) -> None:
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
        if ProgressBar._open is self:
            ProgressBar._open = None

    @classmethod
    def end_line(cls) -> None:
        """Finish a bar's line (an error is about to be printed below it)."""
        if cls._open is not None:
            cls._open.close()


def fmt_time(ts: float | None) -> str:
    """ISO 8601 in local time with its UTC offset (what ``--before``/``--since`` accept)."""
    if ts is None:
        return "-"
    try:
        return record_time(ts)
    except (ValueError, OverflowError, OSError):
        return f"{ts!r} (not a time)"


def fmt_span(low: int, high: int) -> str:
    """A position range, half-open like everywhere in the tools: ``[low, high)``."""
    return f"[{low}, {high})"


def fmt_bytes(n: int) -> str:
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{int(value)} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{n} B"  # pragma: no cover
