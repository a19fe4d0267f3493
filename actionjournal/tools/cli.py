"""The ``actionjournal`` command: a table of subcommands, each a module's ``main(argv)``.

Every subcommand runs under :func:`~actionjournal.tools.toolkit.run_tool`: whatever goes
wrong is one ``error:`` line on stderr and an exit code, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Callable, Sequence
from importlib import metadata
from typing import Any, NamedTuple

from actionjournal.tools.toolkit import EXIT_OK, EXIT_USAGE, report, run_tool


class Command(NamedTuple):
    module: str
    main: str
    parser: str | None  # builds its argparse parser (help texts are checked by the tests)
    summary: str

    def load(self, attribute: str) -> Callable[..., Any]:
        function: Callable[..., Any] = getattr(importlib.import_module(self.module), attribute)
        return function


Node = Command | dict[str, "Node"]
COMMANDS: dict[str, Node] = {
    "demo": Command(
        "actionjournal.tools.demo",
        "main",
        "parser",
        "run the crash-and-recover demo (a PyFlink job, or --local) on SQLite",
    ),
    "journal": {
        "inspect": Command(
            "actionjournal.tools.journal.cli",
            "inspect_main",
            "inspect_parser",
            "runs, actions and calls of a key; a summary of a namespace",
        ),
        "keys": Command(
            "actionjournal.tools.journal.cli",
            "keys_main",
            "keys_parser",
            "the keys of a namespace with their runs and last activity",
        ),
        "events": Command(
            "actionjournal.tools.journal.events",
            "main",
            "parser",
            "the journal's events with what led to each, as Flink Agents' Event Log (JSON lines)",
        ),
        "quarantine": Command(
            "actionjournal.tools.journal.quarantine",
            "main",
            "parser",
            "make recovery skip one unreadable record (an audited decision)",
        ),
    },
    "runs": {
        "dead-letters": Command(
            "actionjournal.tools.runs",
            "dead_letters_main",
            "dead_letters_parser",
            "the dead-lettered runs of a namespace: key, seq, error, when",
        ),
        "redrive": Command(
            "actionjournal.tools.ui.redrive",
            "main",
            "parser",
            "produce a dead letter to the Kafka topic its job reads re-drives from",
        ),
    },
    "ui": Command(
        "actionjournal.tools.ui.cli",
        "main",
        "parser",
        "the journal explorer: runs, timelines, in flight, dead letters (docs/ui.md)",
    ),
    "plan": Command(
        "actionjournal.tools.plan",
        "main",
        "parser",
        "an agent's actions and events, as JSON, from its code (no JVM)",
    ),
    "timers": {
        "list": Command(
            "actionjournal.tools.waits.cli",
            "timers_main",
            "timers_parser",
            "timers of a namespace: pending, fired, cancelled (from the journal)",
        ),
    },
    "signals": {
        "list": Command(
            "actionjournal.tools.waits.cli",
            "signals_main",
            "signals_parser",
            "signals of a namespace: pending, answered, timed out, late answers",
        ),
    },
    "cleanup": {
        "plan": Command(
            "actionjournal.tools.cleanup.cli",
            "plan_main",
            "plan_parser",
            "compute what may be deleted and write a plan file",
        ),
        "apply": Command(
            "actionjournal.tools.cleanup.cli",
            "apply_main",
            "apply_parser",
            "re-check the plan, journal its boundaries, then delete",
        ),
        "run": Command(
            "actionjournal.tools.cleanup.cli",
            "run_main",
            "run_parser",
            "plan and apply every DURATION, beside a job (docs/operations.md)",
        ),
    },
    "dev": {
        "kafka": Command(
            "actionjournal.dev.kafka",
            "main",
            "parser",
            "a local Apache Kafka broker for development: start|stop|status",
        ),
        "fluss": Command(
            "actionjournal.dev.fluss",
            "main",
            "parser",
            "a local Apache Fluss cluster for development: start|stop|status",
        ),
        "flink": Command(
            "actionjournal.dev.flink",
            "main",
            "parser",
            "a local Apache Flink session cluster: start|stop|status|env (docs/deploying.md)",
        ),
    },
}
_HELP = ("-h", "--help", "help")


def version() -> str:
    try:
        return metadata.version("actionjournal")
    except metadata.PackageNotFoundError:  # pragma: no cover - running from a plain checkout
        return "unknown (not installed)"


def usage(path: Sequence[str] = ()) -> str:
    """The usage of the whole command, or of a group (``journal``, ``cleanup``, ``dev``)."""
    node: dict[str, Node] = COMMANDS
    for name in path:
        child = node[name]
        assert isinstance(child, dict)
        node = child
    prefix = " ".join(["actionjournal", *path])
    lines = [f"usage: {prefix} COMMAND ... [--help]", "", "commands:"]
    for name, entry in node.items():
        if isinstance(entry, Command):
            lines.append(f"  {name:<22} {entry.summary}")
        else:
            for sub, command in entry.items():
                assert isinstance(command, Command)
                lines.append(f"  {name + ' ' + sub:<22} {command.summary}")
    if not path:
        lines += [
            "",
            "  help [COMMAND ...]     help of a command, e.g. `actionjournal help cleanup plan`",
            "  --version              the installed version",
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] in (["--version"], ["-V"]):
        print(f"actionjournal {version()}")
        return EXIT_OK
    if args[:1] == ["help"] and len(args) > 1:
        return main([*args[1:], "--help"])
    path: list[str] = []
    node: Node = COMMANDS
    while isinstance(node, dict):
        if len(path) == len(args) or args[len(path)] in _HELP:
            asked = len(path) < len(args)
            print(usage(path), file=sys.stdout if asked else sys.stderr)
            return EXIT_OK if asked else EXIT_USAGE
        name = args[len(path)]
        if name not in node:
            where = " ".join(["actionjournal", *path])
            report(
                f"{where}: unknown command {name!r}; commands: {', '.join(node)} "
                f"(`{where} --help` says what each does)"
            )
            return EXIT_USAGE
        path.append(name)
        node = node[name]
    return run_tool(node.load(node.main), args[len(path) :])


def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every command's parser, by command line (for the tests of help texts)."""
    found: dict[str, argparse.ArgumentParser] = {}

    def walk(prefix: list[str], node: Node) -> None:
        if isinstance(node, Command):
            if node.parser is not None:
                found[" ".join(prefix)] = node.load(node.parser)()
            return
        for name, child in node.items():
            walk([*prefix, name], child)

    walk([], COMMANDS)
    return found


if __name__ == "__main__":
    sys.exit(main())
