"""A comparison as people read it: the table, the paragraph, JSON, grouped warnings, the chart, and
`jitterlab compare`'s options, on synthetic groups with known verdicts."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitterlab.analysis.compare import BETTER, NOT_GRADED, SAME, UNDECIDED, WORSE, Selector
from jitterlab.analysis.compare import compare as compare_with
from jitterlab.cli.main import build_parser, main
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.traits import BenchmarkTraits
from jitterlab.report.comparison import (
    VERDICT_STYLES,
    comparison_json,
    comparison_note,
    comparison_rows,
    comparison_warnings,
    format_comparison,
)
from jitterlab.report.figures.compare import (
    CARET_LEFT,
    CARET_RIGHT,
    EITHER_WAY_TEXT,
    LOWER_BOUND_TEXT,
    STYLES,
    UPPER_BOUND_TEXT,
    Censored,
    censored_rows,
    change_ticks,
    charted_rows,
    compare_figure,
    factor,
    point_label,
)
from jitterlab.store.catalog import Store

A, B = Selector("image", "a"), Selector("image", "b")
MS = 1_000_000


def own_view(benchmark: str) -> BenchmarkTraits:
    """No headline declared (every graded metric is watched); a run's own view is its cell's probe."""
    return BenchmarkTraits(subject="probe")


def compare(runs, baseline, candidate, **kwargs):
    """compare() as these tests read squarewave runs: their own figures are their probe's."""
    return compare_with(runs, baseline, candidate, **{"traits": own_view, **kwargs})


def runs_of(per_image: dict[str, dict[str, list[float]]], impl: str = "c-fifo", period_ns: int = MS):
    """Runs of one cell: per image, each metric's values, one per run."""
    out = []
    for image, metrics in per_image.items():
        n = len(next(iter(metrics.values())))
        for i in range(n):
            out.append(run_record(squarewave_cell(impl, period_ns), id=f"{image}-{impl}-{period_ns}-{i}",
                                  repetition=i, labels={"image": image}, started_ns=i,
                                  metrics=[Metric(m, v[i], "ratio", "vpin") for m, v in metrics.items()]))
    return out


def four_verdicts():
    """One cell whose four metrics get the four verdicts, and a load reading not graded."""
    even = np.exp(np.linspace(-0.05, 0.05, 8))
    wide = np.exp(np.linspace(-0.5, 0.5, 8))
    base = {"max_rel_period_error": 0.01 * even, "p99_rel_period_error": 0.01 * even,
            "p50_rel_period_error": 0.01 * even, "std_period_error": 0.01 * wide,
            "load_bogo_ops_per_s": 1000 * even}
    cand = {"max_rel_period_error": 0.02 * even, "p99_rel_period_error": 0.005 * even,
            "p50_rel_period_error": 0.01 * even, "std_period_error": 0.01 * wide[::-1],
            "load_bogo_ops_per_s": 1000 * even[::-1]}  # the same load: no verdict is marked
    return compare(runs_of({"a": {k: list(v) for k, v in base.items()},
                            "b": {k: list(v) for k, v in cand.items()}}), A, B)


def test_four_verdicts_are_printed_apart_and_load_readings_not_tested():
    result = four_verdicts()
    verdicts = {r.metric: r.verdict for r in result.rows}
    assert verdicts == {"max_rel_period_error": WORSE, "p99_rel_period_error": BETTER,
                        "p50_rel_period_error": SAME, "std_period_error": UNDECIDED,
                        "load_bogo_ops_per_s": NOT_GRADED}
    every = format_comparison(result, "markdown", every_row=True)
    for word in ("| worse |", "| better |", "| same |", "| undecided |", "| not tested |"):
        assert every.count(word) == 1, word
    # by default the tested rows, and a count of the rest with the option that lists them
    text = format_comparison(result, "markdown", again="jitterlab compare --results r")
    assert "| not tested |" not in text and "| worse |" in text and "| undecided |" in text
    assert "not shown: 1 more row, not tested" in text
    assert "every row: jitterlab compare --results r --all" in text
    assert len({VERDICT_STYLES[v] for v in (BETTER, WORSE, SAME, UNDECIDED)}) == 4
    note = comparison_note(result)
    assert "1 worse, 1 better, 1 undecided, 1 same, of 4 tested rows" in note and "1 not tested" in note
    assert "timing 20 %, rate 5 %, loss 50 %, other 10 %" in note and "--threshold" in note
    assert "over the 4 tested rows" in note and "however often you look" in note
    # each decided row says the runs that decided it and the rule; the footer what the rule guarantees
    assert "| 8 vs 8 | +100 % [" in text and "| worse | sequential test |" in text
    assert "| same | equivalence |" in text and "| undecided | not yet |" in text
    assert ("- same (equivalence): the repeated 90 % interval lies within the threshold\n"
            "  - ≤ 5 % false same") in text
    # the footer is short lines, never one paragraph
    assert max(len(line) for line in text.split("|\n\n", 1)[1].splitlines()) < 150


