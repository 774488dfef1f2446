"""Figures, tables and the HTML report from the small synthetic store (conftest.py)."""

from __future__ import annotations

import dataclasses
import re
import shutil
from html import unescape

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.analysis.compare import Selector, compare
from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli.main import build_parser
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.series import EdgeSeries
from jitterlab.report.comparison import format_comparison
from jitterlab.report.figures import compare as compare_figures
from jitterlab.report.figures import squarewave as figures
from jitterlab.report.html import render
from jitterlab.report.sections.squarewave import impl_namer, most_informative
from jitterlab.report.traits import own
from jitterlab.store.catalog import Store

CAMPAIGNS = ["board-1.10", "board-1.11"]
MS = 1_000_000


def run_cli(argv):
    args = build_parser().parse_args(argv)
    return args.func(args)


def test_period_errors_match_the_definition():
    t, lev = square_wave(1000, 10, delays={6: 100})
    t_s, e = figures.period_errors(EdgeSeries(t, lev), 1000, 0)
    # warm-up drops 2 periods (4 edges): periods start at edges 4..7; edge 6 is 100 ns late
    assert list(e) == [0.1, 0.0, -0.1, 0.0]
    assert t_s[0] == pytest.approx(2e-6)
    _, e = figures.period_errors(EdgeSeries(t, lev), 1000, 0, np.array([[t[6], t[6]]]))
    assert list(e) == [0.0]  # periods 4, 5, 6 touch the blind instant


def test_envelope_figure_has_one_panel_per_load_and_marks_failed_cells(report_store):
    runs = report_store.runs()
    fig = figures.envelope_figure(runs, "board")
    panels = [ax for ax in fig.axes if ax.get_gid() != "no-value-strip"]
    # idle first; the figure's title names the target, the panels only their load
    assert [ax.get_title() for ax in panels] == ["load idle", "load cpu"]
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in panels)
    assert "board" in fig.get_suptitle()
    # the y axis is in % like every table; x in durations
    ax = fig.axes[0]
    assert [ax.yaxis.get_major_formatter()(v, 0) for v in (1, 10, 100)] == ["1 %", "10 %", "100 %"]
    assert ax.xaxis.get_major_formatter()(1e-4, 0) == "100 µs"
    assert ax.get_ylim()[0] <= 1  # the 1 % line is in view
    strips = [ax for ax in fig.axes if ax.get_gid() == "no-value-strip"]
    assert [t.get_text() for t in strips[1].texts] == ["failed"]  # the failed cpu run, with why
    assert [t.get_text() for t in strips[0].get_yticklabels()] == ["bash"]
    assert not strips[0].texts and not any(ax.texts for ax in panels)


def _sw(impl, period_ns, err, excluded, used=1000, load="idle"):
    metrics = [Metric("max_rel_period_error", err, "ratio", "vpin"),
               Metric("excluded_periods", excluded, "count", "vpin"),
               Metric("n_periods", used, "count", "vpin")]
    return run_record(squarewave_cell(impl, period_ns, load=load, target="t"),
                      id=f"{impl}{period_ns}{excluded}", cell_key=f"{impl}{period_ns}", metrics=metrics)


def test_blind_marker_only_where_exclusions_change_the_figure():
    # c-fifo at 1 ms: 50 of 1050 periods excluded (4.8 %): marked; at 10 ms 5 of 1005 (0.5 %): not
    runs = [_sw("c-fifo", 10 * MS, 0.001, 5), _sw("c-fifo", MS, 0.02, 50)]
    fig = figures.envelope_figure(runs, "t")
    rings = [line for line in fig.axes[0].lines if line.get_markerfacecolor() == "none"]
    assert [list(line.get_xdata()) for line in rings] == [[MS / 1e9]]
    legend = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert "probe blind 1 % – 5 % of periods" in legend
    fig = figures.envelope_figure([_sw("c-fifo", MS, 0.02, 5)], "t")
    assert not [line for line in fig.axes[0].lines if line.get_markerfacecolor() == "none"]
    assert not any("blind" in t.get_text() for lg in fig.legends for t in lg.get_texts())


def test_the_paper_s_figure_gets_a_line_for_the_unit_which_says_when_it_was_emulated():
    unit = run_record(squarewave_cell("unit", MS, target="t", probe="emulator", pin="unit"), id="u",
                      metrics=[Metric("max_rel_period_error", 0.003, "ratio", "emulator"),
                               Metric("unit_emulated", 1.0, "", "")])
    fig = figures.envelope_figure([_sw("c-fifo", MS, 0.02, 0), _sw("python", MS, 0.2, 0), unit], "t")
    labels = [t.get_text() for lg in fig.legends for t in lg.get_texts()]
    assert {"c-fifo", "python", "unit (emulated)"} <= set(labels)
    real = dataclasses.replace(unit, metrics={("emulator", "max_rel_period_error"): unit.metrics[
        ("emulator", "max_rel_period_error")]})
    labels = [t.get_text() for lg in figures.envelope_figure([real], "t").legends for t in lg.get_texts()]
    assert "unit" in labels and "unit (emulated)" not in labels


