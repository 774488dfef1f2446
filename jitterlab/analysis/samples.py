"""The within-run samples of a run, for distributions and pooled comparisons: the relative period
errors of a squarewave probe, the latencies of a latency benchmark (raw samples, or the 1 µs
histogram with its overflow counted at the recorded maximum). From the run and its raw series as
the store reads them (Store.read_series): nothing here opens a file."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from jitterlab.analysis.latency import BUCKET_NS, HISTOGRAM_UNIT
from jitterlab.analysis.squarewave import period_split
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import RunRecord
from jitterlab.model.series import EdgeSeries, Samples, Series, blind_spans
from jitterlab.model.traits import LATENCIES, PERIOD_ERRORS, BenchmarkTraits


def period_errors(series: EdgeSeries, period_ns: int, warmup_ns: int,
                  blind: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(start time of each used period in s since the first edge, relative error e_i).

    Exactly the periods the metrics use (analysis.squarewave.period_split: the same warm-up and
    blind rule), so the figures and the headline agree. Empty when unmeasurable.
    """
    if len(series.t_ns) == 0:
        return np.empty(0), np.empty(0)
    try:
        split = period_split(series.t_ns, series.level, period_ns, warmup_ns=warmup_ns, blind=blind)
    except RunFailed:
        return np.empty(0), np.empty(0)
    return (split.start_ns[split.used] - series.t_ns[0]) / 1e9, split.rel_error[split.used]


def histogram_values(counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(value ns, count) of the filled buckets of a 1 µs histogram (bucket starts)."""
    counts = np.asarray(counts, dtype=np.int64)
    filled = np.flatnonzero(counts)
    return filled.astype(np.float64) * BUCKET_NS, counts[filled]


def weighted(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Raw samples as (distinct value, count)."""
    v, c = np.unique(np.asarray(values, dtype=np.float64), return_counts=True)
    return v, c


LATENCY = "latency"  # the key of a run's latencies among its distributions


def samples_key(samples: str, probe: str) -> str | None:
    """Which of a run's distributions (distribution(), of a benchmark whose samples are `samples`)
    a metric of `probe` is a statistic of: its probe's period errors, or the run's latencies for a
    run-wide metric (probe ""); None when none is (a thread's own metric, no samples)."""
    if samples == PERIOD_ERRORS and probe:
        return probe
    if samples == LATENCIES and not probe:
        return LATENCY
    return None


def distribution(run: RunRecord, series: Mapping[str, Series], samples: str = LATENCIES,
                 period_ns: int = 0) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The run's within-run distributions as (value, count), read from its raw `series` as the
    benchmark's trait `samples` (model.traits) says they are: PERIOD_ERRORS, the |relative period
    error| seen by each probe of a wave of nominal period `period_ns` (keyed by probe); LATENCIES,
    its latencies in ns (all threads together, a histogram's overflow at the recorded maximum;
    keyed LATENCY)."""
    out: dict[str, tuple[np.ndarray, np.ndarray]] = {}
    if samples == PERIOD_ERRORS:
        period, warmup = period_ns, run.settings.warmup_ns or 0
        for name, s in series.items():
            if isinstance(s, EdgeSeries) and "." not in name and period > 0:
                blind = series.get(f"{name}.blind")
                spans = blind_spans(blind) if blind is not None and len(blind) else None
                _, e = period_errors(s, period, warmup, spans)
                if len(e):
                    out[name] = weighted(np.abs(e))
        return out
    parts: list[tuple[np.ndarray, np.ndarray]] = []
    for s in series.values():
        if isinstance(s, Samples) and s.unit == "ns":
            parts.append(weighted(s.values))
        elif isinstance(s, Samples) and s.unit == HISTOGRAM_UNIT:
            parts.append(histogram_values(s.values))
    if parts:
        overflow = overflow_count(run)
        top = max((m.value for (_, name), m in run.metrics.items() if name.endswith("_max_ns")),
                  default=None)
        if overflow and top is not None:  # beyond the last bucket: drawn at the recorded maximum
            parts.append((np.array([float(top)]), np.array([int(overflow)])))
        values = np.concatenate([p[0] for p in parts])
        weights = np.concatenate([p[1] for p in parts])
        order = np.argsort(values, kind="stable")
        out[LATENCY] = (values[order], weights[order])
    return out


def overflow_count(run: RunRecord) -> int:
    """Samples beyond the run's histogram: the run-wide count where the benchmark gives one (probe
    ""), else the sum over its threads (probes)."""
    found = [(probe, m.value) for (probe, name), m in run.metrics.items()
             if name.endswith("_overflow") and m.unit == "count" and not name.startswith("probe_")]
    overall = [v for probe, v in found if probe == ""]
    return int(sum(overall) if overall else sum(v for _, v in found))


def reader(read_series: Callable[[RunRecord], Mapping[str, Series]],
           traits: Callable[[str], BenchmarkTraits]) -> Callable[[RunRecord], dict]:
    """A run's distributions read from its stored series (Store.read_series) as its benchmark's
    traits say they are: what every comparison (compare, summary, report, the loop) gives
    analysis.compare, so that they all compare tails alike."""
    def read(run: RunRecord) -> dict:
        declared = traits(run.benchmark)
        period_ns = declared.period_ns(run.cell) if declared.period_ns is not None else 0
        return distribution(run, read_series(run), declared.samples, period_ns)

    return read