def test_values_and_change_are_one_statistic_and_the_header_says_which():
    result = compare(runs_of({"a": {"max_rel_period_error": [0.1, 0.1, 0.5]},
                              "b": {"max_rel_period_error": [0.3, 0.3, 0.4]}}), A, B)
    text = format_comparison(result, "markdown")
    header, _, row = text.splitlines()[2:5]
    assert "| statistic | baseline | candidate |" in header
    gm_a, gm_b = (0.1 * 0.1 * 0.5) ** (1 / 3), (0.3 * 0.3 * 0.4) ** (1 / 3)
    change = f"+{(gm_b / gm_a - 1) * 100:.1f} %"
    # geometric means 17.1 % -> 33 %: +93.1 % (the worst runs 50 % -> 40 % would have read as better)
    assert f"| geometric mean of run maxima | {gm_a * 100:.1f} % | {gm_b * 100:.0f} % |" in row
    assert change in row


def test_compare_warnings_are_grouped_once_with_counts_and_no_holm_over_zero_tests():
    runs = []
    for period_ns in (MS, 2 * MS, 5 * MS, 10 * MS, 20 * MS):
        runs += runs_of({"a": {"max_rel_period_error": [0.01, 0.011]},
                         "b": {"max_rel_period_error": [0.02, 0.021]}}, period_ns=period_ns)
    result = compare(runs, A, B)
    assert result.n_tests == 0 and len(result.notes) == 5
    [w] = comparison_warnings(result)
    assert w.message.startswith("too few runs for a verdict (2 vs 2): 5 cells (")
    assert w.message.endswith("and 2 more)") and "repetitions" in w.remedy
    assert "5 cells (impl=c-fifo period=1000000 pin=vpin" in w.message  # named as the rows name them
    assert "board squarewave" not in w.message
    text = format_comparison(result, "table")
    assert text.count("too few runs") == 1
    note = comparison_note(result)
    assert "Holm" not in note and "0 tests" not in note and "No row could be tested" in note
    doc = comparison_json(result)
    assert [x["message"] for x in doc["warnings"]] == [w.message]


def test_json_is_format_3_with_the_four_verdicts_the_rule_that_decided_and_null_for_not_tested():
    doc = comparison_json(four_verdicts())
    assert doc["format"] == "jitterlab.compare/3"
    assert doc["family"] == ["max_rel_period_error", "p50_rel_period_error", "p99_rel_period_error",
                             "std_period_error"] and "however often you look" in doc["guarantee"]
    decided_by = {r["metric"]: r["decided_by"] for r in doc["rows"]}
    assert decided_by == {"max_rel_period_error": "sequential test",
                          "p99_rel_period_error": "sequential test", "p50_rel_period_error": "equivalence",
                          "std_period_error": None, "load_bogo_ops_per_s": None}
    assert {r["metric"] for r in doc["rows"] if not r["tested"]} == {"load_bogo_ops_per_s"}
    assert doc["verdicts"] == {"worse": 1, "better": 1, "undecided": 1, "same": 1} and doc["not_graded"] == 1
    assert {r["verdict"] for r in doc["rows"]} == {"worse", "better", "same", "undecided", None}
    assert doc["thresholds"] == {"timing": 0.2, "rate": 0.05, "loss": 0.5, "other": 0.1}
    assert {r["threshold"] for r in doc["rows"] if r["metric"].endswith("_error")} == {0.2}
    assert json.loads(json.dumps(doc)) == doc


