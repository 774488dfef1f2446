"""timerlat and osnoise: the kernel's own latency tracers, run through rtla (Debian package rtla).

timerlat: a per-CPU kernel thread wakes on a periodic timer; the tracer records how late the timer
IRQ ran (IRQ latency) and how late the thread ran (thread latency), so a late wake-up can be put
on the interrupt path or on the scheduler. `rtla timerlat hist` gives 1 µs histograms of both per
CPU; both are stored. osnoise: a per-CPU thread spins and the tracer accounts every interruption
of it by source (hardware/firmware, NMI, IRQ, softirq, other threads): `rtla osnoise top -q`.

Both need root, tracefs and a kernel built with the tracer; where it is missing the cell is
unavailable and says which kernel option builds it. rtla counts whole seconds (-d): a duration
that is not one is rounded up, with a warning.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from jitterlab.analysis import rtla
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, run_tool, whole_seconds
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, duration, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import Samples
from jitterlab.model.units import format_ns
from jitterlab.tracing.tracefs import Tracefs

US = 1000
LOG = "rtla.log"
_CPUS_HELP = 'CPUs to measure (-c); "" = the program CPUs of the placement, else all'
_CPU_LIST = re.compile(r"^\d+(-\d+)?(,\d+(-\d+)?)*$")
T = TypeVar("T")


def _cpus(value: object, where: str) -> ParamValue:
    text = value.replace(" ", "") if isinstance(value, str) else None
    if text is None or (text and not _CPU_LIST.match(text)):
        raise UserError(f'{where}: expected a CPU list like "1" or "0-2,4" ("" = the program CPUs, else '
                        f"all), got {value!r}")
    return text


def _whole_us(lo_ns: int, hi_ns: int):
    read = duration(lo_ns, hi_ns)

    def parse(value: object, where: str) -> ParamValue:
        ns = int(read(value, where))
        if ns % US:
            raise UserError(f"{where}: rtla takes whole microseconds; {format_ns(ns)} is not one")
        return ns

    return parse


def _show_ns(value: ParamValue) -> str:
    return value if isinstance(value, str) else format_ns(int(value))


def cpus_of(ctx: RunContext) -> str:
    """The cell's CPU list, else the program CPUs of the placement; "" = every CPU."""
    chosen = str(ctx.cell.param("cpus") or "")
    return chosen or ",".join(map(str, ctx.placement.program_cpus or ()))


def seconds_warning(ctx: RunContext, seconds: int, tool: str) -> list[Warning_]:
    if seconds * 1_000_000_000 == ctx.settings.duration_ns:
        return []
    return [Warning_(f"{tool} runs whole seconds: it ran {seconds} s for a campaign.duration of "
                     f"{ctx.settings.duration_ns / 1e9:g} s", "give campaign.duration in whole seconds")]


class _Rtla(BenchmarkBase):
    tracer = ""

    def tools(self, cell) -> dict[str, str]:
        return {"rtla": "rtla"}

    def estimate_s(self, settings, cell) -> float:
        rounded_up_s = whole_seconds(settings.duration_ns) - settings.duration_ns / 1e9
        return super().estimate_s(settings, cell) + rounded_up_s + 1.0

    def run(self, ctx: RunContext, argv: list[str], read: Callable[[str], T]) -> T:
        """rtla's output (stdout and stderr) as `read` makes it: rtla run on the cell's CPUs (-c) with
        tracefs mounted and the tracer present; a failure of rtla or of `read` keeps the output."""
        cpus = cpus_of(ctx)
        with Tracefs(ctx.target) as fs:
            fs.require(self.tracer)
            rc, output = run_tool(ctx, [*argv, *(["-c", cpus] if cpus else [])], f"rtla {self.tracer}", LOG)
        if rc != 0:
            raise failed(f"rtla {self.tracer}", rc, output, LOG)
        try:
            return read(output.decode(errors="replace"))
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {LOG: output}) from None


@dataclass(frozen=True)
class TimerlatCell(Options):
    period_ns: int = key("period")
    priority: int = key("priority")
    cpus: str = key("cpus")  # "": the program CPUs
    histogram_us: int = key("histogram")


@dataclass(frozen=True)
class OsnoiseCell(Options):
    period_ns: int = key("period")
    runtime_ns: int = key("runtime")
    priority: int = key("priority")  # 0: SCHED_OTHER
    cpus: str = key("cpus")