def test_paper_panels_run_idle_cpu_net_then_the_others():
    runs = [_sw("c-fifo", MS, 0.01, 0, load=load) for load in ("memory", "net", "cpu", "idle", "disk")]
    runs = [dataclasses.replace(r, id=r.load) for r in runs]
    fig = figures.envelope_figure(runs, "t")
    assert [ax.get_title().split("load ")[1] for ax in fig.axes] == ["idle", "cpu", "net", "disk", "memory"]


def test_compare_figure_labels_every_row_with_its_change(report_store):
    result = compare(report_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["max_rel_period_error"])
    fig = compare_figures.compare_figure(result)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.texts]
    assert len(labels) == len(result.rows) == 16  # 8 cells x 2 probes
    # the change as the tables give it, and its factor where it is ×2 or more either way
    assert all(re.fullmatch(r" [+-][\d,.]+ %( \(×[\d,.]+\))?", s) for s in labels), labels
    assert len(ax.get_yticklabels()) == 16 and ax.get_xscale() == "log"
    assert all(len(line) <= 70 for t in ax.get_yticklabels() for line in t.get_text().split("\n"))


def test_compare_finds_the_doubled_jitter(report_store):
    result = compare(report_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["std_period_ns"], traits=plugins.traits)
    # jitter sd doubles in 1.11: std of the period about doubles, worse in every cell, also in the
    # cell with a failed run, whose 3 vs 3 runs a rank test could never call (smallest p 0.1)
    three = [r for r in result.rows if r.n_baseline == 3]
    four = [r for r in result.rows if r.n_baseline == 4]
    assert len(three) == 2 and len(four) == 14
    # tested as the cells' probe (vpin) saw it; the program's own view (self) is shown, not tested
    tested = result.tested_rows
    assert {r.probe for r in tested} == {"vpin"} and {r.verdict for r in tested} == {"worse"}
    assert {r.verdict for r in result.rows if r.probe == "self"} == {""}
    assert {r.test for r in result.rows} == {"welch-t on log values"}
    assert all(1.6 < r.ratio < 2.4 and r.ci_low > 1 for r in result.rows)
    assert all(r.p_adjusted >= r.p_value for r in tested)  # Holm over the 8 tested rows
    assert result.notes == [] and result.n_tests == 8
    text = format_comparison(result, "markdown")
    # the cpu cells' load doubled in 1.11 (its bogo-ops): their verdicts say so, and the warnings how much
    assert text.count("| worse |") == 4 and text.count("| worse (load differed) |") == 4 and "Holm" in text
    assert ("the groups ran under different measured load (load_bogo_ops_per_s 1,000 bogo-ops/s → 2,000 "
            "bogo-ops/s (+100 %))") in text


def test_html_report_sections_and_skips(report_store, tmp_path):
    report = render(report_store, tmp_path / "r.html", campaigns=CAMPAIGNS, max_run_figures=3)
    html = (tmp_path / "r.html").read_text()
    assert html.count('data-figure="paper"') == 1
    assert html.count('data-figure="histogram"') == html.count('data-figure="timeline"') == 3
    assert html.count('data-figure="compare"') == 1
    assert html.count("<svg") == 1 + 2 * 3 + 1
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", html)  # nothing to fetch
    assert "<script" not in html
    for heading in ("Operational envelope", "Self-measurement bias", "Targets", "Warnings",
                    "Comparisons", "Skipped"):
        assert heading in html
    assert "c-fifo [image=1.10]" in html and "PREEMPT_RT" in html
    assert "cpupower frequency-set -g performance" in html  # a stored warning with its remedy
    assert html.count("cpupower frequency-set -g performance") == 1  # grouped: once for both campaigns
    assert "bash: fork failed" in html
    # one figure per impl x load (2 images x 2 impls x 2 loads = 8 groups), 3 drawn
    assert any("per-run figures of 5 more impl x load groups" in s for s in report.skipped)
    assert len(report.figure_files) == 2 * 8 and all(p.stat().st_size for p in report.figure_files)


