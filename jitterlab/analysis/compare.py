"""Compare two groups of runs (e.g. image=1.10 vs image=1.11) cell by cell, metric by metric.

Per cell and metric a row: each group's statistic, the change on the scale the metric declares
(analysis.reading: a ratio of geometric means for positive values, a difference of means for
counts that may be 0 and for signed values), its repeated 95 % interval, and for the rows of the
tested family (analysis.family: the watched metrics) a verdict that knows whether lower or higher
is better; the family is each watched metric as the probe the campaign chose saw it, other views on
request. A tail (p99, p99.9 of the run's periods or latencies) is compared as a tail: the quantile
of all samples of each group, judged by a hierarchical bootstrap, when the raw series are given and
hold enough samples; a maximum by the runs' maxima. Every look is one of a sequence that may go on
(analysis.sequential): its p-values are sequential, adjusted with Holm's method over the tested
rows, and "same" is an equivalence test (analysis.verdict). Why: docs/reports.md.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Collection
from dataclasses import dataclass, field

import numpy as np

from jitterlab.analysis import family as fam
from jitterlab.analysis.groups import (  # noqa: F401  (the names compare's callers use)
    Selector,
    cell_of,
    cell_text,
    common_text,
    full_cell_text,
    label_pairs,
    mixed_labels,
    paired,
)
from jitterlab.analysis.load_difference import LoadDifference, load_differences
from jitterlab.analysis.reading import reading
from jitterlab.analysis.samples import samples_key
from jitterlab.analysis.sequential import ALPHA, GUARANTEE, MIN_RUNS, Look, balanced_runs
from jitterlab.analysis.stats import N_BOOTSTRAP, NO_TEST, Effect, holm, needed_samples, per_run_effect
from jitterlab.analysis.stats import pooled_effect as pooled_tail
from jitterlab.analysis.thresholds import DEFAULT_THRESHOLDS
from jitterlab.analysis.verdict import BETTER, SAME, UNDECIDED, VERDICTS, WORSE, band, decide
from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.reading import COUNT, MAX, QUANTILE_OF, RATIO, WORST
from jitterlab.model.records import Metric, RunRecord, Warning_
from jitterlab.model.registry import METRICS_LISTED, did_you_mean, offered

__all__ = ["BETTER", "MIN_RUNS", "NOT_TESTED", "SAME", "UNDECIDED", "VERDICTS", "WORSE", "Comparison", "Row",
           "Selector", "compare", "label_pairs", "metric_names"]

CORRECTION = "holm"
NOT_TESTED = NOT_GRADED = ""  # a row outside the tested family: shown with its change, no verdict
PER_RUN, POOLED = "per-run", "pooled"

Distributions = Callable[[RunRecord], dict[str, tuple[np.ndarray, np.ndarray]]]


@dataclass(frozen=True)
class Row:
    """One cell x probe x metric of a comparison: the record every output of a verdict reads (the
    terminal, JSON, HTML, the summary, the loop, the test-system exporters); fields are only added.

    `baseline`/`candidate` are each group's `rule` (the statistic: geometric mean of the runs'
    values, mean, or the pooled quantile of all their samples, `view` "pooled"); `ratio`
    (candidate / baseline) with its repeated 95 % interval `ci_low`..`ci_high` (NaN for a signed
    metric); `difference` (candidate - baseline in `unit`) with `diff_low`..`diff_high` for counts
    and signed metrics; `test` gave `p_value` (this look alone), `p_sequential` (any number of
    looks) and, over the tested rows, `p_adjusted` (Holm); `verdict` one of VERDICTS for a tested
    row, NOT_TESTED else; `decided_by` the rule that decided it ("sequential test", "equivalence",
    "resolution"); `threshold` the practical threshold (a fraction) a "same" stays within;
    `samples_*` the samples a pooled statistic stood on (0: one value per run); `note` why a tail
    was compared per run; `load_differs` the load readings whose groups differ in this row's cell
    (analysis.load_difference: the change may be the load's)."""

    cell: tuple  # values of the cell fields not used to select the groups
    probe: str
    metric: str
    unit: str
    direction: str
    view: str
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
    scale: str = RATIO
    tested: bool = False
    decided_by: str = ""
    p_sequential: float = math.nan
    difference: float = math.nan
    diff_low: float = math.nan
    diff_high: float = math.nan
    samples_baseline: int = 0
    samples_candidate: int = 0
    note: str = ""
    load_differs: tuple[str, ...] = ()

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1) * 100 if math.isfinite(self.ratio) else math.nan

    @property
    def runs(self) -> str:
        """"3 vs 5": the runs that decided (or left undecided) the row."""
        return f"{self.n_baseline} vs {self.n_candidate}"


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
    family: frozenset[str] = frozenset()
    guarantee: str = GUARANTEE
    # labels (besides the selecting ones) with several values among the runs compared: label ->
    # (the baseline's values, the candidate's); the groups pool them, or differ in them too
    mixed: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = field(default_factory=dict)
    probes: tuple[str, ...] = ()  # views tested besides the probe each cell chose (--probe)
    # per cell (a row's `cell`), the load readings whose groups differ
    loads: dict[tuple, list[LoadDifference]] = field(default_factory=dict)

    @property
    def n_tests(self) -> int:
        return sum(1 for r in self.rows if r.tested and not math.isnan(r.p_sequential))

    def counts(self) -> dict[str, int]:
        out = dict.fromkeys(VERDICTS, 0)
        for r in self.rows:
            if r.tested:
                out[r.verdict] += 1
        return out

    @property
    def n_not_graded(self) -> int:
        return sum(1 for r in self.rows if not r.tested)

    @property
    def tested_rows(self) -> list[Row]:
        return [r for r in self.rows if r.tested]


