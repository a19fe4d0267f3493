"""Running upstream's tests unchanged: a journal per test, PyFlink workers that can import
them, and the checks that fail on a deliberate difference (docs/porting.md lists each)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

_ROOT = str(Path(__file__).resolve().parents[2])
# Upstream's Flink tests set PYTHONPATH to site-packages and start workers with `python`:
# make that this interpreter, and the repository importable (workers unpickle the agents).
os.environ["PATH"] = os.pathsep.join((str(Path(sys.executable).parent), os.environ["PATH"]))
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (_ROOT, os.environ.get("PYTHONPATH")) if p)

FLINK = ("built_in_action_async_execution_test.py", "execute_test.py", "flink_intergration_test.py")

# Upstream's checks that fail here on purpose: test id -> why (docs/porting.md, "Upstream's tests").
_SENT = "an event's values are checked when it is sent (send_event), not when it is built"
_SOURCE = "reads upstream's own source files and module names (flink_agents.*)"
DIFFERENCES: dict[str, str] = {
    "api/tests/test_event.py::test_event_init_non_serializable": _SENT,
    "api/tests/test_event.py::test_event_setattr_non_serializable": _SENT,
    "api/tests/test_event.py::test_event_row_with_non_serializable_fails": _SENT,
    "api/agents/tests/test_row_schema.py::test_output_schema_serializable": (
        "output_schema takes pydantic models; RowTypeInfo is absent"
    ),
    "api/tests/test_core_options.py::test_core_options_module_does_not_import_pyflink": _SOURCE,
    "api/tests/test_core_options.py::test_import_core_options_does_not_call_get_gateway": _SOURCE,
    "api/tests/test_core_options.py::test_runtime_import_chain_does_not_call_get_gateway": _SOURCE,
    "api/tests/test_core_options.py::test_agent_config_options_are_explicitly_declared": (
        "event logging options (EventLogLevel, baseLogDir) are absent"
    ),
}


@pytest.fixture(autouse=True)
def _journal_per_test(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream's scripts name no journal: each test gets its own (not ./actionjournal.db)."""
    monkeypatch.setenv("ACTIONJOURNAL_JOURNAL", str(tmp_path / "journal.db"))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        path = Path(str(item.path))
        if here not in path.parents:
            continue
        if path.name in FLINK:
            item.add_marker(pytest.mark.flink)
            item.add_marker(pytest.mark.slow)
        test_id = f"{path.relative_to(here)}::{item.name}"
        if test_id in DIFFERENCES:
            item.add_marker(pytest.mark.xfail(reason=DIFFERENCES[test_id], strict=True))
