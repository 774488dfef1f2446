"""switch: task-switch latency — from a higher-priority task becoming runnable to it running,
while lower-priority tasks occupy the CPU (the quantity of the RT wiki's preempt-test).

The C program switch-latency runs `threads` SCHED_FIFO threads on one CPU at priorities
priority, priority+1, ...; every `interval` the lowest starts a chain in which each running
thread wakes the next higher one (a semaphore post), which must preempt it at once. One sample
is the time from the post to the woken thread's first instruction: threads-1 samples per chain.
A waker that got back from the post before the woken thread ran was not preempted: counted, and
with SCHED_FIFO on one CPU it means the kernel did not honour the priorities. With
`sibling_load`, SCHED_OTHER threads spin on the CPU's hyperthread siblings for the whole run (they
share the core's execution units); a CPU without siblings makes the cell unavailable.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.latency import latency_metrics, latency_names
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, fetch, run_tool
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, auto, boolean, duration, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import Samples
from jitterlab.model.traits import LATENCIES
from jitterlab.model.units import format_ns

PROGRAM = "switch-latency"
OUT = "switch.out"
LOG = "switch.log"
_HEADER = "# jitterlab-switch v1 "
_END = re.compile(r"^# end cycles=(\d+) samples=(\d+) not_preempted=(\d+) dropped=(\d+) busy_loops=(\d+)$")
_SAMPLES = re.compile(r"(?:\d+\n)*")


@dataclass(frozen=True)
class SwitchResult:
    """What switch-latency wrote: samples (ns) and its counts."""

    samples_ns: np.ndarray
    cycles: int
    not_preempted: int
    dropped: int
    busy_loops: int
    header: dict[str, str]


def parse_output(text: str) -> SwitchResult:
    """switch-latency's output file; RunFailed (with the text attached) if it is not whole."""

    def bad(why: str) -> RunFailed:
        return RunFailed(f"{PROGRAM} output does not parse: {why}; expected a '{_HEADER.strip()}' header, "
                         "one sample in ns per line and a '# end cycles=.. samples=..' line",
                         attachments={OUT: text.encode()})

    head, _, rest = text.partition("\n")
    if not head.startswith(_HEADER):
        raise bad(f"first line is {head[:80]!r}")
    header = dict(f.split("=", 1) for f in head[len(_HEADER):].split() if "=" in f)
    body, _, last = rest.rstrip("\n").rpartition("\n")
    body = body + "\n" if body else ""
    end = _END.match(last)
    if end is None:
        raise bad(f"the '# end' line is missing or garbled (last line {last[:80]!r}); cut short?")
    if not _SAMPLES.fullmatch(body):
        raise bad("a sample line is not a whole number of ns")
    cycles, n, not_preempted, dropped, busy = map(int, end.groups())
    samples = np.array(body.split(), dtype=np.int64) if body else np.zeros(0, dtype=np.int64)
    if len(samples) != n:
        raise bad(f"{len(samples)} sample lines for samples={n}")
    return SwitchResult(samples, cycles, not_preempted, dropped, busy, header)


def result_metrics(result: SwitchResult) -> list[Metric]:
    metrics = latency_metrics(result.samples_ns)
    metrics += [
        Metric("not_preempted", float(result.not_preempted), "count", "", "lower"),
        Metric("cycles", float(result.cycles), "count", "", "none"),
    ]
    return metrics


def result_warnings(result: SwitchResult) -> list[Warning_]:
    warnings = []
    if result.header.get("policy") != "fifo":
        warnings.append(Warning_(
            f"{PROGRAM} ran as SCHED_OTHER: the woken thread does not outrank the waker, so the figures "
            "are wake-up times of normal tasks, not task-switch latency",
            "run as root or grant CAP_SYS_NICE"))
    elif result.not_preempted:
        warnings.append(Warning_(
            f"{result.not_preempted} wake-up(s) of a higher-priority SCHED_FIFO thread did not preempt "
            "the waker on its CPU",
            "look for RT throttling (sysctl kernel.sched_rt_runtime_us) or a kernel that defers "
            "preemption (preempt=none/voluntary)"))
    if result.dropped:
        warnings.append(Warning_(f"{result.dropped} samples did not fit the program's buffer and are missing",
                                 "use a longer interval or a shorter campaign.duration"))
    return warnings


def _cpu(value: object, where: str) -> ParamValue:
    return auto(integer(0, 4095))(value, where)


@dataclass(frozen=True)
class SwitchCell(Options):
    threads: int
    cpu: int | str  # a CPU, or "auto"
    priority: int
    interval_ns: int = key("interval")
    sibling_load: bool = key("sibling_load")


