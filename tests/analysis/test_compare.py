"""compare: verdicts on synthetic groups with known answers, directions, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.compare import (
    BETTER,
    NO_CHANGE,
    WORSE,
    Selector,
    bootstrap_ratio_ci,
    compare,
    direction,
    label_pairs,
)
from jitterlab.errors import UserError
from jitterlab.fakes import run_record, squarewave_cell
from jitterlab.records import Metric
from jitterlab.store.catalog import RunRecord


def run(i: int, image: str, values: dict[str, float], impl: str = "c-fifo",
        status: str = "ok") -> RunRecord:
    metrics = {("vpin", k): Metric(k, v, "ratio", "vpin") for k, v in values.items()}
    return run_record(squarewave_cell(impl), id=f"{image}-{impl}-{i}", cell_key="k", repetition=i,
                      labels={"image": image}, status=status, started_ns=i,
                      metrics=metrics.values() if status == "ok" else ())


def groups(err_a, err_b, ops_a, ops_b, n=8):
    return ([run(i, "1.10", {"max_rel_period_error": e, "load_bogo_ops_per_s": o})
             for i, (e, o) in enumerate(zip(err_a, ops_a, strict=False))]
            + [run(i, "1.11", {"max_rel_period_error": e, "load_bogo_ops_per_s": o})
               for i, (e, o) in enumerate(zip(err_b, ops_b, strict=False))])


def rows_by_metric(result):
    return {r.metric: r for r in result.rows}


def test_large_difference_is_called_in_the_right_direction():
    rng = np.random.default_rng(1)
    # candidate: error twice as large (worse), throughput 25 % higher (better)
    runs = groups(0.01 + rng.normal(0, 1e-4, 8), 0.02 + rng.normal(0, 1e-4, 8),
                  1000 + rng.normal(0, 5, 8), 1250 + rng.normal(0, 5, 8))
    result = compare(runs, Selector("image", "1.10"), Selector("image", "1.11"))
    rows = rows_by_metric(result)
    err, ops = rows["max_rel_period_error"], rows["load_bogo_ops_per_s"]
    assert err.verdict == WORSE and ops.verdict == BETTER
    assert err.ratio == pytest.approx(2.0, rel=0.02) and err.change_pct == pytest.approx(100, abs=2)
    assert ops.change_pct == pytest.approx(25, abs=1)
    assert err.ci_low > 1 and ops.ci_low > 1
    # 8 vs 8 with complete separation: the exact two-sided U test gives 2 / C(16, 8)
    assert err.p_value == pytest.approx(2 / 12870)
    assert result.warnings == []
    # the reverse comparison flips both verdicts
    back = rows_by_metric(compare(runs, Selector("image", "1.11"), Selector("image", "1.10")))
    assert back["max_rel_period_error"].verdict == BETTER
    assert back["load_bogo_ops_per_s"].verdict == WORSE


def test_identical_distributions_are_no_significant_change():
    rng = np.random.default_rng(2)
    same_err, same_ops = 0.01 + rng.normal(0, 1e-3, 16), 1000 + rng.normal(0, 50, 16)
    runs = groups(same_err[:8], same_err[8:], same_ops[:8], same_ops[8:])
    rows = rows_by_metric(compare(runs, Selector("image", "1.10"), Selector("image", "1.11")))
    assert {r.verdict for r in rows.values()} == {NO_CHANGE}
    assert rows["max_rel_period_error"].ci_low < 1 < rows["max_rel_period_error"].ci_high
    # exactly equal values: p = 1, ratio 1
    runs = groups([0.01] * 5, [0.01] * 5, [1.0] * 5, [1.0] * 5)
    row = rows_by_metric(compare(runs, Selector("image", "1.10"), Selector("image", "1.11")))[
        "max_rel_period_error"]
    assert (row.p_value, row.ratio, row.verdict) == (1.0, 1.0, NO_CHANGE)


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
    assert {r.verdict for r in result.rows} == {NO_CHANGE}
    [w] = result.warnings
    assert "2 vs 2 runs" in w.message and "repetitions" in w.remedy


def test_bootstrap_is_seeded_and_vectorized():
    a, b = np.array([1.0, 2, 3, 4, 5]), np.array([2.0, 4, 6, 8, 10])
    ci1 = bootstrap_ratio_ci(a, b, np.random.default_rng(0))
    ci2 = bootstrap_ratio_ci(a, b, np.random.default_rng(0))
    assert ci1 == ci2 and ci1[0] <= 2.0 <= ci1[1]


def test_failed_runs_are_left_out():
    runs = groups([0.01] * 4, [0.01] * 4, [1.0] * 4, [1.0] * 4)
    runs.append(run(9, "1.11", {}, status="failed"))
    [row] = [r for r in compare(runs, Selector("image", "1.10"), Selector("image", "1.11")).rows
             if r.metric == "max_rel_period_error"]
    assert row.n_candidate == 4


def test_bad_input():
    runs = groups([0.01] * 3, [0.02] * 3, [1.0] * 3, [1.0] * 3)
    with pytest.raises(UserError, match=r"--metric nope: .*they have: load_bogo_ops_per_s, "
                                        r"max_rel_period_error"):
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
