"""When, in a run, its worst moment was: for a square wave the worst period each probe saw (the one
max_rel_period_error is), when it started and which it was; for a benchmark that keeps its samples
in the order measured (round-trip times, switch latencies) the largest sample and its place among
them. A histogram (cyclictest) keeps no order: it says so rather than guess.

From the run and its raw series as the store reads them (Store.read_series); nothing here opens a
file. The periods are exactly those the metrics used (analysis.samples.period_errors)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.latency import HISTOGRAM_UNIT
from jitterlab.analysis.samples import period_errors
from jitterlab.model.records import RunRecord
from jitterlab.model.series import EdgeSeries, Samples, Series, blind_spans
from jitterlab.model.traits import LATENCIES, PERIOD_ERRORS


@dataclass(frozen=True)
class WorstPeriod:
    """A probe's worst period: its length, its relative error (signed: late > 0), when it started
    (s since the probe's first edge) and its place among the periods used."""

    probe: str
    period_ns: float
    rel_error: float
    start_s: float
    index: int  # 0-based among the periods used
    of: int
    span_s: float  # from the first edge to the end of the last period used


@dataclass(frozen=True)
class WorstSample:
    """A series' largest sample (a latency, in ns) and its place among the samples, in the order
    measured."""

    series: str
    value_ns: float
    index: int  # 0-based
    of: int


@dataclass(frozen=True)
class Unordered:
    """A series that keeps no order (a histogram): its worst sample cannot be placed in the run."""

    series: str


Worst = WorstPeriod | WorstSample | Unordered


def worst_moments(run: RunRecord, series: Mapping[str, Series], samples: str,
                  period_ns: int = 0) -> list[Worst]:
    """The worst moment of each of the run's series, read as its benchmark's trait `samples`
    (model.traits) says they are: PERIOD_ERRORS, each probe's worst period of a wave of nominal
    period `period_ns`; LATENCIES, each series' largest sample, or Unordered for a histogram. [] for
    what neither is."""
    if samples == PERIOD_ERRORS:
        return _worst_periods(run, series, period_ns)
    if samples != LATENCIES:
        return []
    out: list[Worst] = []
    for name, s in series.items():
        if isinstance(s, Samples) and s.unit == HISTOGRAM_UNIT:
            out.append(Unordered(name))
        elif isinstance(s, Samples) and s.unit == "ns" and len(s):
            i = int(np.argmax(s.values))
            out.append(WorstSample(name, float(s.values[i]), i, len(s)))
    return out


def _worst_periods(run: RunRecord, series: Mapping[str, Series], period_ns: int) -> list[Worst]:
    warmup_ns = run.settings.warmup_ns or 0
    out: list[Worst] = []
    for name, s in series.items():
        if not isinstance(s, EdgeSeries) or "." in name or period_ns <= 0:
            continue  # "probe.blind" and the like are the probe's own bookkeeping
        blind = series.get(f"{name}.blind")
        spans = blind_spans(blind) if isinstance(blind, EdgeSeries) and len(blind) else None
        start_s, errors = period_errors(s, period_ns, warmup_ns, spans)
        if not len(errors):
            continue
        i = int(np.argmax(np.abs(errors)))
        last_end_s = float(start_s[-1] + (1 + errors[-1]) * period_ns / 1e9)
        out.append(WorstPeriod(name, float((1 + errors[i]) * period_ns), float(errors[i]), float(start_s[i]),
                               i, len(errors), last_end_s))
    return out
