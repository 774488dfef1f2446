"""Figures, tables and the HTML report from the small synthetic store (conftest.py)."""

from __future__ import annotations

import re
import shutil

import numpy as np
import pytest

from jitterlab.analysis.compare import NO_CHANGE, Selector, compare
from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli import build_parser
from jitterlab.errors import UserError
from jitterlab.report import figures
from jitterlab.report.commands import add_commands, format_comparison
from jitterlab.report.html import render
from jitterlab.store.catalog import Store
from jitterlab.store.raw import EdgeSeries

CAMPAIGNS = ["board-1.10", "board-1.11"]


def run_cli(argv):
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    if "report" not in sub.choices:
        add_commands(sub)
    args = parser.parse_args(argv)
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
    assert [ax.get_title() for ax in fig.axes] == ["board — load cpu", "board — load idle"]
    assert all(ax.get_xscale() == ax.get_yscale() == "log" for ax in fig.axes)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert texts == ["bash: failed"]  # the failed bash/cpu/1ms repetition, with why
    assert not fig.axes[1].texts


def test_compare_figure_writes_the_change_on_the_bars(report_store):
    result = compare(report_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["max_rel_period_error"])
    fig = figures.compare_figure(result)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert len(labels) == len(result.rows) == 16  # 8 cells x 2 probes
    assert all(re.fullmatch(r"[+-]\d+ %", s) for s in labels)


def test_compare_finds_the_doubled_jitter(report_store):
    result = compare(report_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["std_period_ns"])
    # jitter sd doubles in 1.11: std of the period about doubles, worse in every cell with 4 vs 4
    # runs; the cell with a failed run has 3 vs 3, whose smallest possible p is 0.1: no call
    three = [r for r in result.rows if r.n_baseline == 3]
    four = [r for r in result.rows if r.n_baseline == 4]
    assert len(three) == 2 and len(four) == 14
    assert {r.verdict for r in four} == {"worse"} and {r.verdict for r in three} == {NO_CHANGE}
    assert all(1.6 < r.ratio < 2.4 for r in result.rows)
    [w] = result.warnings
    assert "cpu impl=bash period=1ms" in w.message and "3 vs 3 runs" in w.message and "0.1" in w.message
    text = format_comparison(result, "markdown")
    assert text.count("| worse |") == 14


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
    assert "bash: fork failed" in html
    assert any("per-run figures of 13 more cells" in s for s in report.skipped)
    assert len(report.figure_files) == 2 * 8 and all(p.stat().st_size for p in report.figure_files)


def test_damaged_raw_is_skipped_naming_the_run(report_store, tmp_path):
    root = tmp_path / "copy"
    shutil.copytree(report_store.root, root)
    store = Store(root)
    worst = max((r for r in store.runs() if r.status == "ok"),
                key=lambda r: r.metric("max_rel_period_error"))
    (root / worst.raw_path).write_bytes(b"not parquet")
    report = render(store, tmp_path / "r.html", campaigns=CAMPAIGNS, max_run_figures=2,
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
    from jitterlab.fakes import cell, run_record
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
    assert {r["verdict"] for r in doc["rows"]} == {"worse", NO_CHANGE}
    with pytest.raises(UserError, match="they have: .*max_rel_period_error"):
        run_cli(["compare", "--results", str(report_store.root), "--baseline", "image=1.10",
                 "--candidate", "image=1.11", "--metric", "nope"])
