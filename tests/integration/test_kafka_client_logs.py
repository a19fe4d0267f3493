"""A broker outage seen by a running store: a few log lines, not one per reconnect attempt."""

from __future__ import annotations

import contextlib
import logging
import time

import pytest

from actionjournal.dev.kafka import KafkaBroker
from actionjournal.durable.errors import JournalWriteError, StoreError
from actionjournal.stores.kafka import KafkaStore, KafkaStoreConfig
from actionjournal.stores.kafka.logs import CLIENT_LOG
from tests.store_checks import rc

pytestmark = pytest.mark.kafka


@pytest.fixture
def private_broker():
    """A broker of this test alone, to kill (slow to start on a loaded machine: wait)."""
    with KafkaBroker(start_timeout=300) as broker:
        yield broker


def test_a_broker_outage_is_a_few_log_lines_not_hundreds(private_broker, caplog, capfd):
    config = KafkaStoreConfig(
        bootstrap_servers=private_broker.bootstrap,
        topic="outage",
        partitions=1,
        admin_timeout_s=5,
        delivery_timeout_s=5,
    )
    store = KafkaStore(config)
    store.append(rc("k", 0))
    caplog.set_level(logging.DEBUG, "actionjournal.stores.kafka")
    private_broker.kill()
    outage = time.monotonic() + 20
    while time.monotonic() < outage:  # the job keeps trying: reads and appends fail
        with contextlib.suppress(StoreError, JournalWriteError):
            store.read_key("ns", "op", "k", None)
        with contextlib.suppress(JournalWriteError):
            store.append(rc("k", 1))
    with contextlib.suppress(JournalWriteError):
        store.close()
    client = [r for r in caplog.records if r.name == CLIENT_LOG.name]
    # Before: librdkafka's lines at ERROR and WARNING, one per reconnect attempt (hundreds).
    assert {r.levelno for r in client} <= {logging.DEBUG}
    kinds = [r.getMessage().split(":")[0] for r in client]
    assert len(client) <= 2 * len(set(kinds)), kinds  # one per kind per 30 s (and its count)
    loud = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(loud) <= 5, loud  # the store's own warnings, each naming the brokers
    printed = [line for line in capfd.readouterr().err.splitlines() if line.startswith("%")]
    assert printed == []  # nothing straight from librdkafka to stderr
