"""ipc-latency: how long a SCHED_FIFO thread waits for a message from another, per mechanism —
rt-tests' ptsematest (POSIX mutex), sigwaittest (a signal taken with sigwait) and pmqtest
(POSIX message queue).

Each tool runs `pairs` sender/receiver pairs; every `interval` a sender timestamps and sends, its
receiver timestamps on receipt. jitterlab runs `duration / interval` loops (-l), all pairs at the
same interval (-d 0) on one CPU (-a), and reads --json (analysis.rttests, as for cyclictest). The
tools report only min, avg and max per pair, in whole microseconds (no histogram, no percentiles):
the metrics are exactly those. They always ask for SCHED_FIFO (there is no SCHED_OTHER mode), so
a target that refuses it makes the cell unavailable.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from jitterlab.analysis.rttests import average_us, read_json
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.benchmarks.switch import measured_cpu
from jitterlab.measure.tools.run import fetch, run_tool
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, auto, choice, duration, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.units import format_ns
from jitterlab.targets.processes import describe_exit

US = 1000
TOOLS = {"mutex": "ptsematest", "signal": "sigwaittest", "mqueue": "pmqtest"}
LOG, JSON_OUT = "ipc.log", "ipc.json"
_MAX_PATH = 255
_REASON = re.compile(r"^(ERROR:.*|Unable to .*|.*[Ff]ailed.*)$", re.MULTILINE)


@dataclass(frozen=True)
class Pair:
    """One sender/receiver pair: samples and latencies in whole µs as the tool reports them."""

    samples: int
    min_us: int
    avg_us: float | None
    max_us: int
    cpu: int


def parse_json(raw: bytes, tool: str) -> list[Pair]:
    """Pairs of the tool's --json output, in order; RunFailed if it is not whole."""
    return [_pair(entry, tool, i) for i, entry in enumerate(read_json(raw, tool, "pair").entries)]


def _pair(entry: object, tool: str, i: int) -> Pair:
    where = f"{tool} --json output, pair {i}"
    try:
        sender, receiver = entry["sender"], entry["receiver"]  # type: ignore[index]
        samples, cpu = int(sender["samples"]), int(receiver["cpu"])
        lo, hi, avg = int(receiver["min"]), int(receiver["max"]), receiver["avg"]
        avg_us = average_us(avg)
    except (KeyError, TypeError, ValueError):
        raise RunFailed(f"{where}: wants sender.samples and receiver min, avg, max and cpu") from None
    if samples < 0 or (samples and (avg_us is None or not math.isfinite(avg_us) or not lo <= avg_us <= hi)):
        raise RunFailed(f"{where}: inconsistent (samples {samples}, min {lo}, avg {avg}, max {hi})")
    return Pair(samples, lo, avg_us, hi, cpu)


def pair_metrics(pairs: list[Pair]) -> list[Metric]:
    """Per pair (subject pairN) and over all pairs (subject ""): min, sample-weighted mean, max in ns."""
    metrics: list[Metric] = []
    for i, p in enumerate(pairs):
        if p.samples:
            metrics += _latency(p.min_us, p.avg_us, p.max_us, f"pair{i}")  # type: ignore[arg-type]
        metrics.append(Metric("latency_samples", float(p.samples), "count", f"pair{i}", "none"))
    measured = [p for p in pairs if p.samples]
    if not measured:
        raise RunFailed("unmeasurable: no message reached a receiver", status="unmeasurable")
    n = sum(p.samples for p in measured)
    mean = sum(p.avg_us * p.samples for p in measured) / n  # type: ignore[operator]
    metrics += _latency(min(p.min_us for p in measured), mean, max(p.max_us for p in measured), "")
    metrics.append(Metric("latency_samples", float(n), "count", "", "none"))
    return metrics


def _latency(lo_us: int, avg_us: float, hi_us: int, subject: str) -> list[Metric]:
    return [
        Metric("latency_min_ns", float(lo_us * US), "ns", subject, "lower"),
        Metric("latency_mean_ns", round(avg_us * US, 1), "ns", subject, "lower"),
        Metric("latency_max_ns", float(hi_us * US), "ns", subject, "lower"),
    ]


def failure(tool: str, rc: int, output: bytes) -> RunFailed:
    """The tool's own reason (its ERROR:/Unable line, not the usage text after it), output attached."""
    text = output.decode(errors="replace")
    found = _REASON.search(text)
    lines = text.strip().splitlines()
    reason = found.group(1).strip() if found else lines[-1].strip() if lines else "(no output)"
    return RunFailed(f"{tool} failed ({describe_exit(rc)}): {reason}", attachments={LOG: output})


