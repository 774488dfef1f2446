"""cyclictest (rt-tests): how late a periodic real-time thread wakes up, per thread and overall.

cyclictest runs `loops = duration / interval` wake-ups per thread (-l, so every run has the same
sample count) with a histogram of 1 µs buckets (-h), and writes its results with --json, read by
analysis.rttests like the other rt-tests'. A thread's entry holds a histogram of the non-empty
buckets only (its overflow is cycles - sum), whole microseconds (truncated), and "avg": -nan for a
thread that never woke.

breaktrace: cyclictest -b stops the run at the first latency above the threshold; --tracemark
makes it write a mark into the kernel trace and switch tracing off, and the tail of the trace
(what ran just before) is attached to the run. Without tracefs (not root, a kernel without
ftrace) the run goes on without -b and carries a warning saying why, since the latency figures
are still worth having.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.latency import HISTOGRAM_UNIT, histogram_metrics, latency_names
from jitterlab.analysis.rttests import average_us, read_json
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, fetch, run_tool
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, boolean, choice, duration, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import Samples
from jitterlab.model.traits import LATENCIES
from jitterlab.model.units import format_ns, parse_duration_ns
from jitterlab.tracing.global_buffer import TraceSession
from jitterlab.tracing.tracefs import TraceUnavailable

US = 1000  # ns
_MAX_PATH = 255  # cyclictest copies --json= and --histfile= into 256-byte buffers
_CPU_LIST = re.compile(r"^\d{1,4}(-\d{1,4})?(,\d{1,4}(-\d{1,4})?)*$")


def _affinity(value: object, where: str) -> ParamValue:
    text = value.replace(" ", "") if isinstance(value, str) else None
    if text is None or (text and not _CPU_LIST.match(text)):
        raise UserError(
            f'{where}: expected a CPU list like "1" or "0-2,4" ("" = the program CPUs), got {value!r}'
        )
    return text


def _breaktrace(value: object, where: str) -> ParamValue:
    if value in ("off", False, 0):
        return 0
    ns = parse_duration_ns(value, where)
    if ns < US or ns % US:
        raise UserError(
            f'{where}: cyclictest takes the threshold in whole microseconds, e.g. "100us"; got {value!r}'
        )
    return ns


def _show_duration(value: ParamValue) -> str:
    """A canonical duration (int ns, 0 = off) or a default as written in a campaign ("1ms")."""
    if isinstance(value, str):
        return value
    return format_ns(int(value)) if value else "off"


# --- parsing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ThreadResult:
    """One measurement thread: latencies in whole µs as cyclictest reports them."""

    cycles: int
    min_us: int
    max_us: int
    avg_us: float | None  # None when the thread never woke (cycles == 0)
    cpu: int
    counts: np.ndarray | None  # per 1 µs bucket; None without -h
    overflow: int  # samples beyond the last bucket


@dataclass(frozen=True)
class Break:
    """The latency that stopped a -b run: which thread (index) and how late (µs)."""

    thread: int | None
    value_us: int


def parse_json(raw: bytes, n_buckets: int) -> list[ThreadResult]:
    """Threads of cyclictest's --json output, in thread order; RunFailed if it is not whole."""
    output = read_json(raw, "cyclictest")
    if output.document.get("resolution_in_ns"):
        raise RunFailed("cyclictest --json output is in ns (-N); jitterlab reads microseconds")
    return [_thread(entry, i, n_buckets) for i, entry in enumerate(output.entries)]


