"""A traced run (a cell with trace = "sched", docs/tracing.md): the kernel trace recorded around the
measure phase, kept as the run's trace file, and its late periods explained from it.

- `refusal(target)`: why the target cannot trace (tracing.recorder.check); preflight makes such cells
  unavailable and `run --dry-run` prints it, so that no run fails for it;
- `recording(ctx)`: the recorder started right before the measure phase and stopped after it; its
  instance, mount and restore record are undone on every path (a failed run, Ctrl-C);
- `explained(ctx, raw, measurement)`: the trace file (tracing/datfile.py) and `explained.json`
  (model/explanation.py) as the run's attachments, and warnings: the run was traced, what the
  kernel dropped, why nothing is explained where nothing is.

The edges are put on the trace's clock (CLOCK_MONOTONIC of the target) DIRECTly where the probe reads
that clock (a probe on the target, or the program's own log), or through the PROGRAM_LOG where an
outside probe's capture was aligned with the program's toggles (probes/aligned.py; the residual is
the alignment's largest spread). Where neither holds, nothing is explained and `refused` says why.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from jitterlab import plugins
from jitterlab.analysis import attribution
from jitterlab.analysis.alignment import FIT_NAMES
from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS
from jitterlab.analysis.squarewave import period_split
from jitterlab.analysis.watched import PIN_WATCHED
from jitterlab.campaign.file import Campaign
from jitterlab.measure.benchmarks.base import Measurement
from jitterlab.measure.context import RunContext
from jitterlab.measure.squarewave.cell import WaveCell, traced
from jitterlab.measure.squarewave.impls.base import PROGRAM_PID
from jitterlab.measure.squarewave.probes.base import PROBES
from jitterlab.model import explanation as ex
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Warning_
from jitterlab.model.series import EdgeSeries, blind_spans
from jitterlab.model.traits import OWN_VIEW
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import VirtualMachine, has
from jitterlab.targets.registry import declare
from jitterlab.tracing import datfile, reader
from jitterlab.tracing.recorder import RawTrace, Recorder, check

WORST_N = 10  # the run's latest periods explained, besides those that break the envelope rule
ENVELOPE_ERROR = max(DEFAULT_THRESHOLDS)  # a period later than this share of the period breaks it
MAX_ENVELOPE = 500  # at most this many of those (the latest): the attribution costs per period
# The exit latencies (µs) of every CPU's cpuidle states, then whether the kernel lists CPUs at all
_IDLE_EXIT = ("sh", "-c", "cat /sys/devices/system/cpu/cpu*/cpuidle/state*/latency 2>/dev/null; "
              "if [ -d /sys/devices/system/cpu/cpu0 ]; then echo cpus; fi; exit 0")
# A CPU with no cpuidle state (cpuidle/current_driver "none", or no CONFIG_CPU_IDLE: a VM under TCG,
# many guests) idles in the kernel's default idle routine, the architecture's halt: HLT (or MWAIT C1)
# on x86, WFI on Arm. The kernel's own drivers give that state an exit latency of 1 µs (Arm's WFI,
# ARM_CPUIDLE_WFI_STATE in arch/arm/include/asm/cpuidle.h) to 2 µs (intel_idle's C1, MWAIT 0x00):
# the larger is the bound. In a guest the rest of a longer wait is the hypervisor's, unaccounted.
DEFAULT_IDLE_EXIT_NS = 2_000


def refusal(target: Target) -> str | None:
    """Why `target` cannot record a trace, in one line naming what to do; None when it can."""
    why = check(target)
    return None if why is None else f"cannot trace on target {target.name!r}: {why}"


@dataclass
class Trace:
    """What recording() leaves once the measure phase ended well: the fetched recording."""

    raw: RawTrace | None = None


@contextlib.contextmanager
def recording(ctx: RunContext) -> Iterator[Trace]:
    """Record the kernel trace while the block (the measure phase) lasts, when the cell asks."""
    trace = Trace()
    if not traced(ctx.cell):
        yield trace
        return
    rec = Recorder(ctx.target, ctx.scratch, duration_ns=ctx.settings.duration_ns,
                   period_ns=WaveCell.of_cell(ctx.cell).period_ns)
    rec.start()  # TraceUnavailable (a RunFailed, unavailable) with nothing left changed
    try:
        yield trace
        trace.raw = rec.stop(ctx.local_dir / "trace")
    except BaseException:
        rec.close()  # what could not be undone stays in its restore record, for the next sweep
        raise
    left = rec.close()
    if left:  # the restore record stays on the target: the next campaign's sweep carries it out
        raise RunFailed(f"tracing could not be put back on target {ctx.target.name!r}: {'; '.join(left)}")


def kept_after_failure(ctx: RunContext, raw: RawTrace, exc: RunFailed) -> None:
    """A traced run whose analysis failed (unmeasurable) keeps its trace file, which may say why."""
    with contextlib.suppress(RunFailed):  # no trace-cmd here: the run's own reason is what it fails with
        exc.attachments[ex.TRACE_FILE] = datfile.build(raw, ctx.local_dir / ex.TRACE_FILE).read_bytes()


def explained(ctx: RunContext, raw: RawTrace, measurement: Measurement) -> Measurement:
    """The measurement with the trace file, the explanation and the traced run's warnings."""
    dat_path = ctx.local_dir / ex.TRACE_FILE
    warnings = [*raw.warnings()]
    attachments: dict[str, bytes] = {}
    try:
        datfile.build(raw, dat_path)
        attachments[ex.TRACE_FILE] = dat_path.read_bytes()
        warnings.append(Warning_(
            'the run was traced (trace = "sched"): its kernel trace is the run\'s attachment '
            f"{ex.TRACE_FILE}",
            f"trace-cmd report RESULTS/attachments/RUN_ID/{ex.TRACE_FILE}, or open it with kernelshark"))
        explanation = explain(ctx, dat_path, raw, measurement)
    except (RunFailed, UserError) as exc:
        why = exc.reason if isinstance(exc, RunFailed) else str(exc)
        warnings.append(Warning_('the run was traced (trace = "sched") but its trace could not be kept: '
                                 f"{why}",
                                 "apt install trace-cmd libtracecmd-dev libtraceevent-dev on this machine"))
        explanation = ex.Explanation(refused=why, lost_events=raw.lost)
    if explanation.refused and ex.TRACE_FILE in attachments:
        warnings.append(Warning_(f"the trace explains no late period: {explanation.refused}",
                                 f"read the trace itself ({ex.TRACE_FILE})"))
    attachments[ex.ATTACHMENT] = json.dumps(explanation.as_json(), sort_keys=True).encode()
    return replace(measurement, warnings=[*measurement.warnings, *warnings],
                   attachments={**measurement.attachments, **attachments})


