"""The harness as users get it: a throwaway project outside this repository, its own pytest run.

The project (a module with an agent, a test file) lives in a temp dir and is run with
``python -m pytest`` from there, so it sees the installed package and its pytest plugin
(entry point ``pytest11``) only: not this repository's tests/ or conftest files.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

AGENT = """
from actionjournal import Agent, Event, InputEvent, OutputEvent, action
from actionjournal.testing.harness import call_service, service_reconciler


class Shop(Agent):
    uid = "shop"

    def __init__(self, url):
        self.url = url
        self.probe = service_reconciler(url)  # asks the service about calls cut by a crash

    @action(InputEvent)
    def charge(self, event, ctx):
        order = event.input
        paid = ctx.durable_execute(call_service, self.url, "charge", order, reconciler=self.probe)
        ctx.send_event(Event("paid", {"order": paid}))

    @action("paid")
    def receipt(self, event, ctx):
        order = event.attributes["order"]
        sent = ctx.durable_execute(call_service, self.url, "email", order, reconciler=self.probe)
        ctx.send_event(OutputEvent(sent))
"""

TESTS = """
import os
import sys
from pathlib import Path

import pytest

from actionjournal import MarkerMismatchError
from actionjournal.testing.harness import RestoreMode
from shop_agent import Shop


def test_only_the_installed_package_is_visible():
    repo = Path(os.environ["OUTER_REPO"])
    assert all(Path(p or ".").resolve() != repo for p in sys.path)
    assert "tests" not in sys.modules
    import actionjournal

    assert Path(actionjournal.__file__).parent.name == "actionjournal"


BACKENDS = ["aj_sqlite", "aj_kafka"] if os.environ.get("KAFKA_BOOTSTRAP") else ["aj_sqlite"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    return request.getfixturevalue(request.param)


def test_crash_and_restore(restore_scenario, backend):
    sc = restore_scenario(Shop, backend)
    sc.run([("ann", 1), ("ben", 2)])
    cp = sc.checkpoint()
    crashed = sc.crash([("ann", 3), ("ben", 4)], at="after:CallFinished:3")
    assert crashed.crashed
    sc.restore(cp)
    assert sc.calls() == {"charge": 4, "email": 4}
    assert sc.duplicates() == {}


def test_upgrade_to_a_new_journal(restore_scenario, aj_sqlite):
    sc = restore_scenario(Shop, aj_sqlite)
    sc.run([("ann", 1)])
    cp = sc.checkpoint()
    sc.run([("ann", 2)])
    sc.abandon()
    with pytest.raises(MarkerMismatchError):
        sc.restore(cp, RestoreMode.NEW)
    step = sc.restore(cp, RestoreMode.UPGRADE_NEW)
    assert step.calls == {"charge": 1, "email": 1} and step.actions == {"charge": 1, "receipt": 1}
    sc.abandon()
    assert sc.restore(cp).calls == {}
    assert len(sc.audit_records()) == 2
"""


def run_project(tmp_path: Path, env_extra: dict[str, str]) -> subprocess.CompletedProcess[str]:
    project = tmp_path / "user-project"
    project.mkdir()
    (project / "shop_agent.py").write_text(textwrap.dedent(AGENT))
    (project / "test_shop.py").write_text(textwrap.dedent(TESTS))
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTEST_ADDOPTS")}
    env.pop("KAFKA_BOOTSTRAP", None)
    env.update(OUTER_REPO=str(REPO), **env_extra)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-v", "-p", "no:cacheprovider"],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_a_project_outside_the_repo_uses_the_harness(tmp_path):
    result = run_project(tmp_path, {})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "3 passed" in result.stdout, result.stdout[-2000:]
    assert "test_only_the_installed_package_is_visible PASSED" in result.stdout


@pytest.mark.kafka
def test_a_project_outside_the_repo_uses_the_kafka_fixture(tmp_path, aj_kafka_bootstrap):
    result = run_project(tmp_path, {"KAFKA_BOOTSTRAP": aj_kafka_bootstrap})
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert "4 passed" in result.stdout, result.stdout[-2000:]
    assert "test_crash_and_restore[aj_kafka] PASSED" in result.stdout
