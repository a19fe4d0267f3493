"""The counting service's random latencies (the soak's calls take varying times)."""

from __future__ import annotations

import httpx
import pytest

from actionjournal.testing import CountingService


def test_max_delay_gives_each_call_a_latency_between_delay_and_max_delay():
    with CountingService(0.01, 0.05, seed=7) as service:
        for n in range(12):
            reply = httpx.post(f"{service.url}/calls/step", json={"call_id": f"c{n}", "value": n})
            assert reply.json() == {"name": "step", "value": n, "n": 1}
        took = [answer - arrival for arrival, answer in service.spans()]
    assert len(took) == 12 and min(took) >= 0.01
    assert max(took) - min(took) > 0.005  # not one fixed delay


def test_a_service_comes_back_on_the_port_it_had():
    with CountingService() as first:
        port = int(first.url.rsplit(":", 1)[1])
    with CountingService(port=port) as again:
        assert again.url == first.url


def test_max_delay_below_delay_is_refused():
    with pytest.raises(ValueError, match="below delay"):
        CountingService(0.05, 0.01)
