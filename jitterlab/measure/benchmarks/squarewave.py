"""The core benchmark: an impl toggles a pin every half period; a probe timestamps the edges.

The pin, the probe and the impl are plug-ins (jitterlab/pins, probes, impls); this module only
wires them for one run and turns what was seen into metrics: the probe's edges, and the program's
own edges beside them (so the bias of self-measurement is visible on the very same run).
"""

from __future__ import annotations

import contextlib

import numpy as np

from jitterlab.analysis.squarewave import (
    EXCLUDED_SELF_NAMES,
    METRIC_NAMES,
    excluded_seen_by_self,
    period_split,
    squarewave_metrics,
)
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.squarewave.bindings import drives, pairing, refusal, unpaired
from jitterlab.measure.squarewave.cell import TRACE_KEY, TRACE_OFF, TRACE_SCHED, WaveCell, traced
from jitterlab.measure.squarewave.impls.base import IMPLS, SELF_LOG
from jitterlab.measure.squarewave.pins.base import PINS
from jitterlab.measure.squarewave.probes.base import PROBES, Capture
from jitterlab.measure.squarewave.probes.logs import SelfLog, read_self_log
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.params import Param, choice, duration, registered
from jitterlab.model.records import Cell, Metric, Warning_
from jitterlab.model.series import EdgeSeries
from jitterlab.model.traits import OWN_VIEW, PERIOD_ERRORS
from jitterlab.model.units import format_ns
from jitterlab.targets.capabilities import Capability


def _parts(cell: Cell):
    """The cell's impl, pin class and probe class."""
    p = WaveCell.of_cell(cell)
    return (IMPLS.get(p.impl, "matrix.impl"), PINS.get(p.pin, "matrix.pin"),
            PROBES.get(p.probe, "matrix.probe"))


