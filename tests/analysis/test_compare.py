"""compare: verdicts on synthetic groups with known answers, thresholds, directions, the tested family,
tails compared as tails, intervals that respect what a metric is, overlapping groups, bad input."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats as sps

from jitterlab.analysis import sequential
from jitterlab.analysis.compare import (
    BETTER,
    NOT_GRADED,
    SAME,
    UNDECIDED,
    WORSE,
    Selector,
    label_pairs,
)
from jitterlab.analysis.compare import compare as compare_with
from jitterlab.analysis.direction import direction
from jitterlab.analysis.stats import holm
from jitterlab.analysis.thresholds import DEFAULT_THRESHOLDS, kind, parse_thresholds, within
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric, RunRecord
from jitterlab.model.traits import BenchmarkTraits


def own_view(benchmark: str) -> BenchmarkTraits:
    """No headline declared (every graded metric is watched); a run's own view is its cell's probe."""
    return BenchmarkTraits(subject="probe")


def compare(runs, baseline, candidate, **kwargs):
    """compare() as these tests read squarewave runs: their own figures are their probe's."""
    return compare_with(runs, baseline, candidate, **{"traits": own_view, **kwargs})


def run(i: int, image: str, values: dict[str, float], impl: str = "c-fifo",
        status: str = "ok") -> RunRecord:
    metrics = {("vpin", k): Metric(k, v, "ratio", "vpin") for k, v in values.items()}
    return run_record(squarewave_cell(impl), id=f"{image}-{impl}-{i}", cell_key="k", repetition=i,
                      labels={"image": image}, status=status, started_ns=i,
                      metrics=metrics.values() if status == "ok" else ())


def groups(err_a, err_b, ops_a, ops_b, n=8, rate="events_per_s"):
    return ([run(i, "1.10", {"max_rel_period_error": e, rate: o})
             for i, (e, o) in enumerate(zip(err_a, ops_a, strict=False))]
            + [run(i, "1.11", {"max_rel_period_error": e, rate: o})
               for i, (e, o) in enumerate(zip(err_b, ops_b, strict=False))])


A, B = Selector("image", "1.10"), Selector("image", "1.11")


def spread(n: int, centre: float = 0.01, width: float = 0.3) -> np.ndarray:
    """n values log-evenly spread over centre * exp(-width .. +width): a group with known shape."""
    return centre * np.exp(np.linspace(-width, width, n))


def rows_by_metric(result):
    return {r.metric: r for r in result.rows}


def test_large_difference_is_called_in_the_right_direction():
    rng = np.random.default_rng(1)
    # candidate: error twice as large (worse), throughput 25 % higher (better)
    runs = groups(0.01 + rng.normal(0, 1e-4, 8), 0.02 + rng.normal(0, 1e-4, 8),
                  1000 + rng.normal(0, 5, 8), 1250 + rng.normal(0, 5, 8))
    result = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"))
    rows = rows_by_metric(result)
    err, ops = rows["max_rel_period_error"], rows["events_per_s"]
    assert err.verdict == WORSE and ops.verdict == BETTER
    assert err.ratio == pytest.approx(2.0, rel=0.02) and err.change_pct == pytest.approx(100, abs=2)
    assert ops.change_pct == pytest.approx(25, abs=1)
    assert err.ci_low > 1 and ops.ci_low > 1
    # Welch's t on log values at every group size, as scipy computes it; the sequential p of this
    # look at 8 runs per group (analysis.sequential), then Holm over the two tested rows
    a, b = (np.log([r.metrics[("vpin", "max_rel_period_error")].value for r in runs
                    if r.labels["image"] == image]) for image in ("1.10", "1.11"))
    welch = sps.ttest_ind(b, a, equal_var=False)
    assert err.p_value == pytest.approx(welch.pvalue)
    z = float(sequential.z_of_t(welch.statistic, welch.df))
    assert err.p_sequential == pytest.approx(sequential.sequential_p(z, 8.0))
    assert err.p_sequential > err.p_value
    assert [err.p_adjusted, ops.p_adjusted] == pytest.approx(holm([err.p_sequential, ops.p_sequential]))
    assert err.decided_by == "sequential test" and result.notes == []
    # the reverse comparison flips both verdicts
    back = rows_by_metric(compare(runs, Selector("image", "1.11"), Selector("image", "1.10")))
    assert back["max_rel_period_error"].verdict == BETTER
    assert back["events_per_s"].verdict == WORSE


