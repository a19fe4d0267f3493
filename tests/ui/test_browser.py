"""The explorer in a real headless Chromium (Debian's ``chromium``, driven by Playwright):
runs list, a filter, a run's timeline with attempts and replayed calls, dead letters and a
re-drive through a real Kafka topic to the job, which completes the run.

Screenshots of each page go to the test's tmp dir (``screenshots/``); with
``AJ_UI_DOCS_SCREENSHOTS=1`` they are also copied to docs/images/ui/ (the docs' pictures).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import threading
import uuid
from pathlib import Path

import pytest

from actionjournal.operator.dead_letters import DeadLetter
from tests.ui.conftest import ROOT

pytestmark = [pytest.mark.slow, pytest.mark.kafka]
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update",
        "--disable-sync"]  # fmt: skip
DOCS_IMAGES = ROOT / "docs" / "images" / "ui"


@pytest.fixture
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip("Debian's chromium is not installed (apt-get install chromium)")
    playwright = pytest.importorskip("playwright.sync_api")
    with playwright.sync_playwright() as p:
        found = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield found
        found.close()


def _topic(bootstrap: str) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"aj-ui-redrive-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def _job(made, bootstrap: str, topic: str, stop: threading.Event, done: list) -> None:
    """The orders job's re-drive input: dead letters read back from Kafka, given to its runner."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"job-{topic}",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe([topic])

    async def loop() -> None:
        while not stop.is_set():
            message = await asyncio.to_thread(consumer.poll, 0.2)
            if message is None or message.error():
                continue
            letter = DeadLetter.from_json(message.value())
            made.runner.submit(letter.key, letter)
            await made.runner.drain()
            done.append(letter)

    try:
        asyncio.run(loop())
    finally:
        consumer.close()


def test_the_explorer_in_a_browser(made, start_ui, browser, aj_kafka_bootstrap, tmp_path):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    topic = _topic(aj_kafka_bootstrap)
    server = start_ui(
        made.journal, "--allow-actions", "--redrive-topic", topic, "--redrive-bootstrap",
        aj_kafka_bootstrap, "--redact", "input.card_number", "--redact", "event.card_number",
        "--agent", "tests.ui.agents:Checkout", "--checkpoints", str(made.snapshot),
    )  # fmt: skip
    page = browser.new_page(viewport={"width": 1400, "height": 900})

    def shot(name: str) -> None:
        page.screenshot(path=str(shots / f"{name}.png"), full_page=True)

    page.goto(f"{server.url}/runs")
    rows = page.locator("table.runs tbody tr")
    assert rows.count() == 5
    shot("runs")
    page.select_option("select[name=status]", "dead_lettered")
    page.click("form.filters button[type=submit]")
    page.wait_for_url("**status=dead_lettered**")
    assert rows.count() == 2
    assert page.locator("table.runs .badge.dead_lettered").count() == 2
    shot("runs-filtered")

    page.goto(f"{server.url}/runs?key=bob")
    page.locator("table.runs tbody tr a").first.click()
    page.wait_for_url("**/runs/*")
    assert page.locator(".restart-line").count() == 1
    assert page.locator("ol.restarts").inner_text().count("replayed from the journal") == 1
    assert "call_service #0" in page.locator("ol.restarts").inner_text()
    assert page.locator("tr.replayed .badge.replayed").count() == 1
    assert page.locator(".lane-bars .bar.reconciled").count() == 1
    assert page.locator(".badge.reconciled").count() == 1
    shot("run-restart")

    page.goto(f"{server.url}/runs?key=carol")
    page.locator("table.runs tbody tr a").first.click()
    page.wait_for_url("**/runs/*")
    assert page.locator(".lane-bars .bar.failed").count() >= 2  # failed attempts
    assert page.locator(".lane-bars .bar.backoff").count() >= 2
    assert "attempt 1 failed" in page.locator("table.entries").inner_text()
    assert "4111-1111-1111-1111" not in page.content()
    shot("run-dead-letter")

    for name in ("in-flight", "graph", "health"):
        page.goto(f"{server.url}/{name}")
        assert page.locator("main h1").count() == 1
        shot(name)
    page.click("a#cleanup")
    page.wait_for_url("**cleanup=1**")
    assert "Cleanup would delete" in page.locator("main").inner_text()
    shot("health-cleanup")

    made.flag.touch()  # the payment service is back
    stop, done = threading.Event(), []
    job = threading.Thread(target=_job, args=(made, aj_kafka_bootstrap, topic, stop, done))
    job.start()
    try:
        page.goto(f"{server.url}/dead-letters")
        letters = page.locator("section.letter")
        assert letters.count() == 2
        shot("dead-letters")
        carol = letters.filter(has_text="o-3")
        assert "4111-1111-1111-1111" not in page.content()
        page.on("dialog", lambda dialog: dialog.accept())
        carol.locator("form.redrive button").click()
        page.wait_for_url("**/dead-letters?done=**")
        assert "produced to topic" in page.locator(".notice").inner_text()
        for _ in range(300):  # the job completes it; the explorer follows the journal
            page.goto(f"{server.url}/runs?status=redriven")
            if rows.count() == 1:
                break
            page.wait_for_timeout(200)
        assert rows.count() == 1, "the re-driven run did not show as completed"
        shot("runs-redriven")
        page.locator("table.runs tbody tr a").first.click()
        page.wait_for_url("**/runs/*")
        assert "completed" in page.locator("section.outcome").inner_text()
        assert page.locator("ol.restarts").inner_text().count("re-drive 1") == 1
        shot("run-redriven")
    finally:
        stop.set()
        job.join(30)
    assert [(d.key, d.seq) for d in done] == [("carol", 0)]
    if os.environ.get("AJ_UI_DOCS_SCREENSHOTS"):
        DOCS_IMAGES.mkdir(parents=True, exist_ok=True)
        for picture in shots.glob("*.png"):
            shutil.copy(picture, DOCS_IMAGES / picture.name)