class Switch(BenchmarkBase):
    headline = ("latency_max_ns", "latency_p99_ns", "latency_p50_ns", "not_preempted")
    metrics = (*latency_names(), "cycles", "cpu")  # result_metrics', and the CPU measured
    samples = LATENCIES

    params = (
        Param("threads", "SCHED_FIFO threads in the chain, one priority apart (threads-1 samples per "
              "interval)", integer(2, 64), "[2, 8]", default=4),
        Param("cpu", 'the CPU of every thread; "auto": the first program CPU, else the last CPU',
              _cpu, "3", default="auto"),
        Param("priority", "priority of the lowest thread; the others are above it", integer(1, 98),
              "80", default=80),
        Param("interval", "time between chains", duration(10_000), '"1ms"', default="1ms",
              show=lambda v: v if isinstance(v, str) else format_ns(int(v))),
        Param("sibling_load", "spin SCHED_OTHER threads on the CPU's hyperthread siblings", boolean,
              "[false, true]", default=False),
    )
    record = SwitchCell

    def programs(self, cell) -> dict[str, str]:
        return {PROGRAM: ""}

    def needs_rt(self, cell) -> bool:
        return True

    def check(self, cell, settings, where) -> None:
        p = SwitchCell.of_cell(cell)
        top = p.priority + p.threads - 1
        if top > 99:
            raise where.key("priority").error(f"{p.threads} threads from priority {p.priority} reach {top}, "
                                              "above 99; lower priority or threads")

    def label(self, cell) -> str:
        p = SwitchCell.of_cell(cell)
        text = f"switch x{p.threads} fifo:{p.priority} cpu {p.cpu} every {format_ns(p.interval_ns)}"
        return f"{text}{' siblings busy' if p.sibling_load else ''} {cell.load}"

    def execute(self, ctx: RunContext) -> Measurement:
        p, target = SwitchCell.of_cell(ctx.cell), ctx.target
        cpu = measured_cpu(ctx)
        argv = [
            f"{ctx.bindir}/c/{PROGRAM}", "--threads", str(p.threads), "--cpu", str(cpu),
            "--prio", str(p.priority), "--interval-ns", str(p.interval_ns),
            "--duration-ns", str(ctx.settings.duration_ns), "--warmup-ns", str(ctx.settings.warmup_ns),
            "--out", f"{ctx.scratch}/{OUT}",
        ]  # fmt: skip
        if p.sibling_load:
            argv += ["--busy-cpus", ",".join(map(str, siblings(target, cpu)))]
        if not ctx.rt_permitted:
            argv.append("--allow-no-rt")
        rc, log = run_tool(ctx, argv, PROGRAM, LOG)
        if rc != 0:
            raise failed(PROGRAM, rc, log, LOG)
        raw = fetch(ctx, OUT)
        try:
            result = parse_output(raw.decode(errors="replace"))
            if p.sibling_load and not result.busy_loops:
                raise RunFailed(f"{PROGRAM}: the sibling load never ran (busy_loops=0): the run did not "
                                "measure what the cell says")
            metrics = result_metrics(result)
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {OUT: raw, LOG: log}) from None
        metrics.append(Metric("cpu", float(cpu), "cpu", "", "none"))
        return Measurement(metrics=metrics, series={"switch": Samples(result.samples_ns, "ns")},
                           warnings=result_warnings(result))


def measured_cpu(ctx: RunContext) -> int:
    """The cell's `cpu` key: a number, or "auto": the first program CPU, else the last online one."""
    chosen = ctx.cell.param("cpu")
    if chosen != "auto":
        return int(chosen)
    if ctx.placement.program_cpus:
        return ctx.placement.program_cpus[0]
    online = ctx.target.run(["cat", "/sys/devices/system/cpu/online"]).stdout.strip()
    cpus = cpu_list(online)
    if not cpus:
        raise RunFailed(f"cannot read the online CPUs (/sys/devices/system/cpu/online: {online!r})")
    return cpus[-1]


def cpu_list(text: str) -> list[int]:
    """"0-3,8" -> [0, 1, 2, 3, 8]; [] for text that is not a CPU list."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return []
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


def siblings(target, cpu: int) -> list[int]:
    """The other hardware threads of `cpu`'s core; RunFailed "unavailable" when it has none."""
    path = f"/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list"
    done = target.run(["cat", path])
    others = [c for c in cpu_list(done.stdout) if c != cpu] if done.ok else []
    if not others:
        seen = done.stdout.strip() if done.ok else "absent"
        raise RunFailed(f"CPU {cpu} has no hyperthread sibling to load ({path}: {seen}); SMT is off or "
                        "the CPU has none", status="unavailable")
    return others


BENCHMARKS.add(
    "switch",
    "task-switch latency: a higher-priority SCHED_FIFO thread woken while lower ones run on its CPU "
    "(own C program; optional busy hyperthread siblings)",
    Switch(),
)