def test_chart_draws_four_verdicts_four_ways_with_a_full_legend_and_readable_ticks():
    result = four_verdicts()
    fig = compare_figure(result)
    ax = fig.axes[0]
    markers = {}
    for line in ax.lines:
        if line.get_marker() not in ("None", "", None) and len(line.get_xdata()) == 1:
            markers[(line.get_color(), line.get_marker(), line.get_markerfacecolor())] = line
    assert len(markers) == 5  # four verdicts and the load reading, each its own look
    assert len({(c, m) for c, m, _ in (s[:3] for s in STYLES.values())}) == 4
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert any(t.startswith("undecided") for t in legend) and any(t.startswith("same") for t in legend)
    assert {"worse", "better", "not tested"} <= set(legend)
    ticks = [ax.xaxis.get_major_formatter()(v, 0) for v in ax.get_xticks()
             if ax.get_xlim()[0] <= v <= ax.get_xlim()[1]]
    assert len(ticks) >= 4 and "×1" in ticks and len(set(ticks)) == len(ticks)
    assert all(t.startswith("×") and "e" not in t for t in ticks)  # factors a person reads: ×0.5, ×2


def blind_groups():
    """Four cells, the candidate twice the baseline; in rep 1 of the named images the vpin probe did
    not observe every period, so that run's vpin maximum is only a lower bound (its self one is not)."""
    blind = {"c-fifo": "b", "python": "a", "bash": "ab", "c-mmap": ""}
    even = np.exp(np.linspace(-0.05, 0.05, 5))
    runs = []
    for impl, images in blind.items():
        for image, scale in (("a", 0.01), ("b", 0.02)):
            for i, v in enumerate(scale * even):
                unobserved = 3.0 if image in images and i == 1 else 0.0
                runs.append(run_record(squarewave_cell(impl, MS), id=f"{impl}-{image}-{i}", repetition=i,
                                       labels={"image": image}, started_ns=i, metrics=[
                    Metric("max_rel_period_error", v, "ratio", "vpin"),
                    Metric("p99_rel_period_error", v / 2, "ratio", "vpin"),
                    Metric("unobserved_periods", unobserved, "count", "vpin"),
                    Metric("max_rel_period_error", v, "ratio", "self")]))
    return runs


def test_a_maximum_that_is_only_a_lower_bound_makes_its_change_a_bound():
    runs = blind_groups()
    result = compare(runs, A, B)
    censored = censored_rows(result, runs)
    impl = {row.cell: row.cell[-1].split()[0].removeprefix("impl=") for row in result.rows}
    assert {(impl[c], probe, metric): mark for (c, probe, metric), mark in censored.items()} == {
        ("c-fifo", "vpin", "max_rel_period_error"): Censored(baseline=False, candidate=True),
        ("python", "vpin", "max_rel_period_error"): Censored(baseline=True, candidate=False),
        ("bash", "vpin", "max_rel_period_error"): Censored(baseline=True, candidate=True),
    }  # a percentile is no maximum, and the self probe saw every period


