"""An unreachable broker: the tools fail with one line naming the bootstrap servers, without
waiting out their timeout, and librdkafka's reconnect lines do not reach stderr."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

pytest.importorskip("confluent_kafka")

from actionjournal.stores.kafka.logs import CLIENT_LOG, ClientLog


@pytest.mark.parametrize(
    "bootstrap, says",
    [("127.0.0.1:1", "Connection refused"), ("no-such-host.invalid:9092", "resolve")],
)
def test_an_unreachable_broker_is_one_line_naming_it(bootstrap, says):
    argv = [sys.executable, "-m", "actionjournal.tools.cli", "journal", "inspect"]
    argv += ["--store", "kafka", "--bootstrap", bootstrap, "--topic", "t", "--timeout", "900"]
    # Before: silence for --timeout seconds, then hundreds of librdkafka lines.
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr[:2000]
    assert lines[0].startswith(
        f"error: cannot reach the Kafka brokers at {bootstrap} (describing topic t): "
    )
    assert says in lines[0]


def test_client_lines_go_to_debug_logging_rate_limited(caplog):
    log = ClientLog(interval=3600)
    caplog.set_level(logging.DEBUG, CLIENT_LOG.name)
    for _ in range(100):
        log.log(logging.ERROR, "%s [%s] %s", "FAIL", "producer-1", "Connection refused")
    log.log(logging.WARNING, "%s [%s] %s", "GETPID", "producer-1", "retrying")
    records = [r for r in caplog.records if r.name == CLIENT_LOG.name]
    assert [r.levelno for r in records] == [logging.DEBUG, logging.DEBUG]
    assert "FAIL [producer-1] Connection refused" in records[0].getMessage()
    log.interval = 0
    log.log(logging.ERROR, "%s [%s] %s", "FAIL", "producer-1", "Connection refused")
    assert "(99 more FAIL lines left out)" in caplog.records[-1].getMessage()