def metric_names(runs: list[RunRecord]) -> list[str]:
    return sorted({name for r in runs for (_, name) in r.metrics})


def compare(runs: list[RunRecord], baseline: Selector, candidate: Selector, *,
            metrics: list[str] | None = None, seed: int = 0, n_bootstrap: int = N_BOOTSTRAP,
            distributions: Distributions | None = None, names: CellNames = PLAIN,
            thresholds: dict[str, float] | None = None, traits: fam.Traits = fam.no_traits,
            probes: Collection[str] = ()) -> Comparison:
    """Compare the ok runs selected by `baseline` and `candidate` in every cell both have.

    `metrics`: the rows shown and tested (--metric, --watch); without it every metric is shown and
    the family (analysis.family) is each benchmark's headline, which `traits` (benchmark name ->
    model.traits) declares, each as the probe its cell chose saw it; `probes` (--probe) adds other
    probes' views of the same runs to the family. `distributions`: a run's within-run samples by key
    (analysis.samples.distribution), for tails compared as tails. `names` writes the cells'
    parameters as a campaign does; `thresholds` (by kind, analysis.thresholds) decide "same"."""
    thresholds = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
    pairing = paired(runs, baseline, candidate, names)
    compared = [r for _, a, b in pairing.cells for r in a + b]
    known = metric_names(compared)
    if metrics:
        unknown = [m for m in metrics if m not in known]
        if unknown:
            raise UserError(f"--metric {', '.join(unknown)}: no such metric in these runs; they have: "
                            f"{offered(unknown[0], known, METRICS_LISTED)}")
    seen = sorted({p for r in compared for p, _ in r.metrics if p})
    if unseen := [p for p in probes if p not in seen]:
        raise UserError(f"--probe {', '.join(unseen)}: no metric of these runs was seen by it; "
                        f"{did_you_mean(unseen[0], seen)}their probes: {', '.join(seen) or 'none'}")
    result = Comparison(baseline, candidate, pairing.cell_fields, thresholds=thresholds,
                        family=fam.watched(compared, metrics, traits),
                        mixed=mixed_labels(pairing, baseline, candidate), probes=tuple(probes))
    rng = np.random.default_rng(seed)
    pool = _Pool(distributions, traits, result)
    rows: list[tuple[Row, Look, bool]] = []
    for cell, a_runs, b_runs in pairing.cells:
        na, nb = len(a_runs), len(b_runs)
        if min(na, nb) < MIN_RUNS:
            result.notes.append(("cell", cell_of(pairing.cell_fields, cell), Warning_(
                f"too few runs for a verdict ({na} vs {nb})",
                f"measure at least {MIN_RUNS} repetitions per group (campaign.repetitions), better 5")))
        keys = sorted({k for r in a_runs + b_runs for k in r.metrics if not metrics or k[1] in metrics})
        chosen = {traits(r.benchmark).subject_of(r.cell) for r in a_runs + b_runs}
        if differ := load_differences(a_runs, b_runs, thresholds):
            result.loads[cell] = differ
        worst = False
        for probe, name in keys:
            a = [r.metrics[(probe, name)] for r in a_runs if (probe, name) in r.metrics]
            b = [r.metrics[(probe, name)] for r in b_runs if (probe, name) in r.metrics]
            if a and b:
                row = _row(cell, a, b, result, pool.tail(a_runs, b_runs, a[0], rng, n_bootstrap),
                           fam.chosen_view(probe, chosen, result.probes))
                rows.append(row)
                worst |= row[0].tested and reading(a[0]).summary == WORST
        if worst and na != nb:
            result.notes.append(("cell", cell_of(pairing.cell_fields, cell), Warning_(
                f"unequal groups ({na} vs {nb} runs): a worst case is compared per run (the runs' maxima), "
                "never as each group's worst run, which grows with its number of runs by sampling alone",
                "measure the smaller group as often (run --until-decided adds runs to the group behind)")))
    result.rows = _verdicts(rows)
    return result