def test_damaged_raw_is_skipped_naming_the_run(report_store, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(report_store.root, root)
    store = Store(root)
    runs = store.runs()
    worst = most_informative(runs, impl_namer(runs))[0]  # the first run drawn
    (root / worst.raw_path).write_bytes(b"not parquet")
    report = render(store, tmp_path / "r.html", campaigns=CAMPAIGNS, max_run_figures=1,  # that run's
                    figure_files=False)
    [skip] = [s for s in report.skipped if worst.id in s]
    assert "damaged" in skip and skip.startswith(f"run {worst.id}")
    assert report.figure_files == []


def test_bad_input(tmp_path, report_store):
    Store(tmp_path / "empty").close()
    with pytest.raises(UserError, match="store is empty"):
        run_cli(["report", "--results", str(tmp_path / "empty"), "-o", str(tmp_path / "x.html")])
    with pytest.raises(UserError, match=r"--campaign 'nope': .*board-1.10, board-1.11"):
        render(report_store, tmp_path / "x.html", campaigns=["nope"])
    # a campaign without squarewave runs still renders, and says what it skipped
    store = Store(tmp_path / "other")
    cid = store.new_campaign("latency", "fp", "c.toml", "", {})
    from jitterlab.model.fakes import cell, run_record
    store.commit_run(run_record(cell("cyclictest", {"interval": 1000}, target="t"), id="c1",
                                campaign_id=cid, cell_key="k"))
    render(store, tmp_path / "x.html")
    html = (tmp_path / "x.html").read_text()
    assert '<section id="standard">' in html and 'id="bench-cyclictest"' in html
    assert 'data-figure="paper"' not in html and '<section id="squarewave">' not in html


def test_cli_report_and_compare(report_store, tmp_path, capsys):
    assert run_cli(["report", "--results", str(report_store.root), "--campaign", "board-1.10",
                    "--campaign", "board-1.11", "-o", str(tmp_path / "r.html"),
                    "--max-run-figures", "1", "--no-figure-files"]) == 0
    assert (tmp_path / "r.html").exists() and not (tmp_path / "r_figures").exists()
    capsys.readouterr()
    assert run_cli(["compare", "--results", str(report_store.root), "--baseline", "image=1.10",
                    "--candidate", "image=1.11", "--metric", "std_period_ns", "--format",
                    "json"]) == 0
    import json
    doc = json.loads(capsys.readouterr().out)
    assert doc["format"] == "jitterlab.compare/3" and doc["correction"] == "holm"
    tested = [r for r in doc["rows"] if r["tested"]]
    assert {r["verdict"] for r in tested} == {"worse"} and doc["verdicts"]["worse"] == len(tested) == 8
    # --fail-on worse: exit 1 for a CI gate; the same groups the other way round got better
    assert run_cli(["compare", "--results", str(report_store.root), "--baseline", "image=1.10",
                    "--candidate", "image=1.11", "--metric", "std_period_ns", "--fail-on",
                    "worse"]) == 1
    assert run_cli(["compare", "--results", str(report_store.root), "--baseline", "image=1.11",
                    "--candidate", "image=1.10", "--metric", "std_period_ns", "--fail-on",
                    "worse"]) == 0
    with pytest.raises(UserError, match=r"--metric nope: no such metric in these runs; they have: \S+, \S+, "
                                        r"\S+ \(the nearest of \d+; `jitterlab show RUN_ID` lists every"):
        run_cli(["compare", "--results", str(report_store.root), "--baseline", "image=1.10",
                 "--candidate", "image=1.11", "--metric", "nope"])


def test_export_holds_the_envelope_by_rule(report_store, tmp_path):
    import csv
    import io
    import json

    import pyarrow.parquet as pq

    from jitterlab.report.export import export

    runs = report_store.runs()
    doc = json.loads(export(report_store, runs, "json", None))
    rules = {(e["impl"], e["load"], e["probe"], e["rule"]) for e in doc["envelope"]}
    # 2 impls x 2 images x 2 loads x 1 probe, each by the default rules max and p99
    assert len(rules) == 16 and {r[3] for r in rules} == {"max", "p99"}
    assert {e["metric"] for e in doc["envelope"]} == {"max_rel_period_error", "p99_rel_period_error"}
    assert all(e["shortest_period_ns"] in (None, MS, 10 * MS) for e in doc["envelope"])
    assert doc["runs"][0]["metrics"]["vpin.max_rel_period_error"]["unit"] == "ratio"  # raw, unit beside
    rows = list(csv.DictReader(io.StringIO(export(report_store, runs, "csv", None, table="envelope"))))
    assert len(rows) == len(doc["envelope"]) and {r["threshold"] for r in rows} == {"0.01", "0.1"}
    export(report_store, runs, "parquet", tmp_path / "pq")
    assert pq.read_table(tmp_path / "pq" / "envelope.parquet").num_rows == len(doc["envelope"])
    with pytest.raises(UserError, match="--table envelope: only with --format csv"):
        export(report_store, runs, "json", None, table="envelope")


def test_figures_draw_exactly_the_periods_the_metrics_used(report_store):
    from jitterlab.analysis.samples import distribution
    from jitterlab.model.traits import PERIOD_ERRORS
    from jitterlab.report.traits import period_ns

    checked = 0
    for r in report_store.runs():
        if r.status != "ok":
            continue
        found = distribution(r, report_store.read_series(r), PERIOD_ERRORS, period_ns(r))
        for probe in ("vpin", "self"):
            values, counts = found[probe]
            assert counts.sum() == r.metric("n_periods", probe), (r.id, probe)
            assert values.max() == pytest.approx(r.metric("max_rel_period_error", probe))
            checked += 1
    assert checked > 0 and any((own(r, "excluded_periods") or 0) > 0 for r in report_store.runs())


def test_an_impl_on_two_pins_is_two_lines_not_one():
    runs = [run_record(squarewave_cell("python", pin=pin, probe="self"), id=pin)
            for pin in ("sysfs", "gpiod")]
    impl_of = impl_namer(runs)
    assert [impl_of(r) for r in runs] == ["python @sysfs", "python @gpiod"]
    alone = runs[:1]
    assert impl_namer(alone)(alone[0]) == "python"  # one pin: nothing to tell apart


def test_a_lower_bound_has_its_caret_as_the_tables_have_their_mark(report_store):
    """A cell whose probe did not observe every period (rep 1 of each cell is blind there) is drawn
    with a caret above its point, the "≥" of the terminal's table; a cell fully observed has none."""
    runs = [r for r in report_store.runs() if r.labels["image"] == "1.10"]
    fig = figures.envelope_figure(runs, "board")
    carets = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "lower-bound"]
    assert len(carets) == 8  # 2 impls x 2 loads x 2 periods, each with a blind repetition
    seen = [r for r in runs if r.repetition != 1]  # drop the blind repetitions: no bound left
    fig = figures.envelope_figure(seen, "board")
    assert not [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == "lower-bound"]
    labels = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert not any(t.startswith("caret above a point") for t in labels)


