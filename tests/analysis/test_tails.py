"""Tails compared as tails, intervals that respect what a metric is, and the tested family: compare
on synthetic groups with known answers."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.compare import NOT_TESTED, SAME, UNDECIDED, WORSE, Selector, compare
from jitterlab.analysis.stats import needed_samples
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.reading import P99, P999, P9999, QUANTILE_OF
from jitterlab.model.records import Metric
from jitterlab.model.traits import PERIOD_ERRORS, BenchmarkTraits

A, B = Selector("image", "a"), Selector("image", "b")
N_PERIODS = 20_000


def periods(rng, body: float, tail_share: float, tail: float) -> np.ndarray:
    """|period errors| of one run: a log-normal body around `body`, and a share of periods whose
    error is `tail` times larger."""
    e = body * rng.lognormal(0.0, 0.3, N_PERIODS)
    hit = rng.random(N_PERIODS) < tail_share
    e[hit] *= tail
    return e


def runs_with_samples(seed: int, base: tuple[float, float, float], cand: tuple[float, float, float],
                      n: int = 5):
    """n runs per image with their metrics computed from their own periods, and the samples."""
    rng = np.random.default_rng(seed)
    runs, samples = [], {}
    for image, shape in (("a", base), ("b", cand)):
        for i in range(n):
            e = periods(rng, *shape) * np.exp(rng.normal(0, 0.05))  # a little run-to-run spread
            metrics = [Metric("p50_rel_period_error", float(np.quantile(e, 0.5)), "ratio", "vpin"),
                       Metric("p999_rel_period_error", float(np.quantile(e, 0.999)), "ratio", "vpin"),
                       Metric("max_rel_period_error", float(e.max()), "ratio", "vpin")]
            r = run_record(squarewave_cell(), id=f"{image}{i}", repetition=i, labels={"image": image},
                           metrics=metrics)
            samples[r.id] = {"vpin": np.unique(np.round(e, 9), return_counts=True)}
            runs.append(r)
    return runs, samples


def squarewave(benchmark: str) -> BenchmarkTraits:
    return BenchmarkTraits(("p50_rel_period_error", "p999_rel_period_error", "max_rel_period_error"),
                           period_ns=lambda cell: WaveCell.of_cell(cell).period_ns, samples=PERIOD_ERRORS,
                           subject="probe")


def judged(runs, samples, **kwargs):
    return {r.metric: r for r in compare(runs, A, B, traits=squarewave, distributions=lambda r: samples[r.id],
                                         **kwargs).rows}


def test_a_tail_that_grew_while_the_median_did_not_is_worse_in_the_tail_only():
    # 1 % of the candidate's periods are 10x late: p99.9 moves, the median does not
    runs, samples = runs_with_samples(1, (0.001, 0.0, 1.0), (0.001, 0.01, 10.0))
    rows = judged(runs, samples)
    tail, body = rows["p999_rel_period_error"], rows["p50_rel_period_error"]
    assert tail.view == "pooled" and tail.rule == "pooled p99.9" and tail.test == "hierarchical bootstrap"
    assert (tail.samples_baseline, tail.samples_candidate) == (5 * N_PERIODS, 5 * N_PERIODS)
    every = np.concatenate([samples[f"a{i}"]["vpin"][0].repeat(samples[f"a{i}"]["vpin"][1])
                            for i in range(5)])
    assert tail.baseline == pytest.approx(np.quantile(every, 0.999, method="inverted_cdf"))
    assert tail.verdict == WORSE and tail.ratio > 3
    assert body.view == "per-run" and body.verdict in (SAME, UNDECIDED) and 0.9 < body.ratio < 1.1
    # the maximum: the runs' maxima, one per run, and the row says so
    assert rows["max_rel_period_error"].rule == "geometric mean of run maxima"


def test_a_median_that_moved_under_an_unchanged_tail_is_worse_in_the_median_only():
    # the candidate's body is 50 % later; its worst 1 % (the tail) is where the baseline's was
    runs, samples = runs_with_samples(2, (0.001, 0.01, 20.0), (0.0015, 0.01, 20.0 / 1.5))
    rows = judged(runs, samples)
    assert rows["p50_rel_period_error"].verdict == WORSE
    tail = rows["p999_rel_period_error"]
    assert tail.view == "pooled" and tail.verdict != WORSE and 0.8 < tail.ratio < 1.25


def test_a_tail_with_too_few_samples_is_compared_per_run_and_says_why():
    runs, samples = runs_with_samples(3, (0.001, 0.0, 1.0), (0.001, 0.0, 1.0), n=3)
    short = {k: {"vpin": (v["vpin"][0][:1000], np.ones(1000, dtype=np.int64))} for k, v in samples.items()}
    row = judged(runs, short)["p999_rel_period_error"]
    assert row.view == "per-run" and row.rule == "geometric mean of run p99.9s"
    assert row.note == "per run: a pooled p99.9 needs 10,000 samples per group, the smaller has 3,000"
    # without samples at all (--no-pooled, summary without raw series): per run, and the row says so
    plain = {r.metric: r for r in compare(runs, A, B, traits=squarewave).rows}
    assert plain["p999_rel_period_error"].view == "per-run"
    assert plain["p999_rel_period_error"].note == "per run: the runs' samples were not read"
    assert plain["p50_rel_period_error"].note == ""  # no tail: nothing to say


@pytest.mark.parametrize(("name", "stat", "need"), [("p99_rel_period_error", P99, 1_000),
                                                    ("p999_rel_period_error", P999, 10_000),
                                                    ("p9999_rel_period_error", P9999, 100_000)])
def test_a_tail_is_pooled_from_exactly_the_count_the_docs_give(name, stat, need):
    # 10 / (1 - q) samples per group, counted exactly: the smaller group at that count pools, one
    # sample fewer compares the runs' own values and names the count it lacks
    assert needed_samples(QUANTILE_OF[stat]) == need
    values = np.linspace(0.001, 0.002, 50)
    for have, view in ((need, "pooled"), (need - 1, "per-run")):
        runs, samples = [], {}
        for image, total in (("a", have), ("b", have + 7)):
            for i in range(3):
                counts = np.full(50, total // 150, dtype=np.int64)
                counts[-1] += total // 3 - counts.sum() + (total % 3 if i == 2 else 0)
                r = run_record(squarewave_cell(), id=f"{image}{i}", repetition=i, labels={"image": image},
                               metrics=[Metric(name, 0.002 * (1 + i / 100), "ratio", "vpin")])
                samples[r.id] = {"vpin": (values, counts)}
                runs.append(r)
        assert sum(int(samples[f"a{i}"]["vpin"][1].sum()) for i in range(3)) == have
        [row] = compare(runs, A, B, traits=squarewave, distributions=lambda r, s=samples: s[r.id],
                        n_bootstrap=50).rows
        assert row.view == view
        if view == "pooled":
            assert (row.samples_baseline, row.note) == (have, "")
        else:
            assert row.note == (f"per run: a pooled {stat} needs {need:,} samples per group, the smaller "
                                f"has {have:,}")


def own_view(benchmark: str) -> BenchmarkTraits:
    """No headline declared (every graded metric is watched); a run's own view is its cell's probe."""
    return BenchmarkTraits(subject="probe")


def run(i, image, name, value, unit, **declared):
    return run_record(squarewave_cell(), id=f"{image}{i}", repetition=i, labels={"image": image},
                      metrics=[Metric(name, value, unit, "vpin", **declared)])


def test_a_count_cannot_fall_below_zero_and_a_signed_metric_is_a_difference():
    # the unobserved_edges 24 -> 3.333, once read as -86.1 % [-285 % - +113 %]
    runs = ([run(i, "a", "unobserved_edges", v, "count") for i, v in enumerate((24.0, 23.0, 25.0))]
            + [run(i, "b", "unobserved_edges", v, "count") for i, v in enumerate((0.0, 10.0, 0.0))])
    [row] = compare(runs, A, B, traits=own_view).rows
    assert row.scale == "count" and row.effect == "difference of means"
    assert row.difference == pytest.approx(10 / 3 - 24) and row.ratio == pytest.approx((10 / 3) / 24)
    assert row.ci_low >= 0 and row.diff_low >= -24  # never below -100 %
    # max_early -11.1 % -> -9.38 %: two negative means have no ratio, their difference is +1.72 points
    early = ([run(i, "a", "max_early", v, "ratio") for i, v in enumerate((-0.111, -0.110, -0.112))]
             + [run(i, "b", "max_early", v, "ratio") for i, v in enumerate((-0.0938, -0.0937, -0.0939))])
    [row] = compare(early, A, B, traits=own_view).rows
    assert row.scale == "signed" and np.isnan(row.ratio) and np.isnan(row.ci_low)
    assert row.difference == pytest.approx(0.0172, abs=1e-4) and row.diff_low < row.difference < row.diff_high
    assert row.verdict == WORSE  # lower is better, and the earliest edge came later: its error grew


def test_a_spread_below_the_resolution_is_no_change():
    # the probe_poll_p999_ns +0 % [-0.000000000000122 % - +0.000000000000133 %]
    runs = [run(i, img, "probe_poll_p999_ns", 41007000.0 + (0.3 if img == "b" else 0.0), "ns")
            for img in ("a", "b") for i in range(3)]
    [row] = compare(runs, A, B, traits=own_view).rows
    assert row.test == "none: within resolution" and row.ratio == 1.0 and np.isnan(row.ci_low)
    assert (row.verdict, row.decided_by) == (SAME, "resolution")


def test_only_the_watched_metrics_are_tested_and_the_others_cost_them_nothing():
    rng = np.random.default_rng(4)

    def runs_of(names):
        return [run_record(squarewave_cell(), id=f"{img}{i}", repetition=i, labels={"image": img},
                           metrics=[Metric(n, float(np.exp(rng.normal(0, 0.05))) * (2 if img == "b" else 1),
                                           "ratio", "vpin") for n in names])
                for img in ("a", "b") for i in range(3)]

    names = ["max_rel_period_error", *(f"other_{k}_error" for k in range(20))]
    runs = runs_of(names)
    headline = compare(runs, A, B,
                       traits=lambda b: BenchmarkTraits(("max_rel_period_error",), subject="probe")).rows
    tested = [r for r in headline if r.tested]
    assert [r.metric for r in tested] == ["max_rel_period_error"]
    assert {r.verdict for r in headline if not r.tested} == {NOT_TESTED}
    shown_alone = compare(runs, A, B, metrics=["max_rel_period_error"], traits=squarewave).rows[0]
    # the same verdict and adjusted p whatever else is shown: the family is the watched metrics
    assert (tested[0].verdict, tested[0].p_adjusted) == (shown_alone.verdict, shown_alone.p_adjusted)
