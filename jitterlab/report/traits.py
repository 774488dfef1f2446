"""The traits of the benchmarks whose runs a report reads (model.traits), asked of the benchmark's
registration: nothing in the report tests a benchmark's name; and of the observers of a square wave,
asked of their probe's: nothing compares a probe's name."""

from __future__ import annotations

from jitterlab.model.records import Metric, RunRecord
from jitterlab.model.traits import BenchmarkTraits, ObserverTraits


def benchmark_traits(benchmark: str) -> BenchmarkTraits:
    from jitterlab import plugins  # when asked: reading stored runs loads no plug-in before

    return plugins.traits(benchmark)


def traits_of(run: RunRecord) -> BenchmarkTraits:
    return benchmark_traits(run.benchmark)


def subject_of(run: RunRecord) -> str:
    """Whom the run's own metrics are of, as its benchmark declares it (a square wave's observer; ""
    for the run as a whole)."""
    return traits_of(run).subject_of(run.cell)


def own(run: RunRecord, name: str) -> float | None:
    """The run's own value of a metric (of its subject_of), None when absent."""
    return run.metric(name, subject_of(run))


def own_metric(run: RunRecord, name: str) -> Metric | None:
    """The run's own metric of this name (of its subject_of), else the run-wide one ("")."""
    return run.metrics.get((subject_of(run), name)) or run.metrics.get(("", name))


def observer(probe: str) -> ObserverTraits:
    """What an observer is (independent of the program, where it runs), as its probe declares it."""
    from jitterlab import plugins

    return plugins.observer(probe)


def periodic(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs of periodic benchmarks (a square wave held to its period): the envelope's."""
    return [r for r in runs if traits_of(r).periodic]


def period_ns(run: RunRecord) -> int:
    """A periodic benchmark's run's nominal period, ns, as the benchmark reads its cell; 0 for a run
    of a benchmark that declares none."""
    read = traits_of(run).period_ns
    return read(run.cell) if read is not None else 0


def headline_metrics(runs: list[RunRecord], subject: str | None = None) -> list[str]:
    """The metrics a lab's result names for these runs, most important first: the envelope's rules
    for periodic benchmarks, then each benchmark's declared headline metrics; only those the runs
    have (of `subject`, when given)."""
    from jitterlab.analysis.envelope import RULES, rules_of

    wanted: list[str] = []
    held = periodic(runs)
    if held:
        wanted += [RULES[rule] for rule in rules_of(held)]
    for bench in sorted({r.benchmark for r in runs}):
        wanted += benchmark_traits(bench).headline
    present = {name for r in runs for (of, name) in r.metrics if subject in (None, of)}
    return [m for m in dict.fromkeys(wanted) if m in present]
