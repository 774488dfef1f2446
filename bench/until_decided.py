"""How `run --until-decided` decides, against fixed repetition counts, by simulation with known truth.

    python bench/until_decided.py [--trials 1000] [--seed 1] [--via compare]

A cell's p99 relative period error per run is log-normal around 5 % with a run-to-run spread of 10 %
or 30 % (the standard deviation of its log; docs/reports.md states 10-30 % for timing tails of
identical runs on Linux). The candidate's p99 is the baseline's times 2, 1.3, 1.1 or 1 (no change).
The loop is the one `run --until-decided` runs: start at the campaign's repetitions (3), judge with
jitterlab's own verdict, add one run to each group while the verdict is undecided, at most 10 extra
per cell (the default --max-runs). Beside it: the verdicts of a fixed count of 3, 5, 10 and 13 runs
per group, as `compare` gives them once.

Every row draws its data from its own seeded generator (the seed, the spread and the change), so
two trees judge the very same runs. `--via compare` judges each trial through `compare()` itself
(slow: the way to measure a tree without the vectorized verdict, e.g. the code before it); the
default judges all trials of a look at once with analysis.verdict, whose rule compare applies (a test
checks that both agree).

Printed per row: the runs per group the loop needed (median and 90th percentile, over the trials
it decided), the share decided, the share that ended on a false better/worse (any better/worse
with no change; better for a worse candidate), the share of wrong decisions (those, and "same" for
a change of 30 % or more: beyond the 20 % threshold), and for each fixed count the share decided
and the share false. The last line is for scripts:

    false better/worse on unchanged groups: X % (worst of the spreads), N trials per row
"""

from __future__ import annotations

import argparse
import time

import numpy as np

START, EXTRA = 3, 10  # the campaign's repetitions, extra runs per cell allowed (--max-runs' default)
FIXED = (3, 5, 10, 13)
CHANGES = (("2x", 2.0), ("+30 %", 1.3), ("+10 %", 1.1), ("none", 1.0))
SPREADS = (0.3, 0.1)
BASE = 0.05  # the baseline's p99: 5 %


def data(seed: int, spread: float, factor: float, trials: int) -> tuple[np.ndarray, np.ndarray]:
    """(baseline, candidate) p99 per run, trials x (START + EXTRA), from the row's own generator."""
    rng = np.random.default_rng([seed, round(spread * 1000), round(factor * 1000)])
    n = START + EXTRA
    a = BASE * np.exp(rng.normal(0, spread, (trials, n)))
    b = BASE * factor * np.exp(rng.normal(0, spread, (trials, n)))
    return a, b


def via_compare(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """compare()'s verdict of each trial (a row of a and b: its runs), one comparison at a time."""
    from jitterlab.analysis.compare import Selector, compare
    from jitterlab.model.fakes import run_record, squarewave_cell
    from jitterlab.model.records import Metric

    base, cand = Selector("image", "a"), Selector("image", "b")
    out = []
    for xs, ys in zip(a, b, strict=True):
        runs = [run_record(squarewave_cell(), id=f"{g}{i}", repetition=i, labels={"image": g},
                           metrics=[Metric("p99_rel_period_error", float(v), "ratio", "vpin")])
                for g, values in (("a", xs), ("b", ys)) for i, v in enumerate(values)]
        result = compare(runs, base, cand, n_bootstrap=500, metrics=["p99_rel_period_error"])
        out.append(result.rows[0].verdict)
    return np.asarray(out)


def vectorized(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The same verdicts, all trials at once (analysis.verdict, whose rule compare applies)."""
    from jitterlab.analysis.verdict import verdicts_of_runs

    return verdicts_of_runs(a, b, metric="p99_rel_period_error", unit="ratio")


def wrong(verdicts: np.ndarray, factor: float) -> np.ndarray:
    """A decided verdict that contradicts the truth (a 10 % change may honestly read "same": inside
    the 20 % practical threshold)."""
    if factor == 1.0:
        return np.isin(verdicts, ("better", "worse"))
    return (verdicts == "better") | ((factor >= 1.3) & (verdicts == "same"))


def false_call(verdicts: np.ndarray, factor: float) -> np.ndarray:
    """A false better/worse: any with no change, better for a worse candidate."""
    return np.isin(verdicts, ("better", "worse")) if factor == 1.0 else verdicts == "better"


def row(judge, a: np.ndarray, b: np.ndarray, factor: float) -> dict:
    trials = len(a)
    final = np.full(trials, "undecided", dtype=object)
    runs = np.zeros(trials, dtype=int)
    open_ = np.ones(trials, dtype=bool)
    for n in range(START, START + EXTRA + 1):  # the loop: one more run per group while undecided
        idx = np.flatnonzero(open_)
        if not len(idx):
            break
        v = judge(a[idx, :n], b[idx, :n])
        done = np.isin(v, ("better", "worse", "same"))
        final[idx[done]] = v[done]
        runs[idx[done]] = n
        open_[idx[done]] = False
    decided = ~open_
    fixed = {}
    for k in FIXED:
        v = judge(a[:, :k], b[:, :k])
        fixed[k] = (np.isin(v, ("better", "worse", "same")).mean(), false_call(v, factor).mean())
    return {"median": float(np.median(runs[decided])) if decided.any() else None,
            "p90": float(np.percentile(runs[decided], 90)) if decided.any() else None,
            "decided": decided.mean(), "false": false_call(final, factor).mean(),
            "wrong": wrong(final, factor).mean(), "fixed": fixed}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=1000, help="trials per row (default 1000)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--via", choices=("sequential", "compare"), default="sequential",
                        help="judge all trials at once (default), or each through compare()")
    args = parser.parse_args()
    judge = via_compare if args.via == "compare" else vectorized
    start = time.perf_counter()
    print(f"p99 = 5 % x lognormal(0, spread) per run; loop from {START} runs per group, at most "
          f"{EXTRA} extra; {args.trials} trials per row, seed {args.seed}, judged via {args.via}")
    heads = ["spread", "change", "loop runs/group median", "p90", "decided", "false better/worse", "wrong"]
    heads += [f"fixed {k}: decided / false" for k in FIXED]
    print(" | ".join(heads))
    worst = 0.0
    for spread in SPREADS:
        for label, factor in CHANGES:
            r = row(judge, *data(args.seed, spread, factor, args.trials), factor)
            if factor == 1.0:
                worst = max(worst, r["false"])
            cells = [f"{spread:.0%}", label, "-" if r["median"] is None else f"{r['median']:.0f}",
                     "-" if r["p90"] is None else f"{r['p90']:.0f}", f"{r['decided']:.1%}",
                     f"{r['false']:.1%}", f"{r['wrong']:.1%}"]
            cells += [f"{d:.0%} / {f:.1%}" for d, f in r["fixed"].values()]
            print(" | ".join(cells), flush=True)
    print(f"({time.perf_counter() - start:.0f} s)")
    print(f"false better/worse on unchanged groups: {worst:.1%} (worst of the spreads), "
          f"{args.trials} trials per row")


if __name__ == "__main__":
    main()
