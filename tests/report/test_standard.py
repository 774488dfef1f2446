"""Reports of the standard benchmarks from a synthetic store with exactly known answers."""

from __future__ import annotations

import numpy as np
from rich.console import Console

from jitterlab.analysis.compare import Selector, compare
from jitterlab.analysis.latency import latency_metrics
from jitterlab.model.fakes import cell, run_record
from jitterlab.model.records import Metric
from jitterlab.model.series import Samples
from jitterlab.report.html import render
from jitterlab.report.summaries import summarize
from jitterlab.report.terminal import runs_table, summary_tables
from jitterlab.store.catalog import Store
from jitterlab.store.raw import write_raw

BENCH = "latency-fixture"  # not registered: the summary falls back to the graded metrics


def _store(root) -> Store:
    store = Store(root)
    cid = store.new_campaign("std", "fp", "c.toml", "", {})
    for policy, base_us in (("other", 50), ("fifo", 10)):
        for rep in range(4):
            rtt = (np.arange(1, 101) + base_us + rep) * 1000  # ns; p50 = (50 + base + rep) us
            run_id = f"{policy}{rep}"
            raw = f"raw/{run_id}.parquet"
            sha = write_raw(store.root / raw, {"rtt": Samples(rtt, "ns")})
            metrics = [*latency_metrics(rtt, prefix="rtt"), Metric("messages", 100.0, "count", "", "none")]
            store.commit_run(
                run_record(
                    cell(BENCH, {"size": 64, "policy": policy}, target="local"), id=run_id,
                    campaign_id=cid, cell_key=f"{policy}", repetition=rep, started_ns=rep,
                    raw_path=raw, raw_sha256=sha, metrics=metrics,
                )
            )
    store.commit_run(
        run_record(
            cell(BENCH, {"size": 64, "policy": "deadline"}, target="local"), id="dl0", campaign_id=cid,
            cell_key="deadline", status="failed", error="SCHED_DEADLINE refused by the kernel",
            started_ns=9,
        )
    )
    return store


def test_summary_medians_and_columns(tmp_path):
    store = _store(tmp_path)
    [bench] = summarize(store.runs())
    assert bench.benchmark == BENCH
    # graded metrics only ("messages" and "rtt_samples" describe, they do not grade)
    assert "messages" not in bench.columns and "rtt_samples" not in bench.columns
    assert "rtt_p50_ns" in bench.columns
    cells = {c.params: c for c in bench.cells}
    assert bench.fixed == "size=64"  # the same in every cell: said once, not per cell
    fifo = cells["policy=fifo"].values["rtt_p50_ns"]
    # reps 0..3 give p50 = 60, 61, 62, 63 us: median 61.5 us, spread 60-63 us
    assert (fifo.value, fifo.low, fifo.high, fifo.n, fifo.rule) == (61_500, 60_000, 63_000, 4, "median")
    # a maximum is summarized by the worst run, never by a median no run produced
    top = cells["policy=fifo"].values["rtt_max_ns"]
    assert (top.value, top.rule) == (113_000, "worst")  # max = 100 + 10 + rep us, worst rep 3
    assert cells["policy=deadline"].values == {}
    assert cells["policy=deadline"].errors == ["SCHED_DEADLINE refused by the kernel"]


def test_terminal_tables(tmp_path):
    store = _store(tmp_path)
    console = Console(record=True, width=300)
    for table in summary_tables(store.runs(), "std"):
        console.print(table)
    console.print(runs_table(store.runs()))
    text = console.export_text()
    assert f"std: {BENCH}" in text
    assert "policy=fifo" in text and "61.5 µs" in text and "every cell: size=64" in text
    assert "maximum round-trip time (worst run)" in text  # the metric in words and the rule in the header
    assert "median round-trip time (median of runs)" in text
    assert "SCHED_DEADLINE refused" in text
    assert "max relative period error" not in text  # no squarewave runs, no squarewave table


def test_html_section_with_figures(tmp_path):
    store = _store(tmp_path / "s")
    report = render(store, tmp_path / "r.html", figure_files=False)
    html = report.path.read_text()
    assert f'id="bench-{BENCH}"' in html
    assert f'data-figure="bars" data-benchmark="{BENCH}"' in html
    assert f'data-figure="distribution" data-benchmark="{BENCH}"' in html
    assert "policy=other idle" in html and "SCHED_DEADLINE refused by the kernel" in html
    assert "Every cell: size=64." in html and "maximum round-trip time (worst run)" in html


def test_compare_by_cell_parameter(tmp_path):
    store = _store(tmp_path)
    result = compare(store.runs(), Selector("policy", "other"), Selector("policy", "fifo"))
    row = next(r for r in result.rows if r.metric == "rtt_p50_ns")
    # other: p50 = 100..103 us, fifo: 60..63 us; lower is better. The groups are shown by the
    # geometric means of the runs' p50s, whose ratio is the change
    assert 100_000 < row.baseline < 103_000 and 60_000 < row.candidate < 63_000
    assert row.rule == "geometric mean of run p50s" and abs(row.ratio - row.candidate / row.baseline) < 1e-12
    assert row.direction == "lower" and row.verdict == "better"
    assert next(r for r in result.rows if r.metric == "messages").direction == "none"


def test_export_has_cell_parameters_directions_and_samples(tmp_path):
    import csv
    import io
    import json

    import pyarrow.parquet as pq

    from jitterlab.report.export import export

    store = _store(tmp_path / "s")
    runs = store.runs()
    rows = list(csv.DictReader(io.StringIO(export(store, runs, "csv", None))))
    assert {r["param.policy"] for r in rows} == {"other", "fifo", "deadline"}
    doc = json.loads(export(store, runs, "json", None))
    assert doc["runs"][0]["metrics"]["messages"]["direction"] == "none"
    export(store, runs, "parquet", tmp_path / "pq")
    samples = pq.read_table(tmp_path / "pq" / "samples.parquet")
    assert samples.num_rows == 8 * 100 and set(samples.column("unit").to_pylist()) == {"ns"}
    assert pq.read_table(tmp_path / "pq" / "raw.parquet").num_rows == 0


def test_compare_names_the_values_a_cell_key_takes(tmp_path):
    import pytest

    from jitterlab.model.errors import UserError

    store = _store(tmp_path)
    with pytest.raises(UserError, match=r"--candidate policy=fifoo: .*policy takes: deadline, fifo, other"):
        compare(store.runs(), Selector("policy", "other"), Selector("policy", "fifoo"))
