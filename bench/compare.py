"""How compare's verdicts behave on synthetic groups with known truth, and what a comparison costs.

    python bench/compare.py [--trials 400] [--seed 1]

Per-run view (one number per run, log-normal run-to-run spread of 30 %):
  - false better/worse on identical groups of 3, 5, 10 and 30 runs (the declared level is 5 %),
    and how many of them read "same" (the CI inside the 20 % timing threshold) or "undecided";
  - share of a twofold change found (worse) at 3 vs 3 runs;
  - share of a threefold change with 1 % spread found at 3 vs 3 runs, by compare and by the
    Mann-Whitney U test it used before (which cannot go below p = 0.1 at 3 vs 3);
  - comparisons of 17 identical metrics with any spurious better/worse, with Holm's adjustment
    and without it.
Tails on all samples (3 runs of 3000 samples each, pooled p99, hierarchical bootstrap): false
verdicts on identical groups at this one look, and the share of a threefold change found. Finally
the wall time of one compare of 8 cells x 17 metrics, with and without the runs' samples. Each
comparison here is one look of the sequential design (analysis.sequential): at a single look it is
more careful than a fixed 5 % test, the price of staying honest when one looks again.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from jitterlab.analysis.compare import BETTER, SAME, UNDECIDED, VERDICTS, WORSE, Selector, compare
from jitterlab.analysis.sequential import Look
from jitterlab.analysis.stats import mann_whitney_p, pooled_effect
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.traits import PERIOD_ERRORS, BenchmarkTraits

A, B = Selector("image", "a"), Selector("image", "b")


def runs_of(values_a, values_b, names=("max_rel_period_error",), impl="c-fifo"):
    out = []
    for image, values in (("a", values_a), ("b", values_b)):
        for i, row in enumerate(values):
            row = np.atleast_1d(row)
            out.append(run_record(squarewave_cell(impl), id=f"{image}{impl}{i}", repetition=i,
                                  labels={"image": image},
                                  metrics=[Metric(n, float(v), "ratio", "vpin") for n, v in zip(names, row,
                                                                                                 strict=True)]))
    return out


def called(result) -> bool:
    return any(r.verdict in (BETTER, WORSE) for r in result.rows)


def called_rows(result) -> int:
    return sum(r.verdict in (BETTER, WORSE) for r in result.rows)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=400)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n = args.trials

    for k in (3, 5, 10, 30):
        seen = dict.fromkeys(VERDICTS, 0)
        for _ in range(n):
            seen[compare(runs_of(*np.exp(rng.normal(-4, 0.3, (2, k)))), A, B).rows[0].verdict] += 1
        print(f"per-run, identical groups of {k}: false better/worse {(seen[BETTER] + seen[WORSE]) / n:.1%} "
              f"(declared 5 %), same {seen[SAME] / n:.1%}, undecided {seen[UNDECIDED] / n:.1%}")
    doubled = sum(compare(runs_of(*np.exp(rng.normal(-4, 0.3, (2, 3))) * [[1], [2]]), A, B).rows[0].verdict
                  == WORSE for _ in range(n))
    print(f"per-run, 2x change at 3 vs 3 (30 % spread): found {doubled / n:.1%}")
    found = mw = 0
    for _ in range(n):
        a, b = 0.137 * np.exp(rng.normal(0, 0.01, 3)), 0.412 * np.exp(rng.normal(0, 0.01, 3))
        found += compare(runs_of(a, b), A, B).rows[0].verdict == WORSE
        mw += mann_whitney_p(a, b) < 0.05
    print(f"per-run, 3x change at 3 vs 3: found {found / n:.1%} (Mann-Whitney U alone: {mw / n:.1%})")
    names = tuple(f"m{i}_error" for i in range(17))
    adjusted = raw = 0
    for _ in range(n // 2):
        result = compare(runs_of(np.exp(rng.normal(-4, 0.3, (3, 17))), np.exp(rng.normal(-4, 0.3, (3, 17))),
                                 names), A, B)
        adjusted += called(result)
        raw += any(r.p_value < 0.05 for r in result.rows)
    print(f"17 identical metrics: comparisons with a spurious verdict {adjusted / (n // 2):.1%} with Holm, "
          f"{raw / (n // 2):.1%} without")

    def dist(scale):
        return np.unique(np.round(rng.lognormal(np.log(scale), 0.5, 3000), 9), return_counts=True)

    trials = max(n // 4, 20)
    false = hit = 0
    for _ in range(trials):
        same = pooled_effect([dist(np.exp(rng.normal(0, 0.2))) for _ in range(3)],
                             [dist(np.exp(rng.normal(0, 0.2))) for _ in range(3)], "p99", rng)
        apart = pooled_effect([dist(1.0) for _ in range(3)], [dist(3.0) for _ in range(3)], "p99", rng)
        for effect, count in ((same, "false"), (apart, "hit")):
            p = Look(effect.diff, effect.se, effect.df, 3.0).p_sequential
            if count == "false":
                false += p < 0.05
            else:
                hit += p < 0.05
    print(f"pooled p99, 3 vs 3 runs: false verdicts {false / trials:.1%}, 3x change found {hit / trials:.1%}")

    runs, samples = [], {}
    for impl in ("c-fifo", "c-mmap", "c-file", "python", "node", "bash", "x1", "x2"):
        values = np.exp(rng.normal(-4, 0.3, (2, 5, 17)))
        part = runs_of(values[0], values[1], ("p99_rel_period_error", *names[1:]), impl)
        for r in part:
            samples[r.id] = {"vpin": dist(0.01)}
        runs += part
    def traits(benchmark):
        return BenchmarkTraits(("p99_rel_period_error",), periodic=True, samples=PERIOD_ERRORS)

    for label, dists in (("per-run only", None), ("with the runs' samples", lambda r: samples[r.id])):
        start = time.perf_counter()
        result = compare(runs, A, B, distributions=dists, traits=traits)
        elapsed = time.perf_counter() - start
        print(f"compare of 8 cells x 17 metrics, 5 vs 5 runs, {label}: {elapsed:.2f} s, "
              f"{len(result.rows)} rows, {called_rows(result)} better/worse")


if __name__ == "__main__":
    main()
