"""hwlat: stalls of the hardware or firmware (SMIs, a hypervisor) that no kernel or scheduling
setting can fix, found by the kernel's hwlat tracer.

A kernel thread spins with interrupts off for `width` of every `window`, reading the clock in a
loop; a gap between two reads longer than `threshold` can only come from below the kernel and is
written to the trace. The tracer is driven through tracefs (rtla of Debian bookworm has no hwlat
mode): its settings are recorded on the target before they are changed (tracing/changes.py) and put
back after the run, or by the next campaign's sweep when jitterlab was killed. The run itself is a
recorded process that switches the tracer off when it ends or is stopped, so a killed jitterlab
does not leave CPUs spinning with interrupts off.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.analysis import rtla
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, whole_seconds
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, duration
from jitterlab.model.records import Warning_
from jitterlab.model.units import format_ns
from jitterlab.targets.processes import run_recorded
from jitterlab.tracing.tracefs import NO_RECORD, Tracefs, TraceUnavailable

US = 1000
LOG = "hwlat.log"
TRACE = "hwlat-trace.txt"
_WINDOW = ("hwlat_detector/window", "hwlat_detector/width", "tracing_thresh")  # put back in this order
_SAVED = ("current_tracer", "tracing_thresh", "hwlat_detector/width", "hwlat_detector/window", "tracing_on")
# Constant: the tracefs directory and the seconds come as positional parameters. Whatever ends the
# wait (its end, SIGTERM of the group by a stop or a sweep, SIGHUP of a dropped connection), the
# tracer stops spinning.
RUN = ('off() { printf "0\\n" > "$0/tracing_on"; }; trap \'off; printf "nop\\n" > "$0/current_tracer"; '
       "exit 0' HUP INT TERM; sleep \"$1\" & wait $!; off")


def _us(value: object, where: str) -> ParamValue:
    ns = int(duration(US, 3600 * 10**9)(value, where))
    if ns % US:
        raise UserError(f"{where}: the hwlat tracer takes whole microseconds; {format_ns(ns)} is not one")
    return ns


def _show(value: ParamValue) -> str:
    return value if isinstance(value, str) else format_ns(int(value))


@dataclass(frozen=True)
class HwlatCell(Options):
    threshold_ns: int = key("threshold")
    width_ns: int = key("width")
    window_ns: int = key("window")


class Hwlat(BenchmarkBase):
    headline = ("hwlat_max_ns", "hwlat_events")
    metrics = rtla.HWLAT_NAMES

    params = (
        Param("threshold", "a gap longer than this is recorded (tracing_thresh)", _us, '"10us"',
              default="10us", show=_show),
        Param("width", "time of each window spent spinning with interrupts off", _us, '"500ms"',
              default="500ms", show=_show),
        Param("window", "period of the windows", _us, '"1s"', default="1s", show=_show),
    )
    record = HwlatCell

    def check(self, cell, settings, where) -> None:
        p = HwlatCell.of_cell(cell)
        if p.width_ns >= p.window_ns:
            raise where.key("width").error(f"{format_ns(p.width_ns)} must be shorter than the window "
                                           f"{format_ns(p.window_ns)}")

    def estimate_s(self, settings, cell) -> float:
        return super().estimate_s(settings, cell) + 1.0

    def label(self, cell) -> str:
        p = HwlatCell.of_cell(cell)
        spin = f"{format_ns(p.width_ns)}/{format_ns(p.window_ns)}"
        return f"hwlat >{format_ns(p.threshold_ns)} {spin} {cell.load}"

    def execute(self, ctx: RunContext) -> Measurement:
        p = HwlatCell.of_cell(ctx.cell)
        seconds = whole_seconds(ctx.settings.duration_ns)
        threshold_us = p.threshold_ns // US
        with Tracefs(ctx.target) as fs:
            fs.require("hwlat")
            saved = {name: fs.read(name).strip() for name in _SAVED}
            undo = [("write", fs.file("tracing_on"), "0"), ("write", fs.file("current_tracer"), "nop"),
                    ("write", fs.file("hwlat_detector/width"), "1")]  # so that any saved window is accepted
            undo += [("write", fs.file(name), saved[name]) for name in _WINDOW if saved[name]]
            undo += [("write", fs.file("current_tracer"), saved["current_tracer"] or "nop"),
                     ("write", fs.file("tracing_on"), saved["tracing_on"] or "1")]
            if not fs.changes.before(*undo):
                raise TraceUnavailable(NO_RECORD)
            text = self._trace(ctx, fs, seconds, threshold_us)
        try:
            trace = rtla.parse_hwlat_trace(text)
            metrics, series = rtla.hwlat_metrics(trace, threshold_us)
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {TRACE: text.encode()}) from None
        warnings = [Warning_(
            f"hwlat kept a CPU busy with interrupts off for {format_ns(p.width_ns)} of every "
            f"{format_ns(p.window_ns)}: the target was barely usable meanwhile",
            "never run hwlat on a machine in production; measure the other benchmarks in other runs")]
        if trace.lost:
            warnings.append(Warning_(f"{trace.lost} hwlat entries were overwritten in the trace buffer",
                                     "raise threshold or shorten campaign.duration"))
        if seconds * 1_000_000_000 != ctx.settings.duration_ns:
            warnings.append(Warning_(f"hwlat ran whole seconds: {seconds} s",
                                     "give campaign.duration in whole seconds"))
        attachments = {TRACE: text.encode()} if trace.samples else {}
        return Measurement(metrics=metrics, series=series, warnings=warnings, attachments=attachments)

    def _trace(self, ctx: RunContext, fs: Tracefs, seconds: int, threshold_us: int) -> str:
        p = HwlatCell.of_cell(ctx.cell)
        width_us, window_us = p.width_ns // US, p.window_ns // US
        fs.write("tracing_on", "0")
        fs.write("current_tracer", "nop")
        fs.truncate("trace")
        # width < window at every step: shrink the width first, then set the window, then the width
        if not (fs.write("hwlat_detector/width", "1") and fs.write("hwlat_detector/window", str(window_us))
                and fs.write("hwlat_detector/width", str(width_us))):
            raise RunFailed(f"the hwlat tracer refused width {width_us} us / window {window_us} us")
        fs.write("tracing_thresh", str(threshold_us))
        fs.write("tracing_max_latency", "0")
        if not (fs.write("current_tracer", "hwlat") and fs.write("tracing_on", "1")):
            raise RunFailed(f"cannot start the hwlat tracer ({fs.path}/current_tracer)")
        timeout_s = seconds + ctx.settings.run_timeout_ns / 1e9
        rc = run_recorded(ctx.target, ["sh", "-c", RUN, fs.path, str(seconds)], f"{ctx.scratch}/{LOG}",
                          timeout_s=timeout_s, name="hwlat", budget="duration + campaign.run_timeout")
        if rc != 0:
            raise failed("hwlat", rc, fs.target.run(["cat", f"{ctx.scratch}/{LOG}"]).stdout.encode(), LOG)
        return fs.read("trace")


BENCHMARKS.add(
    "hwlat",
    "the kernel's hwlat tracer: hardware/firmware stalls (SMIs, hypervisor) seen by a CPU spinning with "
    "interrupts off",
    Hwlat(),
)
