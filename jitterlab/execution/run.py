"""The phases of one run, in order: its directory made on the target, loads started (or kept from
the previous run), the benchmark prepared while they warm up, loads up (warmed up and checked),
measured (with a kernel trace recorded around it when the cell asks: execution/traced.py), the
benchmark's set-up undone, loads down (checked, read, stopped or kept), analysed (and the trace's
late periods explained). The runner commits the result.

Every phase may fail (RunFailed, CommandTimeout) or be interrupted; whatever the path, what the
benchmark set up is undone and the loads are stopped, or kept only for a next run that checks them.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

from jitterlab.execution import traced
from jitterlab.execution.loads import TargetLoads
from jitterlab.measure.benchmarks.base import Measurement, Phases
from jitterlab.measure.context import RunContext
from jitterlab.model.errors import RunFailed, TargetLost
from jitterlab.model.records import Metric
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import SharesControllerCpus, command_timeout_s, has
from jitterlab.targets.processes import renew_scratch


@dataclass
class Measured:
    """What one run came to: its status, and what it measured when it is ok."""

    status: str = "ok"
    error: str | None = None
    measurement: Measurement | None = None
    load_metrics: list[Metric] = field(default_factory=list)
    attachments: dict[str, bytes] = field(default_factory=dict)
    lost: str | None = None  # the target went: its remaining runs fail with this


def measure(bench: Phases, ctx: RunContext, loads: TargetLoads, *, keep: bool, runs: int) -> Measured:
    """Run the phases; `keep`: the next run uses the same loads; `runs`: how many consecutive runs
    (this one included) use them. Exceptions other than a run's failure propagate (a bug, or an
    interrupt), with the loads stopped."""
    try:
        # a phase like the others: a target dropped since the last run is found here, and fails this run;
        # the run before it is removed here too (a round trip less per run)
        renew_scratch(ctx.target, ctx.scratch)
        loads.start(ctx.cell, runs)
        with probe_cpu_kept_free(ctx):
            measuring = bench.prepare(ctx)
            try:
                loads.up()
                with traced.recording(ctx) as trace:  # a cell with trace = "sched": around the measure only
                    raw = measuring.measure()
            finally:
                measuring.close()
        load_metrics = loads.down(keep)
        try:
            measurement = bench.analyse(ctx, raw)
        except RunFailed as exc:
            if trace.raw is not None:
                traced.kept_after_failure(ctx, trace.raw, exc)
            raise
        if trace.raw is not None:  # its late periods explained, now that the loads are down
            measurement = traced.explained(ctx, trace.raw, measurement)
        return Measured(measurement=measurement, load_metrics=load_metrics)
    except RunFailed as exc:
        result = Measured(exc.status, exc.reason, attachments=exc.attachments)
        lost = exc if isinstance(exc, TargetLost) else _lost_meanwhile(ctx.target)
        if lost is not None:  # a program killed by a dropped connection is no finding of the run
            result.lost = lost.reason
            result.error = exc.reason if lost is exc else f"{lost.reason} (the run itself said: {exc.reason})"
            loads.stop()
        else:
            loads.after_failure(keep)
        return result
    except CommandTimeout as exc:
        loads.after_failure(keep)
        return Measured("timeout", str(exc))
    except BaseException:
        loads.stop()
        raise


def probe_cpu_kept_free(ctx: RunContext) -> contextlib.AbstractContextManager[None]:
    """jitterlab's own threads off the CPU the run's probe polls on the machine jitterlab runs on, from
    the probe's start to its end: a controller thread the scheduler left there waits behind the
    real-time poller until it is moved (40-80 ms at the probe's start and at the program's end, measured
    under the quickstart's CPU load). Between runs they have that CPU again: the load shares the other
    CPUs with them then (bench/campaign_speed.py: 40 ms less per run under the quickstart's CPU load)."""
    here = has(ctx.target, SharesControllerCpus)
    if here is None or ctx.placement.probe_cpu is None:
        return contextlib.nullcontext()
    return here.controller_kept_off([ctx.placement.probe_cpu])


def _lost_meanwhile(target: Target) -> TargetLost | None:
    """After a failed run: is the target itself gone? (one command, only when a run failed)"""
    try:
        target.run(["true"], timeout_s=command_timeout_s(target, 30.0))
    except TargetLost as exc:
        return exc
    except (RunFailed, CommandTimeout):
        return None
    return None