def test_identical_groups_are_same_at_large_n_and_undecided_at_small_n():
    # the same log-even spread of +-30 % in both groups: at 3 runs the 95 % CI of the ratio is far
    # wider than the 20 % timing threshold (undecided), at 40 runs it lies inside it (same)
    small = compare(groups(spread(3), spread(3), [1.0] * 3, [1.0] * 3), A, B,
                    metrics=["max_rel_period_error"]).rows[0]
    assert small.verdict == UNDECIDED and small.ratio == pytest.approx(1.0)
    assert small.p_value == pytest.approx(1.0)
    assert small.ci_low < 1 / 1.2 and small.ci_high > 1.2
    large = compare(groups(spread(40), spread(40), [1.0] * 40, [1.0] * 40), A, B,
                    metrics=["max_rel_period_error"]).rows[0]
    assert large.test == "welch-t on log values" and large.verdict == SAME
    assert large.decided_by == "equivalence" and large.threshold == 0.2
    assert 1 / 1.2 <= large.ci_low <= 1 <= large.ci_high <= 1.2
    # exactly equal values: no change at all, and no interval to show: same even at 3 runs
    row = rows_by_metric(compare(groups([0.01] * 3, [0.01] * 3, [1.0] * 3, [1.0] * 3), A, B))[
        "max_rel_period_error"]
    assert (row.p_value, row.ratio, row.verdict, row.decided_by) == (1.0, 1.0, SAME, "resolution")
    assert np.isnan(row.ci_low) and np.isnan(row.ci_high) and row.test == "none: within resolution"


def test_twice_the_error_at_three_runs_is_worse():
    row = compare(groups(spread(3, width=0.1), 2 * spread(3, width=0.1), [1.0] * 3, [1.0] * 3), A, B,
                  metrics=["max_rel_period_error"]).rows[0]
    # the repeated interval (95 % however often one looks) is wider than a single look's
    assert row.verdict == WORSE and row.ratio == pytest.approx(2.0) and row.ci_low > 1.3


def test_the_threshold_decides_same_and_is_settable():
    runs = groups(spread(40), spread(40), [1.0] * 40, [1.0] * 40)
    tight = parse_thresholds(["timing=1%"])
    row = compare(runs, A, B, metrics=["max_rel_period_error"], thresholds=tight).rows[0]
    assert row.verdict == UNDECIDED and row.threshold == 0.01  # the interval is wider than +-1 %
    assert parse_thresholds(["10%"]) == dict.fromkeys(DEFAULT_THRESHOLDS, 0.1)
    assert parse_thresholds(["rate=2", "timing=15 %"]) == {**DEFAULT_THRESHOLDS, "rate": 0.02, "timing": 0.15}
    for bad in ("speed=5%", "0", "100%", "x", "-5"):
        with pytest.raises(UserError, match=r"--threshold"):
            parse_thresholds([bad])
    # a band symmetric on the ratio's log scale: +20 % and its inverse, -16.7 %
    assert within(1 / 1.2, 1.2, 0.2) and not within(0.8, 1.1, 0.2) and not within(float("nan"), 1, 0.2)
    assert [kind(m) for m in ("max_rel_period_error", "latency_p99_ns", "events_per_s",
                              "excluded_periods", "blind_time_ns", "n_periods")] == [
        "timing", "timing", "rate", "loss", "loss", "other"]


