"""What `pip install` resolves and what a job accepts agree: PyFlink 2.3 only."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from actionjournal.durable.errors import ConfigurationError

PYPROJECT = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())


def test_an_unsupported_pyflink_is_refused_when_the_job_is_built(monkeypatch):
    flink = pytest.importorskip("actionjournal.flink.function")
    monkeypatch.setattr(flink, "PYFLINK_VERSION", "2.1.0")
    with pytest.raises(ConfigurationError, match=r"PyFlink 2\.1\.0 is installed.* 2\.3\.x only"):
        flink.AgentsExecutionEnvironment.get_execution_environment()


def test_the_flink_extra_pins_the_version_the_job_checks():
    flink = pytest.importorskip("actionjournal.flink.function")
    extra = PYPROJECT["project"]["optional-dependencies"]["flink"]
    assert extra == [f"apache-flink>={flink.SUPPORTED_PYFLINK},<2.4"]


def test_metadata_uses_an_spdx_license_and_no_unused_dependency():
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"
    assert not any(d.startswith("fastavro") for d in project["dependencies"])