def _cpu(value: object, where: str) -> ParamValue:
    return auto(integer(0, 4095))(value, where)


def _interval(value: object, where: str) -> ParamValue:
    ns = duration(10 * US, 10**9)(value, where)
    if int(ns) % US:
        raise UserError(f"{where}: the rt-tests take whole microseconds; {format_ns(int(ns))} is not one")
    return ns


@dataclass(frozen=True)
class IpcCell(Options):
    mechanism: str
    pairs: int
    priority: int
    interval_ns: int = key("interval")
    cpu: int | str = key("cpu")  # a CPU, or "auto"


class IpcLatency(BenchmarkBase):
    headline = ("latency_max_ns", "latency_mean_ns", "latency_min_ns")
    metrics = ("latency_samples", "cpu")  # per pair and over all (pair_metrics), and the CPU measured

    params = (
        Param("mechanism", "mutex (ptsematest), signal (sigwaittest) or mqueue (pmqtest)",
              choice(*TOOLS), '["mutex", "signal", "mqueue"]', default="mutex"),
        Param("pairs", "sender/receiver pairs (-t), each one priority below the last", integer(1, 64), "2",
              default=1),
        Param("priority", "SCHED_FIFO priority of the first pair (-p)", integer(1, 99), "90", default=90),
        Param("interval", "time between messages of each pair (-i, whole µs)", _interval, '"1ms"',
              default="1ms", show=lambda v: v if isinstance(v, str) else format_ns(int(v))),
        Param("cpu", 'the CPU of every thread (-a); "auto": the first program CPU, else the last CPU',
              _cpu, "1", default="auto"),
    )
    record = IpcCell

    def tools(self, cell) -> dict[str, str]:
        return {TOOLS[IpcCell.of_cell(cell).mechanism]: "rt-tests"}

    def needs_rt(self, cell) -> bool:
        return True

    def check(self, cell, settings, where) -> None:
        p = IpcCell.of_cell(cell)
        if p.pairs > p.priority:
            raise where.key("pairs").error(f"{p.pairs} pairs from priority {p.priority} go below priority 1; "
                                           "raise priority or lower pairs")

    def label(self, cell) -> str:
        p = IpcCell.of_cell(cell)
        return (f"ipc-latency {p.mechanism} x{p.pairs} fifo:{p.priority} every {format_ns(p.interval_ns)} "
                f"cpu {p.cpu} {cell.load}")

    def execute(self, ctx: RunContext) -> Measurement:
        p = IpcCell.of_cell(ctx.cell)
        tool = TOOLS[p.mechanism]
        if not ctx.rt_permitted:
            raise RunFailed(f"{tool} always runs SCHED_FIFO, which the target does not permit (it has no "
                            "SCHED_OTHER mode)", status="unavailable")
        json_path = f"{ctx.scratch}/{JSON_OUT}"
        if len(json_path) > _MAX_PATH:
            raise RunFailed(f"{tool} cannot write {json_path}: paths over {_MAX_PATH} bytes are cut; "
                            "give the target a shorter workdir")
        interval_ns = p.interval_ns
        loops = max(1, -(-ctx.settings.duration_ns // interval_ns))
        cpu = measured_cpu(ctx)
        argv = [tool, "-q", f"--prio={p.priority}", f"--interval={interval_ns // US}",
                f"--loops={loops}", "--distance=0", f"--threads={p.pairs}", f"--affinity={cpu}",
                f"--json={json_path}"]
        rc, output = run_tool(ctx, argv, tool, LOG)
        if rc != 0:
            raise failure(tool, rc, output)
        raw = fetch(ctx, JSON_OUT)
        try:
            pairs = parse_json(raw, tool)
            metrics = pair_metrics(pairs)
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {JSON_OUT: raw, LOG: output}) from None
        warnings = []
        short = [str(i) for i, p in enumerate(pairs) if p.samples < loops]
        if short:
            warnings.append(Warning_(
                f"pair(s) {', '.join(short)} of {tool} took fewer than the {loops} samples asked for (the "
                "tool stops when the first pair is done)",
                "compare pairs by their own latency_samples, or use pairs = 1"))
        metrics.append(Metric("cpu", float(cpu), "cpu", "", "none"))
        return Measurement(metrics=metrics, warnings=warnings)


BENCHMARKS.add(
    "ipc-latency",
    "rt-tests ptsematest / sigwaittest / pmqtest: how long a SCHED_FIFO thread waits for a mutex, "
    "a signal or a message queue (min, mean, max)",
    IpcLatency(),
)