def test_load_readings_and_descriptive_numbers_are_never_graded():
    # the candidate's load ran twice as hard and its mean period moved: shown, not graded, and
    # not in Holm's family
    runs = ([run(i, "1.10", {"load_bogo_ops_per_s": 1000.0 + i, "load_cpu_busy_fraction": 0.5 + i / 100,
                             "load_loadavg_1m": 1.0 + i / 10, "mean_period_ns": 1e6 + i,
                             "max_rel_period_error": 0.01 * (1 + i / 1000)}) for i in range(8)]
            + [run(i, "1.11", {"load_bogo_ops_per_s": 2000.0 + i, "load_cpu_busy_fraction": 0.99 - i / 100,
                               "load_loadavg_1m": 3.0 + i / 10, "mean_period_ns": 2e6 + i,
                               "max_rel_period_error": 0.01 * (1 + i / 1000)}) for i in range(8)])
    result = compare(runs, A, B)
    rows = rows_by_metric(result)
    for name in ("load_bogo_ops_per_s", "load_cpu_busy_fraction", "load_loadavg_1m", "mean_period_ns"):
        assert rows[name].verdict == NOT_GRADED and not rows[name].tested, name
        assert rows[name].ratio > 1  # still shown, with its change
    assert rows["max_rel_period_error"].verdict == SAME
    assert result.n_tests == 1 and result.n_not_graded == 4
    assert result.counts() == {WORSE: 0, BETTER: 0, UNDECIDED: 0, SAME: 1}


def test_values_shown_are_the_statistic_whose_ratio_is_the_change():
    # worst runs 0.5 -> 0.4 would read as better; the geometric means (and the change) got worse
    runs = groups([0.1, 0.1, 0.5], [0.3, 0.3, 0.4], [1.0] * 3, [1.0] * 3)
    row = compare(runs, A, B, metrics=["max_rel_period_error"]).rows[0]
    gm_a, gm_b = (0.1 * 0.1 * 0.5) ** (1 / 3), (0.3 * 0.3 * 0.4) ** (1 / 3)
    # a maximum is compared as the runs' maxima (their geometric mean), and the row says so
    assert row.rule == "geometric mean of run maxima"
    assert (row.baseline, row.candidate) == (pytest.approx(gm_a), pytest.approx(gm_b))
    assert row.ratio == pytest.approx(row.candidate / row.baseline)


def test_overlapping_groups_are_refused_naming_the_shared_runs():
    runs = ([run(i, "1.10", {"max_rel_period_error": 0.01}, impl="c-fifo") for i in range(5)]
            + [run(i, "1.11", {"max_rel_period_error": 0.01}, impl="c-fifo") for i in range(3)]
            + [run(i, "1.11", {"max_rel_period_error": 0.01}, impl="bash") for i in range(3)])
    # every image=1.11 c-fifo run is in both groups
    with pytest.raises(UserError) as info:
        compare(runs, Selector("impl", "c-fifo"), B)
    message = str(info.value)
    assert "\n" not in message and "share 3 runs" in message
    assert "1.11-c-fifo-0, 1.11-c-fifo-1, 1.11-c-fifo-2" in message
    assert "--baseline impl=c-fifo" in message and "--candidate image=1.11" in message
    many = runs + [run(i, "1.11", {"max_rel_period_error": 0.01}, impl="c-fifo") for i in range(3, 9)]
    with pytest.raises(UserError, match=r"share 9 runs \(1.11-c-fifo-0, 1.11-c-fifo-1, "
                                        r"1.11-c-fifo-2 and 6 more\)"):
        compare(many, Selector("impl", "c-fifo"), B)


def test_directions():
    assert direction("max_rel_period_error") == "lower"
    assert direction("p999_rel_period_error") == "lower"
    assert direction("std_period_ns") == "lower"
    assert direction("excluded_periods") == "lower"
    assert direction("missed_edges") == "lower"
    assert direction("blind_time_ns") == "lower"
    assert direction("load_bogo_ops_per_s") == "higher"
    assert direction("n_periods") == "none"
    assert direction("drift_ppm") == "none"
    assert direction("something_new") == "lower"  # the documented default


def test_few_runs_warn_and_never_significant():
    runs = groups([0.01, 0.011], [0.5, 0.51], [1, 1], [2, 2])
    result = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"))
    assert {r.verdict for r in result.rows} == {UNDECIDED} and result.n_tests == 0
    assert all(np.isnan(r.ci_low) for r in result.rows)  # no interval before a test
    [(scope, where, w)] = result.notes
    assert (scope, where) == ("cell", "board squarewave idle impl=c-fifo period=1000000 pin=vpin probe=vpin")
    assert w.message == "too few runs for a verdict (2 vs 2)" and "repetitions" in w.remedy


