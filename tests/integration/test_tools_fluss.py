"""The operator tools on a Fluss journal (a real cluster): inspect and keys read it; cleanup,
which needs deletes below an offset, refuses it with the reason and what to do instead."""

from __future__ import annotations

import json

import pytest

from actionjournal.durable.identity import key_id
from actionjournal.tools.cli import main as cli
from tests import cleanup_scenario as sc

pytestmark = [
    pytest.mark.fluss,
    pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning"),
]


def test_inspect_keys_and_cleanup_on_fluss(fluss_store, aj_fluss_bootstrap, fluss_table, tmp_path,
                                           capsys):  # fmt: skip
    store = fluss_store(fluss_table)
    sc.build(store, tmp_path)
    where = ["--store", "fluss", "--bootstrap", aj_fluss_bootstrap, "--table", fluss_table]
    assert cli(["journal", "inspect", *where, "--key", "held"]) == 0
    tree = capsys.readouterr().out
    assert f"partition {store.partition_of(key_id('held'))}" in tree
    assert "run seq=0  finished" in tree and "'second:h0'" in tree
    assert cli(["journal", "inspect", *where, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["partitions_total"] == 4 and doc["totals"]["runs"] == len(sc.INPUTS)
    assert doc["store"] == {"backend": "fluss", "name": f"actionjournal.{fluss_table}",
                            "uid": store.identity.uid}  # fmt: skip
    assert cli(["journal", "keys", *where, "--json"]) == 0
    keys = json.loads(capsys.readouterr().out)["keys"]
    assert {k["key_id"] for k in keys} == {key_id(k) for k, _ in sc.INPUTS}
    out = str(tmp_path / "plan.json")
    assert cli(["cleanup", "plan", *where, "--before", "0", "--out", out]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: Fluss table") and "cleanup does not apply" in err
    assert "table.log.ttl" in err and len(err.splitlines()) == 1
    missing = ["--store", "fluss", "--bootstrap", aj_fluss_bootstrap, "--table", "no_such_table"]
    assert cli(["journal", "inspect", *missing]) == 1
    assert "does not exist" in capsys.readouterr().err