def _thread(entry: object, i: int, n_buckets: int) -> ThreadResult:
    where = f"cyclictest --json output, thread {i}"
    try:
        cycles, lo, hi, cpu = (int(entry[k]) for k in ("cycles", "min", "max", "cpu"))
        avg = entry["avg"]
        avg_us = average_us(avg)
    except (KeyError, TypeError, ValueError):
        raise RunFailed(f"{where}: wants cycles, min, max, avg and cpu numbers") from None
    if cycles < 0 or (cycles and (avg_us is None or not math.isfinite(avg_us) or lo > hi)):
        raise RunFailed(f"{where}: inconsistent (cycles {cycles}, min {lo}, max {hi}, avg {avg})")
    counts, overflow = None, 0
    if "histogram" in entry:
        counts = np.zeros(n_buckets, dtype=np.int64)
        try:
            for bucket, n in entry["histogram"].items():
                counts[int(bucket)] = int(n)
        except (AttributeError, ValueError, IndexError, TypeError):
            raise RunFailed(f"{where}: histogram is not {{bucket (0..{n_buckets - 1}): count}}") from None
        overflow = cycles - int(counts.sum())
        if overflow < 0 or (counts < 0).any():
            raise RunFailed(f"{where}: histogram holds {int(counts.sum())} samples, over {cycles} cycles")
    if not cycles:
        return ThreadResult(0, 0, 0, None, cpu, counts, 0)
    return ThreadResult(cycles, lo, hi, avg_us, cpu, counts, overflow)


def parse_break(output: str) -> Break | None:
    """The '# Break thread: TID' / '# Break value: US' lines of a -b run (None: no break)."""
    value = re.search(r"^# Break value: (\d+)\s*$", output, re.MULTILINE)
    if value is None:
        return None
    tid = re.search(r"^# Break thread: (\d+)\s*$", output, re.MULTILINE)
    tids = re.search(r"^# Thread Ids:((?: \d+)+)\s*$", output, re.MULTILINE)
    order = [int(t) for t in tids.group(1).split()] if tids else []
    index = order.index(int(tid.group(1))) if tid and int(tid.group(1)) in order else None
    return Break(index, int(value.group(1)))


def metrics_of(threads: list[ThreadResult]) -> tuple[list[Metric], dict[str, Samples]]:
    """Per-thread min/mean/max (subject threadN) and the DESIGN latency metrics of all threads
    (subject "")."""
    metrics: list[Metric] = []
    series: dict[str, Samples] = {}
    woke = [t for t in threads if t.cycles]
    for i, t in enumerate(threads):
        subject = f"thread{i}"
        if t.cycles:
            metrics += [
                Metric("latency_min_ns", float(t.min_us * US), "ns", subject, "lower"),
                Metric("latency_mean_ns", round(t.avg_us * US, 1), "ns", subject, "lower"),
                Metric("latency_max_ns", float(t.max_us * US), "ns", subject, "lower"),
            ]
        metrics.append(Metric("latency_samples", float(t.cycles), "count", subject, "none"))
        if t.counts is not None:
            metrics.append(Metric("latency_overflow", float(t.overflow), "count", subject, "lower"))
            series[f"{subject}.histogram_1us"] = Samples(t.counts, HISTOGRAM_UNIT)
    if not woke:
        raise RunFailed("unmeasurable: no cyclictest thread woke up even once", status="unmeasurable")
    cycles = sum(t.cycles for t in woke)
    if all(t.counts is not None for t in woke):
        metrics += histogram_metrics(
            sum(t.counts for t in woke),
            overflow=sum(t.overflow for t in woke),
            min_ns=float(min(t.min_us for t in woke) * US),
            mean_ns=round(sum(t.avg_us * t.cycles for t in woke) / cycles * US, 1),
            max_ns=float(max(t.max_us for t in woke) * US),
        )
    return metrics, series


# --- the benchmark ---------------------------------------------------------------------------


@dataclass(frozen=True)
class CyclictestCell(Options):
    interval_ns: int = key("interval")
    priority: int = key("priority")
    threads: int = key("threads")
    policy: str = key("policy")
    affinity: str = key("affinity")  # "": the program CPUs of the placement
    mlock: bool = key("mlock")
    histogram_us: int = key("histogram")
    breaktrace_ns: int = key("breaktrace")  # 0: off