class Timerlat(_Rtla):
    tracer = "timerlat"
    headline = ("thread_latency_max_ns", "thread_latency_p99_ns", "irq_latency_max_ns", "irq_latency_p99_ns")
    metrics = rtla.timerlat_names()

    params = (
        Param("period", "timer period of the timerlat threads (-p, whole µs)", _whole_us(100 * US, 10**9),
              '"1ms"', default="1ms", show=_show_ns),
        Param("priority", "SCHED_FIFO priority of the timerlat threads (-P f:N)", integer(1, 99), "95",
              default=95),
        Param("cpus", _CPUS_HELP, _cpus, '"1-3"', default=""),
        Param("histogram", "histogram range in µs (1 µs buckets, -E); later samples count as overflow",
              integer(10, 1_000_000), "1000", default=1000),
    )
    record = TimerlatCell

    def label(self, cell) -> str:
        p = TimerlatCell.of_cell(cell)
        return (f"timerlat every {format_ns(p.period_ns)} fifo:{p.priority} cpus {p.cpus or 'program CPUs'} "
                f"{cell.load}")

    def execute(self, ctx: RunContext) -> Measurement:
        p = TimerlatCell.of_cell(ctx.cell)
        seconds = whole_seconds(ctx.settings.duration_ns)
        entries = p.histogram_us
        argv = ["rtla", "timerlat", "hist", "-d", str(seconds), "-p", str(p.period_ns // US),
                "-P", f"f:{p.priority}", "-E", str(entries), "-b", "1"]

        def read(output: str) -> tuple[list[rtla.TimerlatColumn], tuple[list[Metric], dict[str, Samples]]]:
            columns = rtla.parse_timerlat_hist(output, entries)
            return columns, rtla.timerlat_metrics(columns)

        columns, (metrics, series) = self.run(ctx, argv, read)
        warnings = seconds_warning(ctx, seconds, "rtla timerlat")
        over = sum(c.overflow for c in columns)
        if over:
            warnings.append(Warning_(f"{over} timerlat sample(s) were later than the histogram's {entries} "
                                     "µs; quantiles among them are given as the maximum", "raise histogram"))
        return Measurement(metrics=metrics, series=series, warnings=warnings)


class Osnoise(_Rtla):
    tracer = "osnoise"
    headline = ("cpu_available_percent", "noise_max_single_ns", "noise_max_ns", "hw_noise_events")
    metrics = (*rtla.OSNOISE_NAMES, "duration_s")

    params = (
        Param("period", "osnoise period (-p)", _whole_us(10 * US, 10 * 10**9), '"1s"', default="1s",
              show=_show_ns),
        Param("runtime", "time the osnoise thread spins in each period (-r); leave some for the rest",
              _whole_us(10 * US, 10 * 10**9), '"900ms"', default="900ms", show=_show_ns),
        Param("priority", "SCHED_FIFO priority of the osnoise threads (-P f:N); 0 = SCHED_OTHER",
              integer(0, 99), "1", default=0),
        Param("cpus", _CPUS_HELP, _cpus, '"1-3"', default=""),
    )
    record = OsnoiseCell

    def check(self, cell, settings, where) -> None:
        p = OsnoiseCell.of_cell(cell)
        if p.runtime_ns > p.period_ns:
            raise where.key("runtime").error(f"{format_ns(p.runtime_ns)} is longer than the period "
                                             f"{format_ns(p.period_ns)}; give a runtime <= period")
        seconds = whole_seconds(settings.duration_ns)
        if seconds * 10**9 < 2 * p.period_ns:  # its one period ended with rtla: no CPU row, once
            raise where.key("period").error(
                f"rtla osnoise runs {seconds} s, fewer than two of its {format_ns(p.period_ns)} periods: it "
                "reports only the periods that ended before it stopped; give a duration of at least "
                f"{format_ns(2 * p.period_ns)} (campaign.duration, or the table's duration)")

    def label(self, cell) -> str:
        p = OsnoiseCell.of_cell(cell)
        return (f"osnoise {format_ns(p.runtime_ns)}/{format_ns(p.period_ns)} cpus {p.cpus or 'program CPUs'} "
                f"{cell.load}")

    def execute(self, ctx: RunContext) -> Measurement:
        p = OsnoiseCell.of_cell(ctx.cell)
        seconds = whole_seconds(ctx.settings.duration_ns)
        argv = ["rtla", "osnoise", "top", "-q", "-d", str(seconds), "-p",
                str(p.period_ns // US), "-r", str(p.runtime_ns // US)]
        if p.priority:
            argv += ["-P", f"f:{p.priority}"]
        metrics = self.run(ctx, argv, lambda output: rtla.osnoise_metrics(rtla.parse_osnoise_top(output)))
        warnings = seconds_warning(ctx, seconds, "rtla osnoise")
        hw = next((m.value for m in metrics if m.name == "hw_noise_events" and m.subject == ""), 0.0)
        if hw:
            warnings.append(Warning_(
                f"osnoise saw {hw:.0f} hardware/firmware interruption(s) (HW): time the CPU was taken away "
                "that no kernel or scheduling setting can give back (SMIs, a hypervisor)",
                "run the hwlat benchmark to see how long they last; on bare metal, look at BIOS power and "
                "management settings"))
        metrics.append(Metric("duration_s", float(seconds), "s", "", "none"))
        return Measurement(metrics=metrics, warnings=warnings)


BENCHMARKS.add(
    "timerlat",
    "rtla timerlat: the kernel's timer latency tracer, IRQ latency and thread latency per CPU "
    "(1 µs histograms of both)",
    Timerlat(),
)
BENCHMARKS.add(
    "osnoise",
    "rtla osnoise: the kernel's OS noise tracer, per-CPU noise and its sources (hw, nmi, irq, "
    "softirq, thread)",
    Osnoise(),
)