def test_the_chart_draws_a_bound_with_a_caret_toward_where_the_change_may_lie():
    runs = blind_groups()
    result = compare(runs, A, B)
    rows = charted_rows(result)
    fig = compare_figure(result, censored=censored_rows(result, runs))
    ax = fig.axes[0]

    def carets(gid: str) -> dict[int, tuple]:
        return {int(line.get_ydata()[0]): (line.get_marker(), line.get_xdata()[0])
                for line in ax.lines if line.get_gid() == gid}

    def rows_of(*impls: str) -> list[int]:
        """The chart's rows of these impls' vpin maxima."""
        return [i for i, r in enumerate(rows) if (r.probe, r.metric) == ("vpin", "max_rel_period_error")
                and any(f"impl={impl} " in r.cell[-1] for impl in impls)]

    lower, upper = carets("lower-bound"), carets("upper-bound")
    assert sorted(lower) == rows_of("c-fifo", "bash") and sorted(upper) == rows_of("python", "bash")
    # beside the point itself: to the right (the candidate's, ≥), to the left (the baseline's, ≤)
    assert all(m == CARET_RIGHT and x == rows[i].ratio for i, (m, x) in lower.items())
    assert all(m == CARET_LEFT and x == rows[i].ratio for i, (m, x) in upper.items())
    labels = [t.get_text() for t in ax.texts]
    [only_lower] = set(lower) - set(upper)
    [only_upper] = set(upper) - set(lower)
    [both] = set(lower) & set(upper)
    assert labels[only_lower] == " ≥ +100 %" and labels[only_upper] == " ≤ +100 %"
    assert labels[both] == " +100 % either way"
    others = [label for i, label in enumerate(labels) if i not in lower and i not in upper]
    assert len(others) == len(rows) - 3 and not any(m in s for s in others for m in ("≥", "≤", "either"))
    legend = [t.get_text() for t in fig.legends[0].get_texts() if t.get_text()]  # less the blank rows
    assert legend[-3:] == [LOWER_BOUND_TEXT, UPPER_BOUND_TEXT, EITHER_WAY_TEXT]  # "either way" said
    assert "lower bound (≥)" in LOWER_BOUND_TEXT and EITHER_WAY_TEXT.startswith("either way (both carets)")
    # nothing censored: the chart as before, no caret and no bound in the legend
    plain = compare_figure(result)
    assert not [line for line in plain.axes[0].lines if line.get_gid() in ("lower-bound", "upper-bound")]
    assert [t.get_text() for t in plain.legends[0].get_texts()] == legend[:-3]
    # one side only: no "either way" in the legend
    one_side = {k: m for k, m in censored_rows(result, runs).items() if not (m.baseline and m.candidate)}
    one_sided = [t.get_text() for t in compare_figure(result, censored=one_side).legends[0].get_texts()]
    assert EITHER_WAY_TEXT not in one_sided and LOWER_BOUND_TEXT in one_sided
    assert all("≥" not in t.get_text() and "≤" not in t.get_text() for t in plain.axes[0].texts)


def test_change_ticks_are_round_changes_around_no_change():
    assert change_ticks(0.8, 1.25) == [0.8, 0.9, 0.95, 1.0, 1.1, 1.25]
    assert change_ticks(0.45, 2.3) == [0.5, 0.8, 1.0, 1.25, 2.0]  # none closer than 1/9 of it
    wide = change_ticks(0.01, 100)
    assert 1.0 in wide and len(wide) <= 9 and wide[0] <= 0.05 and wide[-1] >= 20
    # the axis ran -99 % ... +9,900 %: now ×0.01 ... ×100, decades and their halves
    assert [factor(r) for r in wide] == ["×0.01", "×0.05", "×0.2", "×1", "×5", "×20", "×100"]
    assert [point_label(r) for r in (1.426, 16.25, 0.01, 0.6)] == [
        "+42.6 %", "+1,525 % (×16.2)", "-99 % (×0.01)", "-40 %"]
    assert [factor(r) for r in (1e-8, 5e-6, 0.001, 2000.0, 1e4, 2e5)] == [
        "×10⁻⁸", "×5·10⁻⁶", "×0.001", "×2,000", "×10⁴", "×2·10⁵"]  # far from 1: powers, never 9 zeros


@pytest.fixture
def store_root(tmp_path):
    store = Store(tmp_path / "st")
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    even = list(np.exp(np.linspace(-0.1, 0.1, 3)) * 0.01)
    for r in runs_of({"a": {"max_rel_period_error": even}, "b": {"max_rel_period_error": even[::-1]}}):
        store.commit_run(run_record(r.cell, id=r.id, campaign_id=cid, cell_key=r.id, repetition=r.repetition,
                                    labels=r.labels, started_ns=r.started_ns, metrics=r.metrics.values()))
    store.close()
    return str(tmp_path / "st")


def run_cli(argv):
    args = build_parser().parse_args(argv)
    return args.func(args)