class _Pool:
    """The samples of each run, read once per comparison, for the tail rows."""

    def __init__(self, distributions: Distributions | None, traits: fam.Traits, result: Comparison) -> None:
        self._read, self._traits, self._result = distributions, traits, result
        self._cache: dict[str, dict] = {}

    def _of(self, run: RunRecord) -> dict:
        if run.id not in self._cache:
            try:
                self._cache[run.id] = self._read(run) if self._read else {}
            except UserError as exc:
                self._cache[run.id] = {}
                self._result.notes.append(("run", run.id, Warning_(
                    f"its samples could not be read, its tails are compared per run: {exc}",
                    "measure the cell again (run --resume --retry-failed)")))
        return self._cache[run.id]

    def tail(self, a_runs: list[RunRecord], b_runs: list[RunRecord], metric: Metric,
             rng: np.random.Generator, n_bootstrap: int) -> Effect | str:
        """The pooled effect of a tail metric; or why it is compared per run ("" when it is no tail)."""
        how = reading(metric)
        if not how.tail:
            return ""
        if self._read is None:
            return "per run: the runs' samples were not read"
        key = samples_key(self._traits(a_runs[0].benchmark).samples, metric.subject)
        if key is None:
            return f"per run: the runs keep no samples of {metric.subject or 'the run'}"
        a = [d[key] for r in a_runs if key in (d := self._of(r))]
        b = [d[key] for r in b_runs if key in (d := self._of(r))]
        if len(a) < len(a_runs) or len(b) < len(b_runs):
            return "per run: not every run's samples are stored"
        need = needed_samples(QUANTILE_OF[how.stat])
        have = min(sum(int(c.sum()) for _, c in a), sum(int(c.sum()) for _, c in b))
        if have < need:
            return (f"per run: a pooled {how.stat} needs {need:,} samples per group, the smaller has "
                    f"{have:,}")
        return pooled_tail(a, b, how.stat, rng, min(n_bootstrap, 400))


def _row(cell: tuple, a: list[Metric], b: list[Metric], result: Comparison,
         tail: Effect | str, chosen: bool) -> tuple[Row, Look, bool]:
    first = a[0]
    how = reading(first)
    av = np.array([m.value for m in a], dtype=np.float64)
    bv = np.array([m.value for m in b], dtype=np.float64)
    if isinstance(tail, Effect):
        effect, view, note = tail, POOLED, ""
    else:
        effect, view, note = per_run_effect(av, bv, how.scale, how.resolution), PER_RUN, tail
    rule = effect.statistic
    if view == PER_RUN and how.stat:  # a statistic of each run's samples, summarized over the runs
        rule = f"{effect.statistic} of run {'maxima' if how.stat == MAX else how.stat + 's'}"
    tested = chosen and first.name in result.family and fam.graded(first.name, how)
    enough = min(len(a), len(b)) >= MIN_RUNS and not math.isnan(effect.se)
    look = Look(effect.diff, effect.se if enough else math.nan, effect.df, balanced_runs(len(a), len(b)))
    p_seq = look.p_sequential if enough else math.nan
    ratio, lo, hi, difference, d_lo, d_hi = _interval(effect, look if enough else None)
    row = Row(cell, first.subject, first.name, first.unit, how.direction, view, len(a), len(b), rule,
              effect.baseline, effect.candidate, effect.effect, ratio, lo, hi,
              effect.test if enough or effect.exact else NO_TEST, effect.p_value if enough else math.nan,
              math.nan, UNDECIDED if tested else NOT_TESTED, effect.sign,
              result.thresholds[how.kind], effect.scale, tested, "", p_seq, difference, d_lo, d_hi,
              *effect.samples, note, tuple(d.metric for d in result.loads.get(cell, ())))
    return row, look, effect.exact and min(len(a), len(b)) >= MIN_RUNS


def _interval(effect: Effect, look: Look | None) -> tuple[float, float, float, float, float, float]:
    """(ratio, its repeated 95 % interval, difference, its interval): on the log scale for a
    ratio; a count's interval stops at -100 % (no mean falls below 0); a signed metric has no
    ratio; no change at all (within the resolution) has no interval."""
    nan = math.nan
    if effect.exact:
        return 1.0, nan, nan, 0.0 if effect.scale != RATIO else nan, nan, nan
    half = look.half_width() if look is not None else nan
    if effect.scale == RATIO:
        d = effect.diff
        return math.exp(d), math.exp(d - half), math.exp(d + half), nan, nan, nan
    base, d = effect.baseline, effect.diff
    d_lo, d_hi = d - half, d + half
    if effect.scale == COUNT:
        d_lo = max(d_lo, -base)
        if base > 0:
            return 1 + d / base, 1 + d_lo / base, 1 + d_hi / base, d, d_lo, d_hi
    return nan, nan, nan, d, d_lo, d_hi


def _verdicts(pending: list[tuple[Row, Look, bool]]) -> list[Row]:
    """Holm's adjustment of the sequential p-values over the tested rows, then their verdicts."""
    adjusted = holm([r.p_sequential if r.tested else math.nan for r, _, _ in pending])
    out = []
    for (r, look, exact), p in zip(pending, adjusted, strict=True):
        if r.tested:
            verdict, by = decide(look, p, r.direction, band(r.scale, r.baseline, r.threshold), exact)
            r = dataclasses.replace(r, p_adjusted=p, verdict=verdict, decided_by=by)
        out.append(r)
    return out
