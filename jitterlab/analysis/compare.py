"""Compare two groups of runs (e.g. image=1.10 vs image=1.11) cell by cell, metric by metric.

Per cell and metric: median of each group, ratio of medians (candidate / baseline), % change,
a bootstrap 95 % CI of that ratio (seeded, so a report is reproducible), the two-sided
Mann-Whitney U p-value, and a verdict that knows whether lower or higher is better.
A change is significant only when p < ALPHA *and* the CI excludes 1: the U test alone flags
tiny shifts on large groups, the CI alone is unreliable on 3-5 runs.
"""

from __future__ import annotations

import itertools
import math
import re
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
from scipy.stats import mannwhitneyu

from jitterlab import cells
from jitterlab.errors import UserError
from jitterlab.records import Warning_
from jitterlab.store.catalog import RunRecord

ALPHA = 0.05
N_BOOTSTRAP = 2000
MIN_RUNS = 3
BETTER, WORSE, NO_CHANGE, CHANGED, UNDECIDED = (
    "better", "worse", "no significant change", "changed", "undecided")

# Which way is good, by metric name: the first matching pattern wins. "none" marks metrics
# that describe the run rather than grade it (a longer mean period is neither good nor bad).
_DIRECTIONS: list[tuple[str, str]] = [
    # drift has a sign: a ratio of medians of signed values does not grade it
    (r"^(n_edges|n_periods|warmup_ns|mean_period_ns|min_period_ns|max_period_ns|drift_ppm)$",
     "none"),
    (r"^load_(bogo_ops_per_s|.*_per_s|.*mbit.*|.*throughput.*|.*ops.*)$", "higher"),
    (r"^load_", "none"),  # load_workers, load_loadavg_1m: what was asked/seen, not a grade
    (r"(_error|_delay|_early|^std_period_ns|latency|jitter)", "lower"),
    (r"(excluded|missed|blind|unobserved|overflow|^probe_poll)", "lower"),
    (r"(throughput|_per_s$|mbit|bandwidth|ops)", "higher"),
]
DEFAULT_DIRECTION = "lower"  # a timing tool mostly measures errors and latencies


def direction(metric: str) -> str:
    """"lower", "higher" (is better) or "none" (informational) for a metric name."""
    for pattern, way in _DIRECTIONS:
        if re.search(pattern, metric):
            return way
    return DEFAULT_DIRECTION


# cell fields that --baseline/--candidate may select on besides labels and the benchmark's keys
_FIELDS = ("target", "benchmark", "load")
# a cell of a comparison: those fields and the benchmark's matrix keys as one text
# ("impl=c-fifo period=1ms probe=vpin pin=vpin", "size=64 policy=fifo ...")
_CELL = (*_FIELDS, "params")


@dataclass(frozen=True)
class Selector:
    key: str
    value: str

    @classmethod
    def parse(cls, text: str, option: str) -> Selector:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{option} {text!r}: write KEY=VALUE, e.g. {option} image=1.10")
        return cls(key.strip(), value.strip())

    def matches(self, run: RunRecord) -> bool:
        if self.key in run.labels:
            return str(run.labels[self.key]) == self.value
        if self.key in _FIELDS:
            return str(getattr(run, self.key)) == self.value
        if run.cell.has(self.key):  # as stored (1000000) or as written in a campaign (1ms)
            return self.value in (str(run.param(self.key)), cells.show_value(run.cell, self.key))
        return False

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


@dataclass(frozen=True)
class Row:
    """One cell x probe x metric of a comparison. ratio/change are candidate vs baseline."""

    cell: tuple  # values of the cell fields not used to select the groups
    probe: str
    metric: str
    unit: str
    n_baseline: int
    n_candidate: int
    median_baseline: float
    median_candidate: float
    ratio: float
    change_pct: float
    ci_low: float
    ci_high: float
    p_value: float
    direction: str
    verdict: str


@dataclass
class Comparison:
    baseline: Selector
    candidate: Selector
    cell_fields: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)
    warnings: list[Warning_] = field(default_factory=list)


def metric_names(runs: list[RunRecord]) -> list[str]:
    return sorted({name for r in runs for (_, name) in r.metrics})


