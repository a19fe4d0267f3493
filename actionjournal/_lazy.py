"""Package attributes imported on first use: every package of actionjournal names its
public attributes here instead of importing its modules in its ``__init__``.

Why: PyFlink's Python worker unpickles the functions of a job's operators on several
threads at once, and each thread imports what its functions need. Python 3.11 takes a
module's import lock before its parent package's, so a package whose ``__init__`` imports
modules below it deadlocks with a thread that holds one of them while it waits for the
package: ``_DeadlockError`` or "partially initialized module", and the task fails at start.
So a package's ``__init__`` imports this module only, which imports nothing of actionjournal
and sits right under the top package (never waiting for a package being imported); and no
modules import each other in a circle. tests/unit/test_imports.py checks both. It also keeps
optional libraries (confluent-kafka, pyfluss, PyFlink) out of a plain import.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any


def lazy_names(modules: Mapping[str, Sequence[str]]) -> list[str]:
    """A package's ``__all__``: every name of ``modules``, sorted. Each name is written once,
    in ``_LAZY`` (its ``TYPE_CHECKING`` import, ``name as name`` for type checkers, is checked
    against it by tests/unit/test_public_surface.py)."""
    return sorted(name for names in modules.values() for name in names)


def lazy_attributes(package: str, modules: Mapping[str, Sequence[str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``modules[module]`` comes from
    that module, imported on the name's first use (then kept on the package)."""
    where = {name: module for module, names in modules.items() for name in names}

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(sys.modules[package], name, value)
        return value

    return __getattr__
