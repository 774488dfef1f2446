"""The family of tests a comparison makes: defined here once, so that `summary`, `compare` (terminal,
JSON, HTML), `report` and `run --until-decided` test the same rows and reach the same verdict for
the same runs.

The family is what a user watches: the metrics named with --metric or --watch, else the headline
metrics each benchmark declares (model.traits; every graded metric its runs have for one that
declares none), as the probe the campaign chose for a cell saw them (its `probe` key: a squarewave
cell with probe vpin also stores the program's own timestamps, `self`, which are another view of
the same runs, and a benchmark without one stores per-thread views beside its own figures): other
views are tested only on request (compare --probe). Of those, only graded rows are tested (a
better direction exists, and it is no load reading: analysis.reading); every other row a comparison
shows (descriptions, bounds, counts of what the probe saw, other views) is shown with its change
and interval, and not tested: it costs the watched rows no power, and no verdict depends on whether
it is shown.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from jitterlab.model.reading import Reading
from jitterlab.model.records import RunRecord
from jitterlab.model.traits import UNKNOWN, BenchmarkTraits

Traits = Callable[[str], BenchmarkTraits]


def no_traits(benchmark: str) -> BenchmarkTraits:
    """Traits of benchmarks nobody declared (analysis without the plug-ins): none."""
    return UNKNOWN


def watched(runs: Iterable[RunRecord], metrics: Iterable[str] | None = None,
            traits: Traits = no_traits) -> frozenset[str]:
    """The metric names a comparison of these runs tests: `metrics` when given, else each benchmark's
    headline (every metric of its runs when it declares none)."""
    if metrics:
        return frozenset(metrics)
    runs = list(runs)
    out: set[str] = set()
    for bench in {r.benchmark for r in runs}:
        headline = traits(bench).headline
        mine = {n for r in runs if r.benchmark == bench for (_, n) in r.metrics}
        out |= set(headline) if headline else mine
    return frozenset(out)


def load_reading(name: str) -> bool:
    """Whether a metric is a load's reading (load average, busy share, the load's bogo-ops/s): the
    loads name them load_*, suffixed with the load's name when a run had several."""
    return name.startswith("load_")


def graded(name: str, how: Reading) -> bool:
    """Whether a row of this metric can be tested at all: load readings describe the conditions of a
    run, and metrics without a better direction describe what it did."""
    return how.graded and not load_reading(name)


def chosen_view(probe: str, chosen: Collection[str], asked: Collection[str] = ()) -> bool:
    """Whether a row of `probe` is a view the family tests: a figure no probe saw (""), the probe
    the cell's runs chose (`chosen`: each run's own subject, as its traits say), or one `asked` for."""
    return not probe or probe in chosen or probe in asked
