"""How many runs `run --until-decided` needs, against a fixed repetition count, by simulation.

    python bench/until_decided.py [--trials 200] [--seed 1] [--spread 0.3]

A cell's p99 relative period error per run is log-normal around 5 % with a run-to-run spread of
--spread (the standard deviation of its log; 0.3, i.e. about 30 %, is what bench/compare.py
assumes and what docs/reports.md states for timing tails of identical runs on Linux: 10-30 %; this
tree stores no repetition series to measure it from). The candidate's p99 is the baseline's times
1 (no change), 1.1, 1.3 or 2. The loop is the one `run --until-decided` runs: start at the
campaign's repetitions (3), compare with jitterlab's compare (the same test, CI and verdicts),
add one run to each group while the verdict is undecided, at most 10 extra per cell (the default
--max-runs). Against it: the verdicts of a fixed count of 3, 5, 10 and 13 runs per group.

Printed per change: the runs per group the loop needed (median and 90th percentile, over trials
it decided), the share it decided, the share of those decided that were wrong (better for a
worse candidate; better/worse for no change), and for each fixed count the share decided and
wrong. Stopping at the first decided look tests many times: the wrong share at no change shows
what that costs against the declared 5 %.
"""

from __future__ import annotations

import argparse

import numpy as np

from jitterlab.analysis.compare import Selector, compare
from jitterlab.execution.until_decided import decided
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric

A, B = Selector("image", "a"), Selector("image", "b")
START, EXTRA = 3, 10  # the campaign's repetitions, extra runs per cell allowed
FIXED = (3, 5, 10, 13)
CHANGES = (("none", 1.0), ("10 %", 1.1), ("30 %", 1.3), ("2x", 2.0))


def verdict(a: np.ndarray, b: np.ndarray) -> str:
    runs = [run_record(squarewave_cell(), id=f"{g}{i}", repetition=i, labels={"image": g},
                       metrics=[Metric("p99_rel_period_error", float(v), "ratio", "vpin")])
            for g, values in (("a", a), ("b", b)) for i, v in enumerate(values)]
    return compare(runs, A, B, n_bootstrap=500).rows[0].verdict


def wrong(v: str, factor: float) -> bool:
    """A decided verdict that contradicts the truth (a 10 % change may honestly read "same": inside
    the 20 % practical threshold)."""
    if factor == 1.0:
        return v in ("better", "worse")
    return v == "better" or (factor >= 1.3 and v == "same")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=200)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--spread", type=float, default=0.3, help="run-to-run sd of log p99")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    n_max = START + EXTRA
    heads = ["change", "loop: runs/group median", "p90", "decided", "wrong"]
    heads += [f"fixed {k}: decided / wrong" for k in FIXED]
    print(f"p99 = 5 % x lognormal(0, {args.spread}) per run; {args.trials} trials per change")
    print(" | ".join(heads))
    for label, factor in CHANGES:
        needed, decided_n, wrong_n = [], 0, 0
        fixed = {k: [0, 0] for k in FIXED}
        for _ in range(args.trials):
            a = 0.05 * np.exp(rng.normal(0, args.spread, n_max))
            b = 0.05 * factor * np.exp(rng.normal(0, args.spread, n_max))
            for n in range(START, n_max + 1):  # the loop: one more run per group while undecided
                v = verdict(a[:n], b[:n])
                if decided(v):
                    needed.append(n)
                    decided_n += 1
                    wrong_n += wrong(v, factor)
                    break
            for k in FIXED:
                v = verdict(a[:k], b[:k])
                fixed[k][0] += decided(v)
                fixed[k][1] += decided(v) and wrong(v, factor)
        med = f"{np.median(needed):.0f}" if needed else "-"
        p90 = f"{np.percentile(needed, 90):.0f}" if needed else "-"
        cells = [label, med, p90, f"{decided_n / args.trials:.0%}", f"{wrong_n / max(decided_n, 1):.0%}"]
        cells += [f"{d / args.trials:.0%} / {w / max(d, 1):.0%}" for d, w in fixed.values()]
        print(" | ".join(cells))


if __name__ == "__main__":
    main()
