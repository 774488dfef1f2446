"""Compare two groups of runs (e.g. image=1.10 vs image=1.11) cell by cell, metric by metric.

Per cell and metric, per run (one number per run): the effect (ratio candidate / baseline) with
its 95 % CI, a test chosen by group size and data (analysis.stats: Welch's t on log values for
small groups, Mann-Whitney U for large ones), each group shown by the statistic whose ratio the
effect is (geometric mean, mean or median), and a verdict that knows whether lower or higher is
better: better / worse (a change shown by the test), same (the CI excludes every change larger
than the metric kind's practical threshold, analysis.thresholds) or undecided (neither). Load
readings and descriptive numbers are shown, not graded. With the runs' raw series, also pooled:
p99 and max of all samples of each group, judged by a hierarchical bootstrap. The p-values of
all graded rows of one comparison are adjusted with Holm's method, so that the chance of any
false better/worse among them stays at ALPHA. Why these choices: docs/reports.md.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import re
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from jitterlab.analysis.direction import direction_of
from jitterlab.analysis.stats import (
    ALPHA,
    N_BOOTSTRAP,
    NO_TEST,
    STATS,
    holm,
    per_run_effect,
    pooled_effects,
)
from jitterlab.analysis.thresholds import DEFAULT_THRESHOLDS, kind, within
from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord, Warning_

MIN_RUNS = 3  # per group, for a verdict
CORRECTION = "holm"
BETTER, WORSE, SAME, UNDECIDED = "better", "worse", "same", "undecided"
VERDICTS = (WORSE, BETTER, UNDECIDED, SAME)
NOT_GRADED = ""  # a load reading or a descriptive number (mean period): shown, never graded
SHOWN_IDS = 3  # run ids named when groups overlap
POOLED_NAMES = tuple(f"pooled_{s}_{what}" for what in ("rel_period_error", "latency_ns") for s in STATS)

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

    def matches(self, run: RunRecord, names: CellNames = PLAIN) -> bool:
        """Whether the run has this label, cell field or parameter; a parameter's value may be
        written as `names` shows it (period=1ms) or as stored (period=1000000)."""
        if self.key in run.labels:
            return str(run.labels[self.key]) == self.value
        if self.key in _FIELDS:
            return str(getattr(run, self.key)) == self.value
        if run.cell.has(self.key):  # as stored (1000000) or as written in a campaign (1ms)
            return self.value in (str(run.param(self.key)), names.show_value(run.cell, self.key))
        return False

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


@dataclass(frozen=True)
class Row:
    """One cell x probe x metric of a comparison, per run or pooled (`view`).

    `baseline`/`candidate` are each group's `rule` (the statistic: geometric mean, mean or
    median of the runs' values, or pooled p99/max of all samples); `ratio` (candidate / baseline)
    is the ratio of those two, named by `effect`, with its 95 % CI; `test` gave `p_value`,
    adjusted over the graded rows of the comparison with Holm's method in `p_adjusted`;
    `verdict` is one of VERDICTS, or NOT_GRADED; `threshold` is the practical threshold (a
    fraction) a "same" had to stay within.
    """

    cell: tuple  # values of the cell fields not used to select the groups
    probe: str
    metric: str
    unit: str
    direction: str
    view: str  # "per-run" or "pooled"
    n_baseline: int
    n_candidate: int
    rule: str
    baseline: float
    candidate: float
    effect: str
    ratio: float
    ci_low: float
    ci_high: float
    test: str
    p_value: float
    p_adjusted: float
    verdict: str
    sign: int = 0  # +1 the candidate is higher, -1 lower, 0 the same
    threshold: float = math.nan

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1) * 100 if math.isfinite(self.ratio) else math.nan


@dataclass
class Comparison:
    baseline: Selector
    candidate: Selector
    cell_fields: tuple[str, ...]
    rows: list[Row] = field(default_factory=list)
    # (scope "cell" or "run", where: the cell's text or the run id, the warning): grouped by cause
    # when shown (report.warning_groups), so that one cause reads once with its count
    notes: list[tuple[str, str, Warning_]] = field(default_factory=list)
    alpha: float = ALPHA
    correction: str = CORRECTION
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    @property
    def n_tests(self) -> int:
        return sum(1 for r in self.rows if not math.isnan(r.p_value))

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for r in self.rows:
            if r.verdict != NOT_GRADED:
                out[r.verdict] += 1
        return out

    @property
    def n_not_graded(self) -> int:
        return sum(1 for r in self.rows if r.verdict == NOT_GRADED)


def metric_names(runs: list[RunRecord]) -> list[str]:
    return sorted({name for r in runs for (_, name) in r.metrics})


Distributions = Callable[[RunRecord], dict[str, tuple[np.ndarray, np.ndarray]]]


def compare(runs: list[RunRecord], baseline: Selector, candidate: Selector, *,
            metrics: list[str] | None = None, seed: int = 0, n_bootstrap: int = N_BOOTSTRAP,
            distributions: Distributions | None = None, names: CellNames = PLAIN,
            thresholds: dict[str, float] | None = None) -> Comparison:
    """Compare the ok runs selected by `baseline` and `candidate` in every cell both have, per
    run and, with `distributions` (a run's within-run samples as (value, count) by name), pooled
    (p99 and max of all samples of each group); p-values adjusted over all graded rows (Holm).
    `names` writes the cells' parameters (campaign.cells.names(): as a campaign does, defaults
    left out); `thresholds` (by kind, analysis.thresholds) decide "same". Groups that share a
    run are refused: a run cannot be both the reference and the judged."""
    thresholds = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    group_a = [r for r in runs if baseline.matches(r, names) and r.status == "ok"]
    group_b = [r for r in runs if candidate.matches(r, names) and r.status == "ok"]
    for sel, group, option in ((baseline, group_a, "--baseline"), (candidate, group_b, "--candidate")):
        if not group:
            raise UserError(f"{option} {sel}: no successful run has it; "
                            f"labels in the store: {_known_labels(runs)}{_known_params(sel, runs, names)}")
    _refuse_overlap(group_a, group_b, baseline, candidate)
    names = names.among(r.cell for r in group_a + group_b)  # a key that tells cells apart is named
    known = metric_names(group_a + group_b)
    if metrics:
        pooled_names = POOLED_NAMES if distributions else ()
        unknown = [m for m in metrics if m not in known and m not in pooled_names]
        if unknown:
            raise UserError(f"--metric {', '.join(unknown)}: no such metric in these runs; "
                            f"they have: {', '.join([*known, *pooled_names])}")
    wanted = metrics or known
    # a field that selects the groups must not split the cells, else no cell is common
    cell_fields = tuple(f for f in _CELL if f not in (baseline.key, candidate.key))
    selected = (baseline.key, candidate.key)
    cells_a = _by_cell(group_a, cell_fields, names, selected)
    cells_b = _by_cell(group_b, cell_fields, names, selected)
    common = [c for c in cells_a if c in cells_b]
    result = Comparison(baseline, candidate, cell_fields, thresholds=thresholds)
    if not common:
        raise UserError(
            f"--baseline {baseline} and --candidate {candidate} have no cell in common "
            f"({len(cells_a)} and {len(cells_b)} cells; a cell is {' x '.join(cell_fields)}); "
            "compare groups measured with the same matrix")
    rng = np.random.default_rng(seed)
    pooled_wanted = _pooled_stats(metrics) if distributions is not None else ()
    rows: list[Row] = []
    for cell in common:
        a_runs, b_runs = cells_a[cell], cells_b[cell]
        na, nb = len(a_runs), len(b_runs)
        if min(na, nb) < MIN_RUNS:
            result.notes.append(("cell", _cell_text(cell_fields, cell), Warning_(
                f"too few runs for a verdict ({na} vs {nb})",
                f"measure at least {MIN_RUNS} repetitions per group (campaign.repetitions), better 5")))
        keys = sorted({k for r in a_runs + b_runs for k in r.metrics if k[1] in wanted})
        for probe, name in keys:
            a = [r.metrics[(probe, name)].value for r in a_runs if (probe, name) in r.metrics]
            b = [r.metrics[(probe, name)].value for r in b_runs if (probe, name) in r.metrics]
            if not a or not b:
                continue
            # a metric some runs lack (a bound only a run with blind spans has): any run's will do
            first = next(r.metrics[(probe, name)] for r in a_runs + b_runs if (probe, name) in r.metrics)
            rows.append(_row(cell, probe, name, first.unit, np.asarray(a, float),
                             np.asarray(b, float), rng, n_bootstrap, direction_of(first),
                             thresholds[kind(name)]))
        if distributions is not None and pooled_wanted:
            rows += _pooled_rows(cell, a_runs, b_runs, distributions, pooled_wanted, rng, result, thresholds)
    result.rows = _adjusted(rows)
    return result


def graded(metric: str, direction: str) -> bool:
    """Whether a verdict grades this metric: load readings (load average, busy fraction, the
    load's bogo-ops/s: load_*) describe the conditions of a run, and metrics without a better
    direction (mean period, drift) describe what it did; both are shown, never graded."""
    return direction in ("lower", "higher") and not metric.startswith("load_")


def _row(cell: tuple, probe: str, name: str, unit: str, a: np.ndarray, b: np.ndarray,
         rng: np.random.Generator, n_bootstrap: int, way: str, threshold: float) -> Row:
    e = per_run_effect(a, b, rng, n_bootstrap)
    if min(len(a), len(b)) < MIN_RUNS:  # too few to call: shown, not tested
        e = dataclasses.replace(e, test=NO_TEST, ci_low=math.nan, ci_high=math.nan, p_value=math.nan)
    ungraded = not graded(name, way)
    if ungraded:  # out of Holm's family too: a description must not cost the results power
        e = dataclasses.replace(e, test=NO_TEST, p_value=math.nan)
    return Row(cell, probe, name, unit, way, "per-run", len(a), len(b), e.statistic,
               e.baseline, e.candidate, e.effect, e.ratio, e.ci_low, e.ci_high, e.test, e.p_value,
               math.nan, NOT_GRADED if ungraded else UNDECIDED, e.sign, threshold)


def _pooled_stats(metrics: list[str] | None) -> tuple[str, ...]:
    """The pooled statistics a --metric selection asks for (all of them without one): max for
    max_rel_period_error or *_max_ns, p99 for p99_rel_period_error or *_p99_ns, or by name."""
    if not metrics:
        return STATS
    return tuple(s for s in STATS if any(
        m.startswith(f"pooled_{s}_") or m == f"{s}_rel_period_error" or m.endswith(f"_{s}_ns")
        for m in metrics))


def _pooled_rows(cell: tuple, a_runs: list[RunRecord], b_runs: list[RunRecord],
                 distributions: Distributions, wanted: tuple[str, ...], rng: np.random.Generator,
                 result: Comparison, thresholds: dict[str, float]) -> list[Row]:
    def load(runs: list[RunRecord]) -> dict[str, list]:
        out: dict[str, list] = defaultdict(list)
        for r in runs:
            try:
                for name, dist in distributions(r).items():
                    out[name].append(dist)
            except UserError as exc:
                result.notes.append(("run", r.id, Warning_(
                    f"left out of the pooled view: {exc}",
                    "measure the cell again (run --resume --retry-failed)")))
        return out

    da, db = load(a_runs), load(b_runs)
    squarewave = a_runs[0].benchmark == "squarewave"
    rows = []
    for name in sorted(set(da) & set(db)):
        probe, unit = (name, "ratio") if squarewave else ("", "ns")
        for stat, (sa, sb, e) in pooled_effects(da[name], db[name], rng).items():
            if stat not in wanted:
                continue
            if min(len(da[name]), len(db[name])) < MIN_RUNS:
                e = dataclasses.replace(e, test=NO_TEST, ci_low=math.nan, ci_high=math.nan,
                                        p_value=math.nan)
            metric = f"pooled_{stat}_{'rel_period_error' if squarewave else 'latency_ns'}"
            rows.append(Row(cell, probe, metric, unit, "lower", "pooled", len(da[name]), len(db[name]),
                            e.statistic, sa, sb, e.effect, e.ratio, e.ci_low, e.ci_high, e.test,
                            e.p_value, math.nan, UNDECIDED, e.sign, thresholds[kind(metric)]))
    return rows


def _adjusted(rows: list[Row]) -> list[Row]:
    """Holm's adjustment over every tested row of the comparison, then the verdicts."""
    adjusted = holm([r.p_value for r in rows])
    return [dataclasses.replace(r, p_adjusted=p, verdict=verdict(r, p))
            for r, p in zip(rows, adjusted, strict=True)]


def verdict(row: Row, p_adjusted: float) -> str:
    """better / worse when the adjusted p < ALPHA and the CI of the ratio excludes 1 (whatever
    the size of the change: the row shows it); else same when the CI excludes every change larger
    than the row's threshold; else undecided (also when no test could be made). Rows that are
    not graded stay so."""
    if row.verdict == NOT_GRADED or not graded(row.metric, row.direction):
        return NOT_GRADED
    if math.isnan(p_adjusted):
        return UNDECIDED
    excludes = math.isnan(row.ci_low) or row.ci_low > 1 or row.ci_high < 1
    if p_adjusted < ALPHA and excludes and row.sign != 0:
        return BETTER if (row.sign > 0) == (row.direction == "higher") else WORSE
    return SAME if within(row.ci_low, row.ci_high, row.threshold) else UNDECIDED


def _refuse_overlap(group_a: list[RunRecord], group_b: list[RunRecord], baseline: Selector,
                    candidate: Selector) -> None:
    """Groups that share runs compare those runs with themselves, and the verdict means nothing."""
    ids_b = {r.id for r in group_b}
    shared = sorted({r.id for r in group_a if r.id in ids_b})
    if shared:
        more = f" and {len(shared) - SHOWN_IDS} more" if len(shared) > SHOWN_IDS else ""
        raise UserError(
            f"--baseline {baseline} and --candidate {candidate} share {len(shared)} "
            f"run{'s' if len(shared) != 1 else ''} ({', '.join(shared[:SHOWN_IDS])}{more}): a run can "
            "be in one group only; choose selectors no run matches both of (e.g. two values of one "
            "key: --baseline load=idle --candidate load=cpu)")


def _by_cell(runs: list[RunRecord], fields: tuple[str, ...], names: CellNames,
             selected: tuple[str, ...] = ()) -> dict[tuple, list[RunRecord]]:
    out: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        key = tuple(names.params_text(r.cell, leave_out=selected) if f == "params" else getattr(r, f)
                    for f in fields)
        out[key].append(r)
    return dict(out)


def _cell_text(fields: tuple[str, ...], cell: tuple) -> str:
    return " ".join(str(v) for v in cell if str(v))


def full_cell_text(comparison: Comparison, row: Row) -> str:
    """A row's cell with every field, as the comparison's notes name it."""
    return _cell_text(comparison.cell_fields, row.cell)


def cell_text(comparison: Comparison, row: Row) -> str:
    """A cell as the reader wants it: the fields that differ between the rows ("idle impl=c-fifo
    period=1ms"); those every row shares are in common_text()."""
    varying = _varying_fields(comparison)
    return _cell_text(comparison.cell_fields, tuple(v for i, v in enumerate(row.cell) if i in varying))


def common_text(comparison: Comparison) -> str:
    """What every row of the comparison shares ("target=board benchmark=squarewave"), or ""."""
    varying = _varying_fields(comparison)
    first = comparison.rows[0].cell if comparison.rows else ()
    return " ".join(f"{f}={v}" for i, (f, v) in enumerate(zip(comparison.cell_fields, first, strict=False))
                    if i not in varying and str(v))


def _varying_fields(comparison: Comparison) -> set[int]:
    cells_seen = {r.cell for r in comparison.rows}
    varying = {i for i in range(len(comparison.cell_fields)) if len({c[i] for c in cells_seen}) > 1}
    return varying or set(range(len(comparison.cell_fields)))  # one cell: name it whole


def _known_params(selector: Selector, runs: list[RunRecord], names: CellNames) -> str:
    """The values a cell field (load=cpuu) or cell key (policy=fifoo) takes in the store, when the
    selector names one."""
    if selector.key in _FIELDS:
        values = sorted({str(getattr(r, selector.key)) for r in runs})
    else:
        values = sorted({names.show_value(r.cell, selector.key) for r in runs if r.cell.has(selector.key)})
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
