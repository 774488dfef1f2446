"""What an impl is: a programming model that toggles a pin every half period for a run and logs
its own edges, with what it needs on the target (tools, programs to build) and of a pin (the forms
of pins/offers.py it can drive a pin through).

Every impl takes the same flags (jitterlab/programs/*: --period-ns --duration-ns, the flags of
the pin's form it binds to, --log --prio [--allow-no-rt] [--mlock]) and writes `<scratch>/self.log`
in the `# jitterlab-edges v1` format, which the self probe reads. Its times are the target's
CLOCK_MONOTONIC (CLOCK_REALTIME is accepted, and warned about): an impl whose wave is timed by
another clock (a coprocessor's timer) converts its edges before it hands the log over, so probes
and the analysis need to know nothing of it.
"""

from __future__ import annotations

from typing import ClassVar, Protocol

from jitterlab.measure.context import RunContext
from jitterlab.measure.fetched import fetched_text
from jitterlab.measure.squarewave.cell import WaveCell, traced
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import Forms, Offer, describe
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.registry import Registry
from jitterlab.model.tuning import ProgramTraits, program_flags
from jitterlab.targets.processes import live_dir, new_marker, run_recorded

PROGRAM_PRIORITY = 80  # SCHED_FIFO priority of RT impls: below an observer (99), above any load
SELF_LOG = "self.log"
PROGRAM_PID = "program.pid"  # in the run's local directory: the program's pid, where its trace is explained
# a program that exits with this (sysexits EX_UNAVAILABLE) says the target lacks something it
# needs (a library, a binding); its last line names it and the run is stored as unavailable
EXIT_UNAVAILABLE = 69


class Impl(Protocol):
    needs: Forms
    """The forms of a pin it can drive it through, preferred first; it drives every pin kind whose
    handle offers one of them."""
    realtime: bool
    """True when it cannot be measured honestly without a real-time scheduling class."""
    timestamps: bool
    """False when its edge log has no times, only the count of its edges (clock=none): the wave is
    made where no clock of Linux's reads it (a real-time unit), and the self probe has nothing to read."""
    metrics: tuple[str, ...]
    """The names of the metrics measured() can give, declared before anything is measured."""
    program: ProgramTraits | None
    """Its program on Linux as the tunings that change how a program runs read it (SCHED_FIFO or
    not, how it locks its memory); None when no program of its own makes the wave (a kernel module,
    a unit's firmware)."""

    def tools(self) -> dict[str, str]:
        """Commands it needs on the target at run time -> Debian package."""
        ...

    def programs(self) -> dict[str, str]:
        """Programs of a built directory of jitterlab/programs (programs.DIRS) it needs -> the
        Debian package their build needs beyond gcc, make and libc ("" for none). A program the
        target cannot build makes the impl's cells unavailable, naming the package."""
        ...

    def prepare(self, ctx: RunContext) -> None:
        """Make what the run needs on the target before its pin and probe start (a kernel module
        built), so that its time is not part of what the probe watches. RunFailed when it cannot."""
        ...

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        """Make the wave for the run's duration; leave the edge log in `<scratch>/self.log`;
        return what the program printed. RunFailed when it fails."""
        ...

    def measured(self, ctx: RunContext, pin: PinHandle, output: str) -> tuple[list[Metric], list[Warning_]]:
        """What the run tells of the impl itself beyond its edges (after run(); the program's output
        and what it left in the scratch directory): metrics with the probe name "", and warnings."""
        ...


class ImplBase:
    """Defaults for the optional parts of the Impl protocol."""

    timestamps: ClassVar[bool] = True
    metrics: ClassVar[tuple[str, ...]] = ()
    program: ClassVar[ProgramTraits | None] = None

    def measured(self, ctx: RunContext, pin: PinHandle, output: str) -> tuple[list[Metric], list[Warning_]]:
        return [], []


def run_program(ctx: RunContext, name: str, argv: list[str]) -> str:
    """Run a wave-making program to its end (recorded, bounded by duration + run_timeout) and
    return its output; RunFailed with its last line when it exits non-zero."""
    settings, target = ctx.settings, ctx.target
    log = f"{ctx.scratch}/program.log"
    marker = new_marker()
    rc = run_recorded(
        target, argv, log, timeout_s=(settings.duration_ns + settings.run_timeout_ns) / 1e9,
        name=name, budget="duration + campaign.run_timeout", marker=marker,
    )  # fmt: skip
    if traced(ctx.cell):  # the launcher's pid is the program's (it execs it): its tasks in the trace
        pid = target.run(["cat", f"{live_dir(target)}/{marker}.pid"]).stdout
        (ctx.local_dir / PROGRAM_PID).write_text(pid)
    output = fetched_text(target, log).strip()
    if rc != 0:
        last = output.splitlines()[-1] if output else "(no output)"
        if rc == EXIT_UNAVAILABLE:
            raise RunFailed(last, status="unavailable")
        raise RunFailed(f"{name} exited with status {rc}: {last}")
    return output


def bound(ctx: RunContext, needs: Forms, pin: PinHandle) -> Offer:
    """The form in which the impl reaches the pin: the first of its needs the handle offers;
    RunFailed (unavailable) when it offers none (the campaign check refuses such cells before)."""
    form = pin.bind(needs)
    if form is None:
        raise RunFailed(f"impl {ctx.cell.param('impl')} cannot drive pin {pin.kind!r}: it needs "
                        f"{describe(needs)}", status="unavailable")
    return form


def common_flags(ctx: RunContext, form: Offer, *, allow_no_rt: bool = False) -> list[str]:
    """The flags every wave-making program takes, for this run and the pin reached as `form`, and
    those the run's tunings ask of it (--mlock)."""
    flags = [
        "--period-ns", str(WaveCell.of_cell(ctx.cell).period_ns),
        "--duration-ns", str(ctx.settings.duration_ns),
        *form.program_args,
        "--log", f"{ctx.scratch}/{SELF_LOG}",
        "--prio", str(PROGRAM_PRIORITY),
    ]  # fmt: skip
    return [*flags, *(["--allow-no-rt"] if allow_no_rt else []), *program_flags(ctx.tunings)]


IMPLS: Registry[Impl] = Registry("impl")
