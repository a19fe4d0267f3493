"""The explorer's JSON API and pages over a journal made by real scenarios (a SIGKILLed
child and its restore, retries, dead letters, a reconciled call), and its security rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from tests.ui.agents import CARD
from tests.ui.conftest import ROOT

pytestmark = pytest.mark.slow


def _runs(client: httpx.Client, **params: str) -> list[dict]:
    reply = client.get("/api/runs", params=params)
    assert reply.status_code == 200, reply.text
    return reply.json()["page"]["runs"]


def _run_of(client: httpx.Client, key: str) -> dict:
    (row,) = _runs(client, key=key)
    reply = client.get(f"/api/runs/{row['id']}")
    assert reply.status_code == 200, reply.text
    return reply.json()


def test_runs_filters_and_search(made, start_ui):
    server = start_ui(made.journal)
    with server.client() as c:
        everything = _runs(c)
        assert {(r["operator_uid"], r["status"]) for r in everything} == {
            ("checkout", "completed"), ("checkout", "in_flight"), ("orders", "dead_lettered"),
        }  # fmt: skip
        assert len(everything) == 5  # ann, bob, erin; carol, dave
        starts = [r["first_at"] for r in everything]
        assert starts == sorted(starts, reverse=True)  # newest first
        letters = _runs(c, status="dead_lettered")
        assert len(letters) == 2 and all(
            r["error_type"] == "builtins.ConnectionError" for r in letters
        )
        assert len(_runs(c, key="bob")) == 1
        assert _runs(c, key="nobody") == []
        assert {r["operator_uid"] for r in _runs(c, action="receipt")} == {"checkout"}
        assert len(_runs(c, error="payments unavailable")) == 2
        assert _runs(c, since="9000000000") == []
        assert len(_runs(c, until="9000000000", since="0")) == 5
        page = c.get("/api/runs", params={"limit": "2"}).json()["page"]
        older = _runs(c, limit="2", cursor=page["next_cursor"])
        assert {r["id"] for r in older}.isdisjoint({r["id"] for r in page["runs"]})
        bob = _run_of(c, "bob")["timeline"]
        call_id = bob["calls"][0]["call_id"]
        assert [r["key_id"] for r in _runs(c, q=call_id)] == [bob["run"]["key_id"]]
        assert [r["key_id"] for r in _runs(c, q=call_id[:10])] == [bob["run"]["key_id"]]
        event_id = bob["events"][0]["id"]
        assert [r["key_id"] for r in _runs(c, q=event_id)] == [bob["run"]["key_id"]]
        assert [r["key_id"] for r in _runs(c, q="bob")] == [bob["run"]["key_id"]]


def test_a_run_timeline_shows_the_restart_and_what_it_replayed(made, start_ui):
    server = start_ui(made.journal)
    with server.client() as c:
        bob = _run_of(c, "bob")
        t = bob["timeline"]
        (restart,) = t["restarts"]  # the SIGKILL after the charge was journaled as started
        assert "never finished; then settled by its reconciler" in restart["evidence"]
        assert [call.split(":")[-1] for call in restart["replayed_calls"]] == ["call_service #0"]
        assert any("#1" in call for call in restart["settled_calls"])
        replayed = [e for e in t["entries"] if e.get("replayed")]
        assert [e["kind"] for e in replayed] == ["CallFinished"]  # the lookup came back
        statuses = {c["index"]: (c["status"], c["reconciled"]) for c in t["calls"]}
        assert statuses[1] == ("finished", True)
        assert any(b["kind"] == "reconciled" for b in t["bars"])
        assert t["outcome"]["status"] == "completed"
        assert [r["seq"] for r in bob["key_runs"]] == [0]
        # Lineage: each completed action says which event it ran on; its events, where from.
        completed = [e for e in t["entries"] if e["kind"] == "ActionCompleted"]
        assert completed and all(e["details"].get("trigger_event_id") for e in completed)
        sent = [ev for e in completed for ev in e["details"].get("events", [])]
        assert sent and all(ev["upstream_event_id"] and ev["action"] for ev in sent)
        ids = {ev["id"] for ev in sent} | {e["details"]["trigger_event_id"] for e in completed}
        assert all(ev["upstream_event_id"] in ids for ev in sent)
        carol = _run_of(c, "carol")["timeline"]
        kinds = [e["kind"] for e in carol["entries"]]
        assert kinds.count("CallAttemptFailed") == 2  # the quote's and the payment's first
        assert any(b["kind"] == "backoff" for b in carol["bars"])
        assert carol["outcome"]["status"] == "dead-lettered"
        error = carol["outcome"]["error"]
        assert error["type"].endswith("ActionFailedError")
        assert error["causes"][-1]["type"] == "builtins.ConnectionError"


def test_in_flight_dead_letters_graph_health(made, start_ui):
    server = start_ui(made.journal, "--agent", "tests.ui.agents:Checkout")
    with server.client() as c:
        flight = c.get("/api/in-flight").json()
        (started,) = flight["started"]  # erin's charge: started, the process killed
        assert started["function_id"].endswith("call_service") and started["index"] == 1
        assert "reconciler" in started["on_restart"]
        assert flight["runs_in_flight"] == 1 and len(flight["keys"]) == 1
        letters = c.get("/api/dead-letters").json()
        assert len(letters["letters"]) == 2
        assert not letters["can_redrive"] and "read-only" in letters["why_not"]
        letter = letters["letters"][0]
        assert letter["command"].startswith("actionjournal runs redrive --store sqlite --path ")
        assert any("attempt" in h["what"] for h in letter["history"])
        graph = c.get("/api/graph").json()
        edges = {(e["source"], e["target"]): e for e in graph["edges"]}
        declared = edges[("event:input", "action:charge")]
        assert declared["declared"] and declared["observed"] >= 2
        assert edges[("action:charge", "event:paid")]["declared"]
        health = c.get("/api/health").json()
        types = {t["type"]: t["records"] for t in health["types"]}
        assert types["RunFailed"] == 2 and types["CallAttemptFailed"] == 4
        assert health["partitions"][0]["indexed_to"] == health["partitions"][0]["high"]
        for page in ("/runs", "/in-flight", "/dead-letters", "/graph", "/health"):
            reply = c.get(page)
            assert reply.status_code == 200 and "<main>" in reply.text, page


def test_bad_input_is_a_clear_error_never_a_traceback(made, start_ui):
    server = start_ui(made.journal)
    with server.client() as c:
        for path, status, says in [
            ("/api/runs?status=lost", 400, "status 'lost': one of"),
            ("/api/runs?since=yesterday", 400, "since 'yesterday'"),
            ("/api/runs?colour=red", 400, "unknown filter 'colour'"),
            ("/api/runs?key=1&key_type=int&limit=0", 400, "limit 0"),
            ("/api/runs/99999", 404, "no run 99999"),
            ("/api/runs/abc", 400, "is not a number"),
            ("/api/dead-letters/0/1/redrive", 405, "GET is not allowed"),
            ("/api/nothing", 404, "no page"),
        ]:
            reply = c.get(path)
            assert reply.status_code == status, (path, reply.text)
            assert says in reply.json()["error"], (path, reply.text)
            html = c.get(path.removeprefix("/api"))
            assert html.status_code == status and says.split("'")[0] in html.text, path
            assert "Traceback" not in html.text and "<main>" in html.text


def test_redaction_reaches_pages_and_api(made, start_ui):
    server = start_ui(made.journal, "--redact", "input.card_number", "--redact",
                      "event.card_number")  # fmt: skip
    with server.client() as c:
        bob = c.get(f"/api/runs/{_runs(c, key='bob')[0]['id']}")
        carol_id = _runs(c, key="carol")[0]["id"]
        for reply in (
            bob,
            c.get(f"/api/runs/{carol_id}"),
            c.get("/api/dead-letters"),
            c.get("/dead-letters"),
            c.get(f"/runs/{carol_id}"),
            c.get(f"/runs/{_runs(c, key='bob')[0]['id']}"),
        ):
            assert reply.status_code == 200
            assert CARD not in reply.text, reply.url
        assert "[redacted]" in c.get("/api/dead-letters").text
    plain = start_ui(made.journal)
    with plain.client() as c:
        assert CARD in c.get("/api/dead-letters").text  # shown without --redact


def test_token_csrf_and_read_only(made, start_ui, tmp_path):
    log = tmp_path / "actions.jsonl"
    server = start_ui(made.journal, "--allow-actions", "--action-log", str(log),
                      "--redrive-topic", "t", "--redrive-bootstrap", "127.0.0.1:1",
                      token="s3cret")  # fmt: skip
    for client in (server.client(token=None), server.client(token="wrong")):
        with client as c:
            for path in ("/api/runs", "/runs", "/static/style.css", "/api/status"):
                assert c.get(path).status_code == 401, path
            assert c.post("/api/dead-letters/0/1/redrive").status_code == 401
    with server.client() as c:
        assert c.get("/api/runs").status_code == 200
        letter = c.get("/api/dead-letters").json()["letters"][0]
        where = f"/api/dead-letters/{letter['partition']}/{letter['position']}/redrive"
        assert c.get(where).status_code == 405  # never a GET
        refused = c.post(where)
        assert refused.status_code == 403 and "CSRF" in refused.json()["error"]
        assert c.post(where, headers={"X-CSRF-Token": "forged"}).status_code == 403
    with httpx.Client(base_url=server.url, timeout=30) as browser:  # ?token= once, a cookie
        first = browser.get("/runs?token=s3cret&status=dead_lettered", follow_redirects=False)
        assert first.status_code == 303 and "token" not in first.headers["location"]
        assert browser.get(first.headers["location"]).status_code == 200
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert [e["result"] for e in entries] == ["refused: bad CSRF token"] * 2
    assert entries[0]["who"]["client"] == "127.0.0.1" and entries[0]["action"] == "redrive"
    read_only = start_ui(made.journal)
    with read_only.client() as c:
        csrf = c.get("/api/status").json()["csrf"]
        reply = c.post(where, headers={"X-CSRF-Token": csrf})
        assert reply.status_code == 403 and "read-only" in reply.json()["error"]


def test_non_loopback_needs_a_token_and_a_bad_journal_is_one_line(made, tmp_path):
    def ui(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "actionjournal.tools.cli", "ui", "--store", "sqlite",
             "--port", "0", *args],
            capture_output=True, text=True, cwd=ROOT, timeout=60,
        )  # fmt: skip

    bound = ui("--path", str(made.journal), "--host", "0.0.0.0")
    assert bound.returncode == 2 and "needs --token" not in bound.stderr
    assert "--token" in bound.stderr and "Traceback" not in bound.stderr
    missing = ui("--path", str(tmp_path / "none.db"))
    assert missing.returncode == 1 and "no SQLite journal" in missing.stderr
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database" * 100)
    broken = ui("--path", str(garbage))
    assert broken.returncode == 1 and "Traceback" not in broken.stderr, broken.stderr


def test_a_corrupt_record_is_reported_and_the_rest_shown(made, start_ui, tmp_path):
    import sqlite3

    copy = tmp_path / "corrupt.db"
    db = sqlite3.connect(copy)
    with sqlite3.connect(made.journal) as source:  # the WAL's records too
        source.backup(db)
    (pos,) = db.execute("SELECT MAX(pos) FROM journal WHERE operator_uid = 'orders'").fetchone()
    db.execute("UPDATE journal SET body = x'00112233' WHERE pos = ?", (pos,))
    db.commit()
    db.close()
    server = start_ui(copy)
    with server.client() as c:
        health = c.get("/api/health").json()
        (bad,) = health["unreadable"]
        assert bad["position"] == pos and bad["kind"] == "corrupt"
        assert len(_runs(c)) == 5
        page = c.get("/health").text
        assert "corrupt" in page and "not an actionjournal record" in page


def test_plan_prints_the_agent_graph_as_json():
    done = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.cli", "plan", "tests.ui.agents:Checkout"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    plan = json.loads(done.stdout)
    assert {(e["from"], e["to"]) for e in plan["edges"]} == {
        ("event:input", "action:charge"), ("action:charge", "event:paid"),
        ("event:paid", "action:receipt"), ("action:receipt", "event:output"),
    }  # fmt: skip
    assert True  # no JVM: nothing here starts one
    bad = subprocess.run(
        [sys.executable, "-m", "actionjournal.tools.cli", "plan", "tests.ui.agents:CARD"],
        capture_output=True, text=True, cwd=ROOT, timeout=60,
    )  # fmt: skip
    assert bad.returncode == 1 and "not an actionjournal Agent" in bad.stderr


def test_index_resumes_where_it_stopped(made, tmp_path, monkeypatch):
    import sqlite3

    from actionjournal.durable.codec import RecordCodec
    from actionjournal.stores.config import SqliteStoreConfig
    from actionjournal.tools.ui import indexer
    from actionjournal.tools.ui.journal import Journal

    journal = Journal(SqliteStoreConfig(path=str(made.journal)), RecordCodec(), "default", None)

    def rows(index: Path) -> list[tuple]:
        with sqlite3.connect(index) as db:
            return db.execute(
                "SELECT operator_uid, key_id, seq, status, calls, attempts, records, actions, "
                "error_type, open_calls FROM runs ORDER BY key_id, seq"
            ).fetchall()

    whole = tmp_path / "whole.sqlite"
    first, _ = indexer.build(journal, whole)
    again, _ = indexer.build(journal, whole)
    assert first > 0 and again == 0  # the second build resumes at the end: nothing to read
    # Written every 3 records, runs cross batches and are loaded back from the index: the
    # same rows as in one batch.
    monkeypatch.setattr(indexer, "BATCH", 3)
    small = tmp_path / "small.sqlite"
    assert indexer.build(journal, small)[0] == first
    assert rows(small) == rows(whole) and len(rows(whole)) == 5


def test_a_read_that_fails_half_way_is_read_again_whole(made, tmp_path, monkeypatch):
    """A journal that fails mid-read (a broker gone) leaves the index as its last commit
    says; the next catch-up reads from there and counts nothing twice."""
    import sqlite3

    from actionjournal.durable.codec import RecordCodec
    from actionjournal.stores.config import SqliteStoreConfig
    from actionjournal.tools.ui import indexer
    from actionjournal.tools.ui import journal as jr
    from actionjournal.tools.ui.journal import Journal

    journal = Journal(SqliteStoreConfig(path=str(made.journal)), RecordCodec(), "default", None)
    whole = tmp_path / "whole.sqlite"
    indexer.build(journal, whole)
    monkeypatch.setattr(indexer, "BATCH", 4)
    scan = jr.scan

    def failing(*args, **kwargs):
        for n, item in enumerate(scan(*args, **kwargs)):
            if n == 10:
                raise ConnectionError("the broker went away")
            yield item

    with journal.opened() as store:
        broken = indexer.Indexer(journal, store, tmp_path / "broken.sqlite")
        try:
            monkeypatch.setattr(jr, "scan", failing)
            with pytest.raises(ConnectionError):
                broken.catch_up()
            monkeypatch.setattr(jr, "scan", scan)
            broken.catch_up()
        finally:
            broken.close()

    def rows(index: Path) -> list[tuple]:
        with sqlite3.connect(index) as db:
            return (
                db.execute(
                    "SELECT key_id, seq, status, calls, attempts, records, bytes FROM runs "
                    "ORDER BY key_id, seq"
                ).fetchall()
                + db.execute("SELECT type, records FROM types ORDER BY type").fetchall()
            )

    assert rows(tmp_path / "broken.sqlite") == rows(whole)


def test_a_signed_journal_is_read_and_its_key_never_shown(start_ui, tmp_path, monkeypatch):
    import asyncio

    from actionjournal import JournalConfig, LocalRunner
    from actionjournal.stores import SqliteStore
    from tests.ui.agents import Orders

    key = "signing-key-that-must-never-show"
    journal = tmp_path / "signed.db"
    flag = tmp_path / "up"
    flag.touch()
    store = SqliteStore(journal)
    config = JournalConfig(signing_key=key)
    try:
        asyncio.run(LocalRunner(Orders(flag), store, config).run([("eve", {"order": "o-7"})]))
    finally:
        store.close()
    monkeypatch.setenv("AJ_TEST_SIGNING_KEY", key)
    server = start_ui(journal, "--signing-key-env", "AJ_TEST_SIGNING_KEY")
    with server.client() as c:
        (run,) = _runs(c)
        assert run["status"] == "completed"
        one = f"runs/{run['id']}"
        pages = ["/api/status", "/api/runs", f"/api/{one}", "/api/health", "/runs", f"/{one}",
                 "/health", "/dead-letters", "/in-flight"]  # fmt: skip
        for page in pages:
            reply = c.get(page)
            assert reply.status_code == 200, page
            assert key not in reply.text, page
        assert c.get("/api/health").json()["unreadable"] == []  # every signature verified