def test_the_comparison_chart_draws_the_rows_judged_and_says_how_many(report_store, tmp_path):
    render(report_store, tmp_path / "r.html", campaigns=CAMPAIGNS, max_run_figures=0)
    html = (tmp_path / "r.html").read_text()
    [svg] = re.findall(r'data-figure="compare">(.*?)</div>', html, flags=re.S)
    # 8 cells x the 3 watched metrics as vpin saw them, p99 among them: the first 24 rows of the table
    for metric in ("max_rel_period_error", "p99_rel_period_error", "std_period_ns"):
        assert metric in svg, metric
    [caption] = [unescape(c) for c in re.findall(r'<p class="muted">(The chart: .*?)</p>', html, flags=re.S)]
    result = compare(report_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"))
    assert caption.startswith(f"The chart: 24 of the comparison's {len(result.rows)} rows, the tested ones "
                              "(the watched metrics: max_rel_period_error, p99_rel_period_error, "
                              "std_period_ns)")
    assert "every metric" not in caption
    assert "every row: <code>jitterlab compare --results " in caption and "--all</code>" in caption


def test_the_comparison_chart_marks_the_maxima_that_are_only_bounds(report_store, tmp_path):
    """Rep 1 of every cell was blind on vpin in both images: each vpin maximum's change is a bound
    either way, a caret on each side of its point in the page's SVG, and the caption says why."""
    render(report_store, tmp_path / "r.html", campaigns=CAMPAIGNS, max_run_figures=0)
    html = (tmp_path / "r.html").read_text()
    [svg] = re.findall(r'data-figure="compare">(.*?)</div>', html, flags=re.S)
    assert svg.count('id="lower-bound') == svg.count('id="upper-bound') == 8  # 2 impls x 2 loads x 2 periods
    assert svg.count("either way") == 8 + 1 and "lower bound (≥)" in svg and "upper bound (≤)" in svg
    assert "either way (both carets): both groups' probes missed periods, the change may be larger" in svg
    [caption] = [unescape(c) for c in re.findall(r'<p class="muted">(The chart: .*?)</p>', html, flags=re.S)]
    assert ('95 % interval. A caret beside 8 points: a group\'s maximum there is only a lower bound (its '
            'probe missed periods: the tables\' "≥"), so the change is a bound') in caption
    assert ('both carets and "either way" where it is both groups\' (it may be larger or smaller: the point '
            "says nothing of the change's direction)") in caption