@dataclass(frozen=True)
class _Edges:
    series: EdgeSeries
    blind: np.ndarray | None
    aligned_by: str
    residual_ns: int


def _edges(ctx: RunContext, m: Measurement) -> _Edges | str:
    """The edges the run's metrics are made of, on the trace's clock; or why there are none."""
    probe = WaveCell.of_cell(ctx.cell).probe
    kind = PROBES.get(probe, "matrix.probe")
    series = m.series.get(probe if kind.independent else OWN_VIEW)
    if not isinstance(series, EdgeSeries) or len(series) < 3:
        return f"the {probe} probe kept no edges of its own to put on the trace's clock"
    blind = m.series.get(f"{probe}.blind")
    spans = blind_spans(blind) if isinstance(blind, EdgeSeries) and len(blind) else None
    if not kind.independent or kind.location == "target":  # the target's CLOCK_MONOTONIC, as the trace's
        return _Edges(series, spans, ex.DIRECT, 0)
    metrics = {(x.subject, x.name): x.value for x in m.metrics}
    if metrics.get((probe, PIN_WATCHED)) != 1:
        return (f"the {probe} probe's edges were not aligned with the program's own ({PIN_WATCHED} is "
                "not 1): "
                "no mapping from its clock to the trace's")
    spread = metrics.get((probe, FIT_NAMES[3]))
    return _Edges(series, spans, ex.PROGRAM_LOG, int(spread) if spread is not None else 0)


def _program_pid(ctx: RunContext) -> int | None:
    path = ctx.local_dir / PROGRAM_PID
    text = path.read_text().strip() if path.exists() else ""
    return int(text) if text.isdigit() else None


def idle_exit_ns(target: Target) -> int | None:
    """How long the target's CPUs may take to leave idle (ns): its deepest cpuidle state's exit
    latency; DEFAULT_IDLE_EXIT_NS where it has no cpuidle state (the kernel's default halt); None
    where the kernel lists no CPU (not known: no bound)."""
    words = target.run(list(_IDLE_EXIT)).stdout.split()
    latencies_us = [int(w) for w in words if w.isdigit()]
    if latencies_us:
        return max(latencies_us) * 1000
    return DEFAULT_IDLE_EXIT_NS if "cpus" in words else None


def chosen(rel_error: np.ndarray, used: np.ndarray, *, worst_n: int = WORST_N) -> dict[int, str]:
    """The periods to explain, by index: the `worst_n` latest of the used ones (WORST) and every
    other one later than ENVELOPE_ERROR of the period (ENVELOPE, at most MAX_ENVELOPE of them)."""
    late = np.flatnonzero(used & (rel_error > 0))
    by_error = late[np.argsort(-rel_error[late], kind="stable")]
    out = {int(i): ex.WORST for i in by_error[:worst_n]}
    breaking = [int(i) for i in by_error[worst_n:] if rel_error[i] > ENVELOPE_ERROR]
    out.update({i: ex.ENVELOPE for i in breaking[:MAX_ENVELOPE]})
    return dict(sorted(out.items()))