def test_three_runs_a_complete_separation_with_a_large_effect_is_worse():
    # the captures: worst period error 0.137 vs 0.412, spread under 1 %, 3 runs each;
    # a rank test on 3 vs 3 can never go below p = 0.1, Welch's t on log values can
    runs = groups([0.137, 0.1372, 0.1368], [0.412, 0.4135, 0.4108], [1000.0] * 3, [1000.0] * 3)
    result = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["max_rel_period_error"])
    [row] = result.rows
    assert row.verdict == WORSE and row.test == "welch-t on log values"
    assert row.effect == "ratio of geometric means" and row.ratio == pytest.approx(0.412 / 0.137, rel=0.01)
    assert 2.9 < row.ci_low < row.ratio < row.ci_high < 3.1 and row.p_value < 1e-5
    assert row.rule == "geometric mean of run maxima"
    assert row.ratio == pytest.approx(row.candidate / row.baseline)
    assert result.notes == []


def test_identical_groups_of_three_with_a_tiny_spread_are_same():
    runs = groups([0.137, 0.1372, 0.1368], [0.1372, 0.1368, 0.137], [1.0] * 3, [1.0] * 3)
    rows = rows_by_metric(compare(runs, Selector("image", "1.10"), Selector("image", "1.11")))
    row = rows["max_rel_period_error"]
    assert row.verdict == SAME and row.p_value == pytest.approx(1.0) and row.ratio == pytest.approx(1.0)
    assert row.decided_by == "equivalence"  # its repeated 90 % interval lies inside +-20 %
    assert (rows["events_per_s"].verdict, rows["events_per_s"].decided_by) == (SAME, "resolution")


def test_false_verdicts_on_identical_groups_stay_at_the_declared_level_however_often_one_looks():
    """2,000 pairs of identical log-normal groups (30 % spread), looked at after every run from 3 to
    13 runs per group: the sequential verdict ends on a false better/worse in at most 5 % of them
    (the design spends 4.5 % by 13 runs), where testing every look at 5 % would in about 15 %."""
    from jitterlab.analysis.verdict import verdicts_of_runs

    rng = np.random.default_rng(7)
    a, b = (0.01 * np.exp(rng.normal(0, 0.3, (2000, 13))) for _ in range(2))
    false_any = np.zeros(2000, dtype=bool)
    naive_any = np.zeros(2000, dtype=bool)
    for n in range(3, 14):
        false_any |= np.isin(verdicts_of_runs(a[:, :n], b[:, :n], "p99_rel_period_error", "ratio"),
                             (BETTER, WORSE))
        naive_any |= sps.ttest_ind(np.log(a[:, :n]), np.log(b[:, :n]), axis=1, equal_var=False).pvalue < 0.05
    assert false_any.sum() == pytest.approx(90, abs=25)  # 4.5 % of 2,000, binomial 99 % range
    assert naive_any.mean() > 0.12


def test_the_fast_verdicts_of_the_bench_are_compares_verdicts():
    from jitterlab.analysis.verdict import verdicts_of_runs

    rng = np.random.default_rng(3)
    for n in (3, 5, 13):
        for factor in (1.0, 1.3, 2.0):
            a = 0.05 * np.exp(rng.normal(0, 0.3, (25, n)))
            b = 0.05 * factor * np.exp(rng.normal(0, 0.3, (25, n)))
            fast = verdicts_of_runs(a, b, "p99_rel_period_error", "ratio")
            slow = []
            for x, y in zip(a, b, strict=True):
                runs = [run(i, img, {"p99_rel_period_error": v}) for img, vs in (("1.10", x), ("1.11", y))
                        for i, v in enumerate(vs)]
                slow.append(compare(runs, A, B, metrics=["p99_rel_period_error"]).rows[0].verdict)
            assert list(fast) == slow, (n, factor)


