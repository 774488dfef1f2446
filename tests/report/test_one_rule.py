"""One number, one rule, one name in every view: a metric whose declared summary rule differs from
the one its name gives (rtt_p99_ns declared the worst run; by its name it would be the median of
runs) is read back with the same value, named by the same rule, from every table (show, summary,
the report) and every export (csv, json, parquet, junit, kcidb, lava); compare shows a figure of
its own (the runs' geometric mean), named by its own statistic."""

from __future__ import annotations

import csv
import io
import json
import re
import xml.etree.ElementTree as ET

import pyarrow.parquet as pq
import pytest

from jitterlab.analysis.reading import summary_rule
from jitterlab.cli.main import main
from jitterlab.model.fakes import cell, run_record
from jitterlab.model.reading import MEDIAN, P99, RATIO, WORST
from jitterlab.model.records import Metric
from jitterlab.store.catalog import Store

P99_NS = {"a": (100.0, 900.0, 120.0), "b": (210.0, 1800.0, 250.0)}  # worst 900 / 1800; medians 120 / 250
WORST_NS = {"a": 900.0, "b": 1800.0}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    root = tmp_path_factory.mktemp("one-rule") / "r"
    store = Store(root)
    echo = cell("udp-echo", {"size": 64, "policy": "fifo"})
    for image, values in P99_NS.items():  # image A, then image B: a campaign each, as `run --label` makes
        cid = store.new_campaign("echo", f"fp-{image}", "c.toml", "", {"image": image})
        for i, value in enumerate(values):
            store.commit_run(run_record(echo, id=f"{image}{i}", campaign_id=cid, repetition=i,
                                        labels={"image": image}, started_ns=i + 1, metrics=[
                                            Metric("rtt_p99_ns", value, "ns", "", "lower", WORST, RATIO, P99),
                                            Metric("rtt_max_ns", 2 * value, "ns", "", "lower")]))
    store.close()
    return root


def out(capsys, *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_the_rule_declared_is_not_the_one_the_name_gives():
    assert summary_rule("rtt_p99_ns") == MEDIAN  # without its declaration: 120 ns and 250 ns


def test_every_table_shows_the_worst_run_named_as_such(results, capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("COLUMNS", "200")
    r = str(results)
    shown = out(capsys, "show", "--runs", "--results", r)
    lines = shown.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("cell "))  # the cells, under the runs
    assert lines[at].split("  ")[-2].strip() == "99th percentile round-trip time (worst run)"
    assert [lines[at + 1].split()[-4:-2], lines[at + 2].split()[-4:-2]] == [["900", "ns"], ["1.8", "µs"]]
    summary = out(capsys, "summary", "--results", r).splitlines()
    at = summary.index("udp-echo: rtt_p99_ns (worst run)")
    assert [line.split()[-2:] for line in summary[at + 1:at + 3]] == [["900", "ns"], ["1.8", "µs"]]
    assert main(["report", "--results", r, "-o", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()
    html = (tmp_path / "r.html").read_text()
    assert "99th percentile round-trip time (worst run)" in html
    cells = re.findall(r"<td[^>]*>([^<]*)</td>", html)
    # the figure, with the runs' spread beside it; never the median of runs (120 ns)
    assert "900 ns (100 ns – 900 ns)" in cells and "1.8 µs (210 ns – 1.8 µs)" in cells
    assert not any(c.startswith("120 ns") for c in cells)


def test_every_export_gives_the_worst_run_named_as_such(results, capsys, tmp_path):
    r = str(results)
    junit = ET.fromstring(out(capsys, "export", "--results", r, "--format", "junit"))
    outputs = [c.find("system-out").text for c in junit.iter("testcase")]
    assert any("rtt_p99_ns (worst run): 900 ns over 3 run(s), the worst run a1: pass" in o for o in outputs)
    assert any("rtt_p99_ns (worst run): 1.8 µs over 3 run(s), the worst run b1: pass" in o for o in outputs)
    lava = out(capsys, "export", "--results", r, "--format", "lava").splitlines()
    assert [line for line in lava if line.startswith("case\trtt_p99_ns")] == [
        "case\trtt_p99_ns_worst_run\tpass\t900\tns", "case\trtt_p99_ns_worst_run\tpass\t1800\tns"]
    # the per-run exports hold each run's value: the worst of a cell's runs is the figure above
    rows = list(csv.DictReader(io.StringIO(out(capsys, "export", "--results", r, "--format", "csv"))))
    data = json.loads(out(capsys, "export", "--results", r, "--format", "json"))
    assert main(["export", "--results", r, "--format", "kcidb", "-o", str(tmp_path / "k")]) == 0
    assert main(["export", "--results", r, "--format", "parquet", "-o", str(tmp_path / "p")]) == 0
    capsys.readouterr()
    kcidb = json.loads((tmp_path / "k" / "kcidb.json").read_text())
    metrics = pq.read_table(tmp_path / "p" / "metrics.parquet").to_pylist()
    for image, worst in WORST_NS.items():
        mine = {f"{image}{i}" for i in range(3)}
        assert max(float(x["rtt_p99_ns"]) for x in rows if x["id"] in mine) == worst
        assert max(x["metrics"]["rtt_p99_ns"]["value"] for x in data["runs"] if x["id"] in mine) == worst
        assert max(m["value"] for m in metrics if m["run_id"] in mine and m["name"] == "rtt_p99_ns") == worst
        numbers = [t["number"]["value"] for t in kcidb["tests"] if t["misc"]["run_id"] in mine]
        assert max(numbers) == pytest.approx(worst * 1e-9)
        assert {t["status"] for t in kcidb["tests"] if t["misc"]["run_id"] in mine} == {"DONE"}


def test_compare_names_its_own_figure(results, capsys):
    rows = json.loads(out(capsys, "compare", "--results", str(results), "--baseline", "image=a",
                          "--candidate", "image=b", "--metric", "rtt_p99_ns", "--no-pooled", "--format",
                          "json"))["rows"]
    [row] = [x for x in rows if x["metric"] == "rtt_p99_ns"]
    assert row["summary"] == "geometric mean of run p99s"  # not the cells' worst run, and said so
    assert row["baseline"] == pytest.approx((100.0 * 900.0 * 120.0) ** (1 / 3))
