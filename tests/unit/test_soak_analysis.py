"""The soak's figures from what it recorded (benchmarks/soak/analysis.py, report.py): a
recovery, an RSS slope or a verdict computed wrongly would make the soak's closing line lie."""

from __future__ import annotations

from collections import Counter

import pytest

from benchmarks.soak import analysis, report
from benchmarks.soak.settings import Fault, FaultRecord, default_faults, parse_faults


def steady(until: float, every: float = 0.1) -> dict[int, float]:
    """Order i sent at i * every."""
    return {i: i * every for i in range(int(until / every))}


def test_recovery_is_the_time_until_every_order_is_committed_within_the_normal_latency():
    sent = steady(200)
    # normal: committed 1 s after sent; an outage from 100 s: orders sent from then on wait
    # until 150 s, when all are committed at once, and later ones within 1 s again
    committed = {i: (t + 1 if not 100 <= t < 150 else 150.0) for i, t in sent.items()}
    fault = FaultRecord("tm-kill", 100, 100.0, "tm-0")
    limit, (found,) = analysis.recovery([fault], sent, committed, 200.0)
    assert limit == pytest.approx(1.0)
    # the last moment an order sent more than 1 s before was still uncommitted: just before 150 s
    assert found["recovery_s"] == pytest.approx(50.0, abs=0.6)
    # results stopped at 100.9 s (the last order before the outage) and came back at 150 s
    assert found["output_gap_s"] == pytest.approx(49.1, abs=0.05)
    # a slowdown long after the job had caught up is not the fault's
    committed[1800] = 185.0  # sent at 180 s, committed 5 s later
    assert analysis.recovery([fault], sent, committed, 200.0)[1][0]["recovery_s"] == pytest.approx(
        50.0, abs=0.6
    )


def test_the_normal_latency_leaves_out_the_start_ups_catch_up():
    sent = steady(200)
    # the first 30 s were committed late (the job was starting), then 1 s after sending
    committed = {i: (t + 1 if t >= 30 else 40.0) for i, t in sent.items()}
    fault = FaultRecord("tm-kill", 100, 100.0, "tm-0")
    assert analysis.recovery([fault], sent, committed, 200.0)[0] > 30
    assert analysis.recovery([fault], sent, committed, 200.0, steady_from=30.0)[0] == 1.0


def test_a_fault_that_delays_nothing_recovers_in_zero_and_a_lost_order_never_recovers():
    sent = steady(100)
    committed = {i: t + 1 for i, t in sent.items()}
    fault = FaultRecord("leader-kill", 50, 50.0, "broker 2")
    assert analysis.recovery([fault], sent, committed, 100.0)[1][0]["recovery_s"] == 0.0
    del committed[600]  # sent at 60 s, never committed
    (found,) = analysis.recovery([fault], sent, committed, 100.0)[1]
    assert found["recovery_s"] >= 38  # late until the end of the soak


def test_rss_slope_is_fitted_after_warmup_from_the_latest_taskmanager_loss():
    samples = []
    for n in range(0, 121):  # 10 minutes, a sample every 5 s
        t = 1000.0 + 5 * n
        jvm = 500 + (t - 1000) / 60 * 30 if t < 1300 else 600  # climbs 30 MB/min, then flat
        python = 200 + (t - 1000) / 60 * 1.0  # climbs 1 MB/min throughout
        heap = 100 + (t - 1000) / 60 * 2.0 + (80 if n % 4 else 0)  # its low points 2 MB/min
        memory = {"jvm_mb": jvm, "python_mb": python, "heap_used_mb": heap}
        samples.append({"t": t, "taskmanagers": {"tm-0": memory}})
    loss = FaultRecord("tm-kill", 100, 1100.0, "tm-1", running_wall=1120.0)
    slopes = analysis.rss_slopes(samples, [loss], warmup_s=180)
    fitted = slopes["tm-0"]
    assert fitted["from"] == 1300.0  # 180 s after the job ran again on it
    assert fitted["jvm_mb_per_min"] == pytest.approx(0.0, abs=1e-6)
    assert fitted["python_mb_per_min"] == pytest.approx(1.0)
    assert fitted["heap_low_mb_per_min"] == pytest.approx(2.0, abs=0.3)
    summary = {"rss": slopes, "rss_slope_limit_mb_per_min": 0.5}
    assert report.climbing(summary) == ["tm-0"]
    assert report.climbing({**summary, "rss_slope_limit_mb_per_min": None}) == []


def test_windows_count_inputs_by_send_time_and_results_by_arrival():
    sent = {0: 1.0, 1: 2.0, 2: 12.0}
    committed = {0: 3.0, 1: 14.0, 2: 15.0}
    rows = analysis.windows(sent, committed, {0: 1.5}, start=0.0, end=20.0)
    assert [r["inputs_per_s"] for r in rows] == [0.2, 0.1, 0.0]
    assert [r["outputs_per_s"] for r in rows] == [0.1, 0.2, 0.0]
    assert rows[1]["committed_p99_s"] == 12.0 and rows[0]["processed_p50_s"] == 0.5


def test_the_verdict_names_duplicated_results_calls_and_lost_orders():
    sent = {0: 1.0, 1: 2.0, 2: 3.0}
    found = report.verdict(sent, Counter({0: 1, 1: 2}), {"a": 1, "b": 2}, keys=100_000)
    assert (found.duplicated_outputs, found.duplicated_calls, found.lost) == ([1], ["b"], [2])
    assert found.duplicated == 2 and found.keys == 3 and found.calls == 3


def test_faults_default_to_40_and_70_percent_and_parse_from_the_command_line():
    assert default_faults(10) == (Fault("tm-kill", 240), Fault("leader-kill", 420))
    assert parse_faults("leader-kill@90, tm-kill@30") == (
        Fault("tm-kill", 30), Fault("leader-kill", 90),
    )  # fmt: skip
    assert parse_faults("") == ()
    with pytest.raises(ValueError, match="KIND@SECONDS"):
        parse_faults("broker-kill@10")