def test_holm_keeps_the_chance_of_any_false_verdict_per_comparison_at_alpha():
    # 17 identical metrics per comparison (what compare shows by default): without an adjustment
    # about 1 - 0.95^17 = 58 % of comparisons would show a spurious better/worse
    rng = np.random.default_rng(11)
    names = [f"metric_{i}_error" for i in range(17)]
    spurious = 0
    for _ in range(150):
        runs = []
        for image in ("1.10", "1.11"):
            for i in range(3):
                values = {n: float(np.exp(rng.normal(-4, 0.3))) for n in names}
                runs.append(run(i, image, values))
        result = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"))
        assert result.n_tests == 17 and len(result.family) == 17
        spurious += any(r.verdict in (BETTER, WORSE) for r in result.rows)
    assert spurious <= 15  # 5 % of 150 is 7.5; binomial 99.9 % bound about 17


def test_holm_adjustment():
    assert holm([0.01, 0.04, 0.03, float("nan")])[:3] == pytest.approx([0.03, 0.06, 0.06])
    assert np.isnan(holm([0.01, float("nan")])[1])


def test_failed_runs_are_left_out():
    runs = groups([0.01] * 4, [0.01] * 4, [1.0] * 4, [1.0] * 4)
    runs.append(run(9, "1.11", {}, status="failed"))
    [row] = [r for r in compare(runs, Selector("image", "1.10"), Selector("image", "1.11")).rows
             if r.metric == "max_rel_period_error"]
    assert row.n_candidate == 4


def test_bad_input():
    runs = groups([0.01] * 3, [0.02] * 3, [1.0] * 3, [1.0] * 3)
    with pytest.raises(UserError, match=r"--metric nope: .*they have: events_per_s, "
                                        r"max_rel_period_error$"):
        compare(runs, Selector("image", "1.10"), Selector("image", "1.11"), metrics=["nope"])
    with pytest.raises(UserError, match=r"--candidate image=2.0: .*image=1.10, image=1.11"):
        compare(runs, Selector("image", "1.10"), Selector("image", "2.0"))
    other_impl = [run(i, "1.12", {"max_rel_period_error": 0.1}, impl="bash") for i in range(3)]
    with pytest.raises(UserError, match="no cell in common"):
        compare(runs + other_impl, Selector("image", "1.10"), Selector("image", "1.12"))
    with pytest.raises(UserError, match="KEY=VALUE"):
        Selector.parse("image", "--baseline")


def test_select_on_a_run_field_and_label_pairs():
    runs = ([run(i, "1.10", {"max_rel_period_error": 0.01}, impl="c-fifo") for i in range(3)]
            + [run(i, "1.10", {"max_rel_period_error": 0.5}, impl="bash") for i in range(3)])
    result = compare(runs, Selector("impl", "c-fifo"), Selector("impl", "bash"))
    assert "impl" not in result.cell_fields and result.rows[0].ratio == pytest.approx(50)
    more = runs + [run(i, "1.9", {"max_rel_period_error": 0.01}) for i in range(3)]
    assert [(str(a), str(b)) for a, b in label_pairs(more)] == [("image=1.9", "image=1.10")]


def test_cells_are_named_by_the_naming_given():
    """compare names no benchmark itself: with the registered ones (campaign.cells.names) a period
    is selected as written (1ms) and defaults leave the cell's name; without, values as stored."""
    from jitterlab.campaign.cells import names

    runs = ([run(i, "1.10", {"max_rel_period_error": 0.01}) for i in range(3)]
            + [run(i, "1.11", {"max_rel_period_error": 0.02}) for i in range(3)])
    assert Selector("period", "1ms").matches(runs[0], names())
    assert not Selector("period", "1ms").matches(runs[0])
    assert Selector("period", "1000000").matches(runs[0])
    named = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"), names=names())
    plain = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"))
    assert named.rows[0].cell[-1] == "impl=c-fifo period=1ms"
    assert plain.rows[0].cell[-1] == "impl=c-fifo period=1000000 pin=vpin probe=vpin"  # by name
    with pytest.raises(UserError, match="period takes: 1ms"):
        compare(runs, Selector("image", "1.10"), Selector("period", "2ms"), names=names())