def explain(ctx: RunContext, dat: Path, raw: RawTrace, m: Measurement) -> ex.Explanation:
    """The run's late periods explained from its trace file `dat` (module doc)."""
    vm = has(ctx.target, VirtualMachine)
    cpus = ctx.placement.program_cpus
    base = ex.Explanation(lost_events=raw.lost, program_cpus=tuple(cpus) if cpus else None,
                          emulated=vm.vm_accel == "tcg" if vm is not None else False)
    edges = _edges(ctx, m)
    if isinstance(edges, str):
        return replace(base, refused=edges)
    pid = _program_pid(ctx)
    if pid is None:
        return replace(base, refused=f"impl {ctx.cell.param('impl')} runs no program whose pid jitterlab "
                                     "recorded: its tasks cannot be told apart in the trace")
    period_ns = WaveCell.of_cell(ctx.cell).period_ns
    split = period_split(edges.series.t_ns, edges.series.level, period_ns, warmup_ns=ctx.settings.warmup_ns,
                         blind=edges.blind)
    which = chosen(split.rel_error, split.used)
    events = reader.read(dat)
    base = replace(base, aligned_by=edges.aligned_by, residual_ns=edges.residual_ns, events=len(events),
                   pids=(pid,))
    if not which:
        return base
    late = [attribution.LatePeriod(int(split.start_ns[i]) + period_ns, int(split.end_ns[i]), frozenset({pid}),
                                   cpus[0] if cpus else 0) for i in which]
    found = attribution.attribute(events, late, idle_exit_ns=idle_exit_ns(ctx.target))
    worst = max(range(len(found)), key=lambda k: found[k].lateness_ns)
    periods = tuple(_period(i, how, a, spans=k == worst)
                    for k, ((i, how), a) in enumerate(zip(which.items(), found, strict=True)))
    return replace(base, periods=periods)


def _period(index: int, how: str, a: attribution.Attribution, *, spans: bool) -> ex.ExplainedPeriod:
    kept = tuple(ex.Span(start_ns=s.start_ns, end_ns=s.end_ns, cpu=s.cpu, cause=s.cause, who=who(s.who))
                 for s in a.segments) if spans else None
    return ex.ExplainedPeriod(
        index=index, due_ns=a.period.due_ns, edge_ns=a.period.edge_ns, chosen=how,
        parts=tuple(ex.Part(cause=p.cause, duration_ns=p.duration_ns, who=who(p.who)) for p in a.parts),
        remainder_ns=a.remainder_ns, spans=kept)


def who(w: attribution.Who) -> ex.Who | None:
    """The attribution's who as the run keeps it, with how a person reads it."""
    if isinstance(w, attribution.Task):
        if w.idle:
            return ex.Who(kind="task", text="idle", comm=w.comm, pid=0)
        shown = f"{w.policy} {w.priority}" if w.policy != "SCHED_OTHER" else f"SCHED_OTHER nice {w.priority}"
        return ex.Who(kind="task", text=f"{w.comm} [{shown}] pid {w.pid}", comm=w.comm, pid=w.pid,
                      policy=w.policy, priority=w.priority)
    if isinstance(w, attribution.Irq):
        text = "hrtimer callback" if w.number < 0 else f"IRQ {w.number} {w.name}".rstrip()
        return ex.Who(kind="irq", text=text, irq=w.number, irq_name=w.name)
    if isinstance(w, attribution.Softirq):
        return ex.Who(kind="softirq", text=f"softirq {w.name}", softirq=w.name)
    if isinstance(w, attribution.Move):
        return ex.Who(kind="move", text=f"moved from CPU {w.from_cpu} to CPU {w.to_cpu}", from_cpu=w.from_cpu,
                      to_cpu=w.to_cpu)
    return None


def untraceable(campaign: Campaign, skip: frozenset[str] = frozenset()) -> list[str]:
    """For `run --dry-run`: one line per traced cell whose target cannot trace, with why (each such
    target opened, asked and closed; a VM jitterlab boots is asked at preflight, not booted here).
    The targets named in `skip` are left out: the caller opens them anyway and asks them there."""
    from jitterlab.campaign.cells import names

    lines = []
    naming = names().among(campaign.cells)
    for spec in campaign.targets:
        cells = [c for c in campaign.cells if c.target == spec.name and traced(c)]
        if not cells or spec.name in skip:
            continue
        if VirtualMachine in declare(spec.name, spec.kind, spec.options, spec.where or spec.name).offered:
            lines.append(f"target {spec.name!r}: whether it can trace is asked once it has booted, before "
                         "its first run")
            continue
        target = plugins.TARGETS.get(spec.kind, f"{campaign.path}: target.kind")(spec.name, spec.options,
                                                                                 spec.where or None)
        try:
            why = refusal(target)
        finally:
            target.close()
        lines += [f"{spec.name} {c.benchmark} {naming.params_text(c)} {c.load}: unavailable, {why}"
                  for c in cells if why]
    return lines
