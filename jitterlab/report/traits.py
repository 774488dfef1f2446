"""The traits of the benchmarks whose runs a report reads (model.traits), asked of the benchmark's
registration: nothing in the report tests a benchmark's name."""

from __future__ import annotations

from jitterlab.model.records import RunRecord
from jitterlab.model.traits import BenchmarkTraits


def benchmark_traits(benchmark: str) -> BenchmarkTraits:
    from jitterlab import plugins  # when asked: reading stored runs loads no plug-in before

    return plugins.traits(benchmark)


def traits_of(run: RunRecord) -> BenchmarkTraits:
    return benchmark_traits(run.benchmark)


def periodic(runs: list[RunRecord]) -> list[RunRecord]:
    """The runs of periodic benchmarks (a square wave held to its period): the envelope's."""
    return [r for r in runs if traits_of(r).periodic]


def period_ns(run: RunRecord) -> int:
    """A periodic benchmark's run's nominal period, ns, as the benchmark reads its cell; 0 for a run
    of a benchmark that declares none."""
    read = traits_of(run).period_ns
    return read(run.cell) if read is not None else 0


def headline_metrics(runs: list[RunRecord], probe: str | None = None) -> list[str]:
    """The metrics a lab's result names for these runs, most important first: the envelope's rules
    for periodic benchmarks, then each benchmark's declared headline metrics; only those the runs
    have (of `probe`, when given)."""
    from jitterlab.analysis.envelope import RULES, rules_of

    wanted: list[str] = []
    held = periodic(runs)
    if held:
        wanted += [RULES[rule] for rule in rules_of(held)]
    for bench in sorted({r.benchmark for r in runs}):
        wanted += benchmark_traits(bench).headline
    present = {name for r in runs for (of, name) in r.metrics if probe in (None, of)}
    return [m for m in dict.fromkeys(wanted) if m in present]