def test_analysis_loads_no_plug_in():
    """Comparing and trending stored runs imports the model, not the targets, benchmarks or probes
    (campaign.cells looks the benchmarks up when a cell is first named)."""
    import subprocess
    import sys

    code = ("import sys, jitterlab.analysis.compare, jitterlab.analysis.trend, jitterlab.campaign.cells; "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('jitterlab'))))")
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                            check=True).stdout.split()
    assert "jitterlab.analysis.compare" in loaded
    heavy = ("jitterlab.measure", "jitterlab.targets", "jitterlab.plugins", "jitterlab.store",
             "jitterlab.system")
    assert not [m for m in loaded if m.startswith(heavy)], loaded


def test_a_metric_the_first_run_of_each_group_lacks_is_still_compared():
    # a bound only a run with blind spans has: the first run of both groups lacks it
    bound = "max_rel_period_error_upper_bound"
    runs = [run(i, image, {"max_rel_period_error": 0.01, **({bound: 0.02 * (1 + k)} if i else {})})
            for k, image in enumerate(("1.10", "1.11")) for i in range(4)]
    result = compare(runs, A, B, metrics=[bound], seed=1)
    [row] = [r for r in result.rows if r.metric == bound]
    assert row.unit == "ratio" and row.n_baseline == 3 and row.n_candidate == 3


def test_a_label_a_run_lacks_is_left_out_of_its_name_not_shown_empty():
    from jitterlab.campaign.cells import labels_text

    imported = run(0, "1.10", {})
    imported.labels.pop("image")
    imported.labels["board"] = "b"
    assert labels_text(run(1, "1.10", {}), ["image", "board"]) == "image=1.10"
    assert labels_text(imported, ["image", "board"]) == "board=b"
    assert labels_text(imported, ["image"]) == ""


def test_the_view_the_campaign_chose_is_tested_and_another_only_on_request():
    """A cell that chose probe vpin also stores the program's own timestamps (self): another view of
    the same runs, shown and not tested, so it does not double Holm's family and widen nothing."""
    def views(i: int, image: str, err: float) -> RunRecord:
        metrics = [Metric("max_rel_period_error", err * (1 + i / 100), "ratio", probe)
                   for probe in ("vpin", "self")]
        return run_record(squarewave_cell("c-fifo"), id=f"{image}-{i}", repetition=i, labels={"image": image},
                          metrics=metrics)

    runs = [views(i, "1.10", 0.01) for i in range(3)] + [views(i, "1.11", 0.02) for i in range(3)]
    chosen = compare(runs, A, B)
    vpin, self_ = (next(r for r in chosen.rows if r.probe == p) for p in ("vpin", "self"))
    assert (vpin.tested, vpin.verdict) == (True, WORSE)
    assert (self_.tested, self_.verdict) == (False, NOT_GRADED)
    assert chosen.n_tests == 1 and vpin.p_adjusted == pytest.approx(vpin.p_sequential)  # Holm over 1 row
    both = compare(runs, A, B, probes=["self"])
    assert both.n_tests == 2 and both.probes == ("self",)
    row = next(r for r in both.rows if r.probe == "vpin")
    assert row.p_adjusted == pytest.approx(min(1.0, 2 * row.p_sequential))  # the family doubled
    with pytest.raises(UserError, match=r"^--probe nope: no metric of these runs was seen by it; their "
                                        r"probes: self, vpin$"):
        compare(runs, A, B, probes=["nope"])
    # a benchmark without a probe key: its own figures ("") are tested, a per-thread view is not
    from jitterlab.model.fakes import cell

    def threads(i: int, image: str, v: float) -> RunRecord:
        return run_record(cell("cyclictest"), id=f"c{image}-{i}", repetition=i, labels={"image": image},
                          metrics=[Metric("latency_max_ns", v + i, "ns", p) for p in ("", "thread0")])

    both_images = (("1.10", 100.0), ("1.11", 200.0))
    latency = compare([threads(i, image, v) for image, v in both_images for i in range(3)], A, B)
    assert {(r.probe, r.tested) for r in latency.rows} == {("", True), ("thread0", False)}