def compare(runs: list[RunRecord], baseline: Selector, candidate: Selector, *,
            metrics: list[str] | None = None, seed: int = 0,
            n_bootstrap: int = N_BOOTSTRAP) -> Comparison:
    """Compare the ok runs selected by `baseline` and `candidate` in every cell both have."""
    group_a = [r for r in runs if baseline.matches(r) and r.status == "ok"]
    group_b = [r for r in runs if candidate.matches(r) and r.status == "ok"]
    for sel, group, option in ((baseline, group_a, "--baseline"), (candidate, group_b, "--candidate")):
        if not group:
            raise UserError(f"{option} {sel}: no successful run has it; "
                            f"labels in the store: {_known_labels(runs)}{_known_params(sel, runs)}")
    known = metric_names(group_a + group_b)
    if metrics:
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise UserError(f"--metric {', '.join(unknown)}: no such metric in these runs; "
                            f"they have: {', '.join(known)}")
    wanted = metrics or known
    # a field that selects the groups must not split the cells, else no cell is common
    cell_fields = tuple(f for f in _CELL if f not in (baseline.key, candidate.key))
    selected = (baseline.key, candidate.key)
    cells_a, cells_b = _by_cell(group_a, cell_fields, selected), _by_cell(group_b, cell_fields, selected)
    common = [c for c in cells_a if c in cells_b]
    result = Comparison(baseline, candidate, cell_fields)
    if not common:
        raise UserError(
            f"--baseline {baseline} and --candidate {candidate} have no cell in common "
            f"({len(cells_a)} and {len(cells_b)} cells; a cell is {' x '.join(cell_fields)}); "
            "compare groups measured with the same matrix")
    rng = np.random.default_rng(seed)
    for cell in common:
        a_runs, b_runs = cells_a[cell], cells_b[cell]
        na, nb = len(a_runs), len(b_runs)
        smallest_p = 2 / math.comb(na + nb, na)  # exact two-sided U test, complete separation
        if min(na, nb) < MIN_RUNS or smallest_p >= ALPHA:
            result.warnings.append(Warning_(
                f"{_cell_text(cell_fields, cell)}: {na} vs {nb} runs; the smallest p-value they "
                f"can give is {smallest_p:.2g}, so no change can be called significant",
                f"measure at least {MIN_RUNS + 1} repetitions per group "
                "(campaign.repetitions), better 5-10"))
        keys = sorted({k for r in a_runs + b_runs for k in r.metrics if k[1] in wanted})
        for probe, name in keys:
            a = [r.metrics[(probe, name)].value for r in a_runs if (probe, name) in r.metrics]
            b = [r.metrics[(probe, name)].value for r in b_runs if (probe, name) in r.metrics]
            if not a or not b:
                continue
            first = a_runs[0].metrics.get((probe, name)) or b_runs[0].metrics[(probe, name)]
            result.rows.append(_row(cell, probe, name, first.unit, np.asarray(a, float),
                                    np.asarray(b, float), rng, n_bootstrap, first.direction))
    return result


def _row(cell: tuple, probe: str, name: str, unit: str, a: np.ndarray, b: np.ndarray,
         rng: np.random.Generator, n_bootstrap: int, stored_direction: str = "") -> Row:
    med_a, med_b = float(np.median(a)), float(np.median(b))
    ratio = _ratio(med_b, med_a)
    lo, hi = bootstrap_ratio_ci(a, b, rng, n_bootstrap)
    p = mann_whitney_p(a, b)
    way = stored_direction or direction(name)
    return Row(cell, probe, name, unit, len(a), len(b), med_a, med_b, ratio,
               (ratio - 1) * 100 if math.isfinite(ratio) else math.nan, lo, hi, p, way,
               verdict(ratio, lo, hi, p, way))


def _ratio(num: float, den: float) -> float:
    if den == 0:
        return 1.0 if num == 0 else math.inf * np.sign(num)
    return num / den


def bootstrap_ratio_ci(a: np.ndarray, b: np.ndarray, rng: np.random.Generator,
                       n: int = N_BOOTSTRAP) -> tuple[float, float]:
    """Percentile bootstrap 95 % CI of median(b) / median(a); all resamples in one array op."""
    med_a = np.median(a[rng.integers(0, len(a), (n, len(a)))], axis=1)
    med_b = np.median(b[rng.integers(0, len(b), (n, len(b)))], axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        ratios = np.where(med_a == 0, np.where(med_b == 0, 1.0, np.inf), med_b / med_a)
    lo, hi = np.quantile(ratios, [0.025, 0.975], method="inverted_cdf")  # inf-safe
    return float(lo), float(hi)


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann-Whitney U p-value; 1.0 when the groups cannot be told apart at all."""
    if len(a) == 0 or len(b) == 0 or np.all(np.concatenate([a, b]) == a[0]):
        return 1.0
    p = float(mannwhitneyu(a, b, alternative="two-sided").pvalue)
    return 1.0 if math.isnan(p) else p


def verdict(ratio: float, ci_low: float, ci_high: float, p: float, way: str) -> str:
    if not (p < ALPHA and (ci_low > 1 or ci_high < 1)):
        return NO_CHANGE
    if way == "none":
        return CHANGED
    up = ratio > 1
    return BETTER if up == (way == "higher") else WORSE


def _by_cell(runs: list[RunRecord], fields: tuple[str, ...],
             selected: tuple[str, ...] = ()) -> dict[tuple, list[RunRecord]]:
    out: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        key = tuple(cells.params_text(r.cell, leave_out=selected) if f == "params" else getattr(r, f)
                    for f in fields)
        out[key].append(r)
    return dict(out)


def _cell_text(fields: tuple[str, ...], cell: tuple) -> str:
    return " ".join(str(v) for v in cell if str(v))


def cell_text(comparison: Comparison, row: Row) -> str:
    """A cell as the reader wants it: "local squarewave c-fifo idle 1ms vpin vpin"."""
    return _cell_text(comparison.cell_fields, row.cell)


def _known_params(selector: Selector, runs: list[RunRecord]) -> str:
    """The values a cell key takes in the store, when the selector names one (policy=fifoo)."""
    values = sorted({cells.show_value(r.cell, selector.key) for r in runs if r.cell.has(selector.key)})
    return f"; {selector.key} takes: {', '.join(values)}" if values else ""


def _known_labels(runs: list[RunRecord]) -> str:
    pairs = sorted({f"{k}={v}" for r in runs for k, v in r.labels.items()})
    return ", ".join(pairs) or "none (give --label k=v to import, or labels in the campaign)"


def label_pairs(runs: list[RunRecord]) -> list[tuple[Selector, Selector]]:
    """Consecutive value pairs of every label key that takes more than one value (for reports)."""
    values: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        for k, v in r.labels.items():
            values[k].add(str(v))
    pairs = []
    for key in sorted(values):
        vals = sorted(values[key], key=_natural)
        pairs += [(Selector(key, x), Selector(key, y)) for x, y in itertools.pairwise(vals)]
    return pairs


def _natural(text: str) -> list:
    """"1.10" sorts after "1.9"."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]