class Squarewave(BenchmarkBase):
    params = (
        Param("impl", "the programming model that makes the wave", registered(IMPLS), '["python", "c-fifo"]'),
        Param("period", "the wave's nominal period", duration(), '["10ms", "1ms"]', show=format_ns),
        Param("probe", "how edges are observed", registered(PROBES), '"vpin"', default="vpin"),
        Param("pin", "where the wave goes", registered(PINS), '"vpin"', default="vpin"),
        Param(TRACE_KEY, f'"{TRACE_SCHED}": record a kernel trace of each run and explain its late periods '
              "(docs/tracing.md)", choice(TRACE_OFF, TRACE_SCHED), f'"{TRACE_SCHED}"', default=TRACE_OFF,
              added=True),
    )
    record = WaveCell

    headline = ("max_rel_period_error", "p99_rel_period_error", "std_period_ns")
    samples = PERIOD_ERRORS
    subject = "probe"  # a run's own figures are its observer's

    @staticmethod
    def period_ns(cell: Cell) -> int:  # model.traits: a periodic benchmark
        return WaveCell.of_cell(cell).period_ns

    def metric_names(self, cell) -> frozenset[str]:
        """The analysis of the edges (the probe's and the program's own, each under its probe), what
        the program saw of the periods an independent probe excluded, the probe's and the impl's own
        figures."""
        impl, _, probe = _parts(cell)
        seen_by_self = EXCLUDED_SELF_NAMES if probe.independent else ()
        return frozenset((*METRIC_NAMES, *seen_by_self, *probe.metrics, *impl.metrics))

    def needs_rt(self, cell) -> bool:
        return _parts(cell)[0].realtime

    def needs_probe_cpu(self, cell) -> bool:
        return _parts(cell)[2].needs_cpu

    def needer(self, cell) -> str:
        return f"impl {cell.param('impl')}"

    def label(self, cell) -> str:
        p = WaveCell.of_cell(cell)
        return f"{p.impl} {format_ns(p.period_ns)} {cell.load} ({p.probe})"

    def pair(self, named, cells, where) -> tuple[list[Cell], tuple[str, ...]]:
        """Each impl with the pins of the table it drives: an impl on a pin it cannot drive is left
        out, not refused, unless a pin (or an impl) the table names has no partner in it at all."""
        pairs = [(str(c.param("impl")), str(c.param("pin"))) for c in cells]
        refused = unpaired(((str(c.param("impl")), str(c.param("pin"))) for c in named), pairs, where)
        if refused is not None:
            raise UserError(refused[1])
        kept = [c for c, pair in zip(cells, pairs, strict=True) if drives(*pair)]
        return kept, pairing(pairs, len(cells) - len(kept))

    def check(self, cell, settings, where) -> None:
        _, pin, probe = _parts(cell)
        p = WaveCell.of_cell(cell)
        refused = refusal(p.impl, p.pin, p.probe, where)
        if refused is not None:  # the impl or the probe needs a form of the pin it does not offer
            raise UserError(refused[1])
        pin.check(cell, settings, where)
        probe.check(cell, settings, where)
        period_ns = p.period_ns
        needed_ns = max(settings.warmup_ns, 2 * period_ns) + 2 * period_ns  # warm-up, then 2 periods
        if settings.duration_ns < needed_ns:
            raise UserError(f"{where}.period: {format_ns(period_ns)} is too long for campaign.duration "
                            f"({format_ns(settings.duration_ns)}): a run drops a warm-up of 2 periods "
                            f"(or campaign.warmup) and measures 2 more; give a duration of at least "
                            f"{format_ns(needed_ns)} or a shorter period")

    def check_target(self, cell, settings, where, target) -> None:
        _, pin, probe = _parts(cell)
        pin.check_target(cell, settings, where, target)
        probe.check_target(cell, settings, where, target)

    def tools(self, cell) -> dict[str, str]:
        impl, pin, probe = _parts(cell)
        return {**impl.tools(), **pin.tools, **probe.tools, "taskset": "util-linux"}

    def programs(self, cell) -> dict[str, str]:
        impl, _, probe = _parts(cell)
        return {**impl.programs(), **probe.programs}

    def controller_tools(self, cell) -> dict[str, str]:
        tools = dict(_parts(cell)[2].controller_tools)
        return {**tools, "trace-cmd": "trace-cmd"} if traced(cell) else tools  # the trace file is made here

    def capabilities(self, cell) -> dict[type[Capability], str]:
        _, pin, probe = _parts(cell)
        reads = probe.reads_of(cell)
        needed = {} if reads is None else {reads: f"probe {cell.param('probe')}"}
        return {**needed, pin.reads: f"pin {cell.param('pin')}"} if pin.reads is not None else needed

    def estimate_s(self, settings, cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return settings.duration_ns / 1e9 + load_s + 0.4

    def warm(self) -> None:
        # a wave of a few edges, one of them far off, takes the analysis' compiled paths (numba
        # loads them from its cache: ~0.3 s once per process)
        t = np.arange(0, 40_000, 500, dtype=np.int64)
        t[-10:] += 200_000
        squarewave_metrics(t, (np.arange(len(t)) % 2).astype(np.uint8), 1000, warmup_ns=0)

    def prepare(self, ctx: RunContext) -> _Wave:
        """The impl prepared, the pin set up and the probe watching, while the loads warm up."""
        impl, pin_kind, probe_kind = _parts(ctx.cell)
        pin, probe = pin_kind(ctx), probe_kind(ctx)
        impl.prepare(ctx)  # e.g. a kernel module built: not while the probe watches
        with contextlib.ExitStack() as cleanup:
            cleanup.callback(pin.teardown)
            handle = pin.setup()
            cleanup.callback(probe.close)
            probe.start(handle)
            return _Wave(ctx, impl, handle, probe, cleanup.pop_all())

    def analyse(self, ctx: RunContext, measured: object) -> Measurement:
        return _measurement(ctx, *measured)  # type: ignore[misc]


class _Wave:
    """One run's wave: the program makes it, the probe's capture ends with it; close() undoes the
    probe and the pin (after measure(), or after a failure anywhere once prepared)."""

    def __init__(self, ctx: RunContext, impl, handle, probe, cleanup: contextlib.ExitStack) -> None:
        self._ctx, self._impl, self._handle, self._probe, self._cleanup = ctx, impl, handle, probe, cleanup

    def measure(self) -> tuple[str, SelfLog, Capture, tuple]:
        output = self._impl.run(self._ctx, self._handle)
        own = _own_edges(self._ctx, output)
        capture = self._probe.stop(own)
        return output, own, capture, self._impl.measured(self._ctx, self._handle, output)

    def close(self) -> None:
        self._cleanup.close()


def _own_edges(ctx: RunContext, output: str) -> SelfLog:
    local = ctx.local_dir / SELF_LOG
    try:
        ctx.target.get(f"{ctx.scratch}/{SELF_LOG}", local)
    except OSError:
        raise RunFailed(f"{ctx.cell.param('impl')} wrote no edge log; its output: {output}") from None
    return read_self_log(local)


def _measurement(ctx: RunContext, output: str, own: SelfLog, capture: Capture,
                 impl_measured: tuple[list[Metric], list[Warning_]]) -> Measurement:
    cell, settings = ctx.cell, ctx.settings
    p = WaveCell.of_cell(cell)
    probe, period_ns = p.probe, p.period_ns
    independent = PROBES.get(probe, "matrix.probe").independent
    warnings = [Warning_(line.removeprefix("warning: "), "see the program's message")
                for line in output.splitlines() if line.startswith("warning:")]
    # a program that only counted its edges (a unit's firmware) has no series of its own
    series: dict = {OWN_VIEW: EdgeSeries(own.t_ns, own.level)} if own.timed else {}
    metrics: list[Metric] = list(impl_measured[0])
    warnings += impl_measured[1]
    if not independent:  # the program's own timestamps are all its probe sees
        metrics += squarewave_metrics(own.t_ns, own.level, period_ns, warmup_ns=settings.warmup_ns,
                                      probe=probe)
    else:
        series.update(capture.series)
        if capture.summary is not None:  # an instrument's statistics: no edges to analyse
            metrics += capture.summary
        else:
            series[probe] = EdgeSeries(capture.t_ns, capture.level)
            metrics += squarewave_metrics(capture.t_ns, capture.level, period_ns,
                                          warmup_ns=settings.warmup_ns, blind=capture.blind, probe=probe)
            if len(capture.blind):  # what the program saw of the periods the probe had to exclude
                split = period_split(capture.t_ns, capture.level, period_ns, warmup_ns=settings.warmup_ns,
                                     blind=capture.blind)
                metrics += excluded_seen_by_self(split, own.t_ns, period_ns, probe=probe)
        if capture.unavailable:
            warnings.append(Warning_(
                f"the {probe} probe cannot give {', '.join(capture.unavailable)} (unavailable, not stored)",
                "use a probe that timestamps every edge (sigrok, vpin) for percentiles"))
        metrics += capture.metrics
        warnings += capture.warnings
        if not own.timed:
            return Measurement(metrics=metrics, series=series, warnings=warnings)
        try:  # the program's own view of the same run, for the self-measurement bias
            metrics += squarewave_metrics(own.t_ns, own.level, period_ns, warmup_ns=settings.warmup_ns,
                                          probe=OWN_VIEW)
        except RunFailed as exc:
            warnings.append(Warning_(f"self probe: {exc.reason}", f"see the {probe} metrics"))
    if own.clock != "monotonic" and not independent:  # an independent probe's figures do not depend on it
        warnings.append(Warning_(
            f"{cell.param('impl')} timestamps its edges with CLOCK_{own.clock.upper()}, which NTP may slew",
            "use an independent probe for this impl"))
    return Measurement(metrics=metrics, series=series, warnings=warnings)


BENCHMARKS.add(
    "squarewave",
    "a program toggles a pin every half period; a probe timestamps the "
    "edges; metrics: relative period error, jitter, drift",
    Squarewave(),
)