def test_groups_that_ran_under_different_measured_load_are_marked_beside_their_verdicts():
    """A load reading differs when the comparison would call its change one: shown by the sequential
    test and beyond its kind's threshold (loadavg: other, 10 %); every row of that cell says so."""
    from jitterlab.analysis.load_difference import load_differences

    def cell_runs(image: str, err: float, loadavg: list[float]) -> list[RunRecord]:
        return [run(i, image, {"max_rel_period_error": err * (1 + i / 100), "load_loadavg_1m": v})
                for i, v in enumerate(loadavg)]

    doubled = cell_runs("1.10", 0.01, [1.0, 1.01, 0.99]) + cell_runs("1.11", 0.02, [2.0, 2.02, 1.98])
    result = compare(doubled, A, B, metrics=["max_rel_period_error"])  # the readings are read anyway
    [(cell, [d])] = result.loads.items()
    assert d.metric == "load_loadavg_1m"
    assert (d.baseline, d.candidate) == (pytest.approx((1.0 * 1.01 * 0.99) ** (1 / 3)),
                                         pytest.approx((2.0 * 2.02 * 1.98) ** (1 / 3)))
    assert d.change == pytest.approx(1.0) and d.p_sequential < sequential.ALPHA
    [row] = result.rows
    assert row.cell == cell and row.load_differs == ("load_loadavg_1m",) and row.verdict == WORSE
    a, b = doubled[:3], doubled[3:]
    thresholds = dict(DEFAULT_THRESHOLDS)
    # +5 %, steady: shown by the test, but within the 10 % that counts as the same load
    steady = cell_runs("1.11", 0.02, [1.05, 1.0605, 1.0395])
    assert load_differences(a, steady, thresholds) == []
    assert load_differences(a, steady, {**thresholds, "other": 0.01})[0].change == pytest.approx(0.05)
    # twice as high on average, but so spread that no change is shown
    spread_out = cell_runs("1.11", 0.02, [0.5, 4.0, 1.5])
    assert load_differences(a, spread_out, thresholds) == []
    # two runs a group: nothing can be shown, as for a verdict
    assert load_differences(a[:2], b[:2], thresholds) == []
    # the same loads: nothing marked
    same = compare(a + cell_runs("1.11", 0.02, [1.01, 0.99, 1.0]), A, B)
    assert same.loads == {} and all(r.load_differs == () for r in same.rows)


def test_unequal_groups_compare_worst_cases_per_run_and_say_so():
    """3 runs against 13: the worst of 13 runs exceeds the worst of 3 by sampling alone, so the
    maxima are compared per run (their geometric mean), and the comparison says the groups are unequal."""
    base = [0.010, 0.012, 0.011]
    cand = [0.010, 0.012, 0.011, 0.0105, 0.0115, 0.0108, 0.0112, 0.0101, 0.0119, 0.0111, 0.0109, 0.0103, 0.03]
    runs = groups(base, cand, [1.0] * 3, [1.0] * 13)
    result = compare(runs, A, B, metrics=["max_rel_period_error"])
    [row] = result.rows
    assert row.rule == "geometric mean of run maxima" and row.runs == "3 vs 13"
    assert row.baseline == pytest.approx(float(np.exp(np.log(base).mean())))
    assert row.candidate == pytest.approx(float(np.exp(np.log(cand).mean())))  # not 0.03, the worst run
    [(scope, _, note)] = result.notes
    assert scope == "cell" and note.message == (
        "unequal groups (3 vs 13 runs): a worst case is compared per run (the runs' maxima), never as each "
        "group's worst run, which grows with its number of runs by sampling alone")
    assert "--until-decided" in note.remedy
    # equal groups, or no worst case among the tested rows: nothing to say
    assert compare(groups(base, cand[:3], [1.0] * 3, [1.0] * 3), A, B).notes == []
    assert compare(runs, A, B, metrics=["events_per_s"]).notes == []
