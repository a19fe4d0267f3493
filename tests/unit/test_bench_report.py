"""docs/performance.md is generated from latest.json: targets judged per entry, failures shown."""

from __future__ import annotations

from benchmarks.report import ABOUT, render


def entry(name, ours, baseline, target, **extra):
    return {
        "name": name,
        "unit": "us",
        "ours": ours,
        "baseline": baseline,
        "ratio": round(ours / baseline, 3),
        "target": target,
        "when": "2026-11-29T07:00:00+0000",
        **extra,
    }


def row(page: str, name: str) -> str:
    (line,) = [line for line in page.splitlines() if line.startswith(f"| `{name}`")]
    return line


def test_each_entry_is_judged_by_its_own_kind_of_target():
    page = render(
        {
            "machine": "Linux x86_64, 2 cores, Python 3.11.7",
            "when": "2026-11-29T07:00:00+0000",
            "benchmarks": [
                entry("flink.chat.latency.p50", 2.5, 1.5, 3.0),  # absolute: ours <= 3
                entry("core.durable_execute.sqlite", 300.0, 200.0, 1.5),  # ratio 1.5 <= 1.5
                entry("kafka.recovery.read", 4000.0, 2500.0, 50000),  # absolute: ours >= 50000
                entry("kafka.throughput.64", 1500.0, 2500.0, 0.8),  # ratio 0.6 >= 0.8
                entry("peer.dbos.step.sqlite", 350.0, 3500.0, 1.0, note="DBOS Transact 3.4.0"),
                {"name": "peer.dbos.step.kafka", "error": "no Kafka broker: java missing"},
            ],
        }
    )
    assert "Machine: Linux x86_64, 2 cores, Python 3.11.7" in page
    assert "| pass |" in row(page, "flink.chat.latency.p50")
    assert "ours (us) at most 3" in row(page, "flink.chat.latency.p50")
    assert "| pass |" in row(page, "core.durable_execute.sqlite")
    assert "**FAIL**" in row(page, "kafka.recovery.read")
    assert "ratio at least 0.8 | **FAIL**" in row(page, "kafka.throughput.64")
    assert "- redefined in issue 21: the baseline was 64 threads doing" in page
    assert "ratio below 1" in row(page, "peer.dbos.step.sqlite")
    assert "| pass |" in row(page, "peer.dbos.step.sqlite")
    assert "not measured" in row(page, "peer.dbos.step.kafka")
    assert "- `peer.dbos.step.kafka`: no Kafka broker: java missing" in page
    assert "- measured with: DBOS Transact 3.4.0" in page
    assert "make bench BENCH=peer.dbos.step.sqlite" in page
    assert ABOUT["peer.dbos.step.sqlite"].baseline in page


def test_an_entry_without_a_description_says_so():
    page = render({"benchmarks": [entry("new.thing", 2.0, 1.0, 1.5)]})
    assert "ratio at most 1.5 | **FAIL**" in row(page, "new.thing")
    assert "No description yet" in page


def test_an_entry_absent_from_the_results_is_still_described_with_its_redefinition():
    page = render({"benchmarks": [entry("core.durable_execute.sqlite", 3.0, 2.0, 1.5)]})
    section = page.split("### `flink.operator.overhead`")[1].split("###")[0]
    assert ABOUT["flink.operator.overhead"].baseline in section
    assert "- redefined in issue 21: the baseline was a plain `KeyedProcessFunction`" in section
    assert "`flink.operator.overhead`" in page.split("## What each entry measures")[0]