def test_cli_fail_on_undecided_threshold_and_overlap(store_root, capsys):
    base = ["compare", "--results", store_root, "--baseline", "image=a", "--candidate", "image=b",
            "--no-pooled"]
    assert run_cli([*base, "--fail-on", "worse"]) == 0  # undecided is not worse
    assert run_cli([*base, "--fail-on", "undecided"]) == 1
    assert run_cli([*base, "--fail-on", "worse", "--fail-on", "undecided"]) == 1
    assert run_cli([*base, "--threshold", "timing=50%", "--fail-on", "undecided"]) == 0  # now same
    capsys.readouterr()
    assert main([*base, "--threshold", "speed=5%"]) == 2
    assert "--threshold 'speed=5%': no kind 'speed'" in capsys.readouterr().err
    # every run is in both groups: refused, naming them, exit 2
    assert main(["compare", "--results", store_root, "--baseline", "impl=c-fifo", "--candidate",
                 "image=b"]) == 2
    err = capsys.readouterr().err
    assert "share 3 runs (b-c-fifo-1000000-0, b-c-fifo-1000000-1, b-c-fifo-1000000-2)" in err


def test_groups_that_pool_a_label_say_so_and_print_the_command_that_compares_one(tmp_path, capsys):
    import shlex

    from jitterlab.report.layout import commands_in

    store = Store(tmp_path / "st")
    for image in ("A", "B"):
        cid = store.new_campaign("c", "fp", "c.toml", "", {"image": image})
        for impl, error in (("python", 0.02), ("c-mmap", 0.01)):
            for i in range(3):
                store.commit_run(run_record(
                    squarewave_cell(impl), id=f"{image}-{impl}-{i}", campaign_id=cid, cell_key=f"{impl}-{i}",
                    repetition=i, labels={"image": image}, started_ns=i,
                    metrics=[Metric("max_rel_period_error", error * (1 + i / 10), "ratio", "vpin")]))
    store.close()
    argv = ["compare", "--results", str(tmp_path / "st"), "--baseline", "impl=python", "--candidate",
            "impl=c-mmap", "--no-pooled"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    [note] = [line for line in out.splitlines() if line.startswith("note: ")]
    assert note.startswith("note: the runs compared take several values of image (baseline A, B; "
                           "candidate A, B), pooled in each group; compare one image: jitterlab compare")
    [again] = commands_in(note)
    assert again.endswith("--baseline impl=python --candidate impl=c-mmap --no-pooled --where image=A")
    assert main(shlex.split(again)[1:]) == 0  # runs as printed, on image=A alone: no note
    assert "note:" not in capsys.readouterr().out
    assert main([*argv, "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["mixed_labels"] == {"image": {"baseline": ["A", "B"],
                                                                             "candidate": ["A", "B"]}}
    assert main([*argv, "--where", "image=C"]) == 2
    err = capsys.readouterr().err
    assert "--where image=C: no run of these has it; the label image takes A, B here" in err


def test_a_load_that_differed_is_said_beside_each_verdict_of_its_cell_in_every_output():
    from jitterlab.report import verdicts

    even = list(np.exp(np.linspace(-0.02, 0.02, 4)))
    runs = runs_of({"a": {"max_rel_period_error": [0.01 * e for e in even], "load_loadavg_1m": even},
                    "b": {"max_rel_period_error": [0.02 * e for e in even],
                          "load_loadavg_1m": [3 * e for e in even]}})
    result = compare(runs, A, B)
    [row] = result.tested_rows
    assert (row.verdict, row.load_differs) == (WORSE, ("load_loadavg_1m",))
    _, [cells] = comparison_rows(result, [row])
    assert cells[11] == "worse (load differed)"
    doc = comparison_json(result)
    [tested] = [r for r in doc["rows"] if r["tested"]]
    assert tested["verdict"] == "worse" and tested["load_differs"] == ["load_loadavg_1m"]
    [load] = doc["load_differences"]
    assert (load["metric"], load["baseline"], load["candidate"]) == ("load_loadavg_1m", pytest.approx(1.0),
                                                                     pytest.approx(3.0))
    assert load["change_pct"] == pytest.approx(200.0) and doc["probes"] == []
    [warning] = [w for w in doc["warnings"] if "load" in w["message"]]
    moved = "load_loadavg_1m 100 % → 300 % (+200 %)"  # in the unit runs_of gives every metric
    assert warning["message"].startswith(f"the groups ran under different measured load ({moved}): a verdict "
                                         "there may be the load's as much as the groups'")
    summary = verdicts.lines(verdicts.verdicts(runs, A, B), "")
    said = f"; load differed: {moved}"
    assert any(line.startswith("  worse ") and line.endswith(said) for line in summary), summary