class Cyclictest(BenchmarkBase):
    headline = ("latency_max_ns", "latency_p99_ns", "latency_p50_ns", "latency_overflow")
    samples = LATENCIES

    params = (
        Param("interval", "time between wake-ups of each thread (-i)", duration(US), '["1ms", "200us"]',
              default="1ms", show=_show_duration),
        Param("priority", "SCHED_FIFO/RR priority of the threads (-p)", integer(1, 99), "95", default=95),
        Param("threads", "measurement threads (-t)", integer(1, 1024), "1", default=1),
        Param("policy", "scheduling policy of the threads", choice("fifo", "rr", "other"), '"fifo"',
              default="fifo"),
        Param("affinity", 'CPUs of the threads, round robin (-a); "" = the program CPUs of the placement',
              _affinity, '"1"', default=""),
        Param("mlock", "lock memory (-m)", boolean, "true", default=True),
        Param("histogram", "histogram range in µs (1 µs buckets, -h)", integer(1, 1_000_000), "1000",
              default=1000),
        Param("breaktrace", 'stop at the first latency above this and keep the kernel trace (-b); "off"',
              _breaktrace, '"500us"', default="off", show=_show_duration),
    )
    record = CyclictestCell
    metrics = latency_names(histogram=True)  # per thread: min, mean, max, samples, overflow among them

    def metric_names(self, cell) -> frozenset[str]:
        if not CyclictestCell.of_cell(cell).breaktrace_ns:
            return super().metric_names(cell)
        return super().metric_names(cell) | {"breaktrace_fired", "breaktrace_latency_ns"}

    def tools(self, cell) -> dict[str, str]:
        return {"cyclictest": "rt-tests"}

    def needs_rt(self, cell) -> bool:
        return cell.param("policy") in ("fifo", "rr")

    def check(self, cell, settings, where) -> None:
        interval = CyclictestCell.of_cell(cell).interval_ns
        if interval % US:
            raise where.key("interval").error(f"cyclictest takes whole microseconds; {format_ns(interval)} "
                                              "is not one")

    def label(self, cell) -> str:
        p = CyclictestCell.of_cell(cell)
        sched = f"{p.policy}:{p.priority}" if p.policy != "other" else p.policy
        text = f"cyclictest {format_ns(p.interval_ns)} {sched} x{p.threads}"
        if p.breaktrace_ns:
            text += f" break>{format_ns(p.breaktrace_ns)}"
        return f"{text} {cell.load}"

    def execute(self, ctx: RunContext) -> Measurement:
        cell = ctx.cell
        warnings: list[Warning_] = []
        trace: TraceSession | None = None
        p = CyclictestCell.of_cell(cell)
        if p.breaktrace_ns:
            trace = TraceSession(ctx.target)
            try:
                trace.open()
            except TraceUnavailable as exc:
                trace = None
                warnings.append(
                    Warning_(
                        f"breaktrace is off for this run: {exc.reason}; the latencies were measured "
                        "over the whole run without stopping at the threshold",
                        "run as root on a kernel with ftrace (CONFIG_FTRACE) and tracefs, or remove "
                        "breaktrace from the matrix",
                    )
                )
        try:
            argv, more = self._argv(ctx, breaktrace=trace is not None)
            warnings += more
            rc, output = run_tool(ctx, argv, "cyclictest", "cyclictest.log")
            fired = parse_break(output.decode(errors="replace")) if trace else None
            trace_tail = trace.tail() if trace and fired else b""
        finally:
            if trace is not None:
                trace.close()
        if rc != 0:
            raise failed("cyclictest", rc, output, "cyclictest.log")
        raw = fetch(ctx, "cyclictest.json")
        try:
            threads = parse_json(raw, p.histogram_us)
            metrics, series = metrics_of(threads)
        except RunFailed as exc:
            raise RunFailed(
                exc.reason, exc.status, {"cyclictest.json": raw, "cyclictest.log": output}
            ) from None
        warnings += _warnings(threads, p.histogram_us)
        attachments = {}
        if trace is not None:
            metrics.append(Metric("breaktrace_fired", float(fired is not None), "bool", "", "none"))
        if fired is not None:
            subject = f"thread{fired.thread}" if fired.thread is not None else ""
            metrics.append(Metric("breaktrace_latency_ns", float(fired.value_us * US), "ns", subject,
                                  "lower"))
            attachments["trace-tail.txt"] = trace_tail
            done = sum(t.cycles for t in threads)
            warnings.append(
                Warning_(
                    f"breaktrace fired: a wake-up was {fired.value_us} µs late (threshold "
                    f"{_show_duration(cell.param('breaktrace'))}), so the run stopped after {done} "
                    "wake-ups; its latency figures cover only that part",
                    "read the kernel trace attached to the run (trace-tail.txt) for what ran just before",
                )
            )
        return Measurement(metrics=metrics, series=series, warnings=warnings, attachments=attachments)

    def _argv(self, ctx: RunContext, *, breaktrace: bool) -> tuple[list[str], list[Warning_]]:
        p, settings = CyclictestCell.of_cell(ctx.cell), ctx.settings
        interval_ns = p.interval_ns
        loops = max(1, -(-settings.duration_ns // interval_ns))
        json_path, hist_path = f"{ctx.scratch}/cyclictest.json", f"{ctx.scratch}/histogram.txt"
        if max(len(json_path), len(hist_path)) > _MAX_PATH:
            raise RunFailed(f"cyclictest cannot write {json_path}: paths over {_MAX_PATH} bytes are cut; "
                            "give the target a shorter workdir")
        argv = [
            "cyclictest", "--quiet", f"--interval={interval_ns // US}", f"--loops={loops}",
            # --distance=0: every thread wakes at the same interval (cyclictest's default adds
            # 500 us per thread, which would make the threads' figures incomparable)
            f"--threads={p.threads}", "--distance=0", f"--histogram={p.histogram_us}",
            f"--histfile={hist_path}", f"--json={json_path}",
        ]  # fmt: skip
        warnings = []
        policy = p.policy
        if policy != "other" and not ctx.rt_permitted:
            warnings.append(
                Warning_(
                    f"the target does not permit SCHED_{policy.upper()}: cyclictest ran as SCHED_OTHER",
                    "run as root or grant CAP_SYS_NICE",
                )
            )
            policy = "other"
        argv.append(f"--policy={policy}")
        if policy != "other":
            argv.append(f"--priority={p.priority}")
        if p.mlock:
            argv.append("--mlockall")
        cpus = p.affinity or ",".join(map(str, ctx.placement.program_cpus or ()))
        if cpus:
            argv.append(f"--affinity={cpus}")
        if breaktrace:
            argv += [f"--breaktrace={p.breaktrace_ns // US}", "--tracemark"]
        return argv, warnings


def _warnings(threads: list[ThreadResult], n_buckets: int) -> list[Warning_]:
    warnings = []
    idle = [str(i) for i, t in enumerate(threads) if not t.cycles]
    if idle:
        warnings.append(
            Warning_(
                f"cyclictest thread(s) {', '.join(idle)} never woke up; the latency figures leave them out",
                "give the threads CPUs of their own (affinity) or a longer campaign.duration",
            )
        )
    overflow = sum(t.overflow for t in threads)
    if overflow:
        warnings.append(
            Warning_(
                f"{overflow} wake-up(s) were later than the histogram's {n_buckets} µs; quantiles among "
                "them are given as the maximum",
                "raise histogram in the matrix",
            )
        )
    return warnings


BENCHMARKS.add(
    "cyclictest",
    "rt-tests cyclictest: wake-up latency of periodic real-time threads (histogram, per thread); "
    "optional breaktrace with the kernel trace",
    Cyclictest(),
)
