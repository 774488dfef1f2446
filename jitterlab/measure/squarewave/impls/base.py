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
from jitterlab.targets.processes import RecordedProcess, awaited, let_go, live_dir, new_marker, spawn_recorded

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

    def launch(self, ctx: RunContext, pin: PinHandle) -> Launched:
        """The run made ready before the probe starts (after the pin is set up); its finish() makes the
        wave as run() does. An impl whose program can start up first and wait starts it here (its
        start-up then overlaps the probe's set-up); ImplBase's launches nothing (RunLater)."""
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

    def launch(self, ctx: RunContext, pin: PinHandle) -> Launched:
        return RunLater(self, ctx, pin)  # type: ignore[arg-type]


class Launched(Protocol):
    """An impl's run, launched before its probe starts (Impl.launch)."""

    def finish(self) -> str:
        """Make the wave for the run's duration, from now; the program's output (as Impl.run)."""
        ...

    def abandon(self) -> None:
        """Undo the launch of a run whose finish() will not come (its probe failed to start)."""
        ...


class RunLater:
    """The launch of an impl that starts nothing before the wave: finish() is its run()."""

    def __init__(self, impl: Impl, ctx: RunContext, pin: PinHandle) -> None:
        self._impl, self._ctx, self._pin = impl, ctx, pin

    def finish(self) -> str:
        return self._impl.run(self._ctx, self._pin)

    def abandon(self) -> None:
        return None


class StartedProgram:
    """A wave-making program started on the target. Given `go` (a FIFO of a target that shares this
    machine's files, passed to the program as --go), it starts up (interpreter, imports, pin, memory
    locked) while the probe is set up and waits on it: finish() lets it go when the probe watches
    (let_go). Without, it makes its wave from its start, and is started by finish()."""

    def __init__(self, ctx: RunContext, name: str, argv: list[str], go: str | None = None) -> None:
        self._ctx, self._name, self._go = ctx, name, go
        self._argv = [*argv, "--go", go] if go is not None else argv
        self._log = f"{ctx.scratch}/program.log"
        self._marker = new_marker()
        self._proc = None if go is None else self._spawn()

    def _spawn(self) -> RecordedProcess:
        return spawn_recorded(self._ctx.target, self._argv, log_path=self._log, marker=self._marker)

    def finish(self) -> str:
        """Run it to its end (recorded, bounded by duration + run_timeout from now) and return its
        output; RunFailed with its last line when it exits non-zero."""
        settings, target, name = self._ctx.settings, self._ctx.target, self._name
        proc, self._proc = self._proc or self._spawn(), None
        budget = "duration + campaign.run_timeout"
        if self._go is not None:
            let_go(self._go, proc, timeout_s=settings.run_timeout_ns / 1e9, name=name,
                   budget="campaign.run_timeout, to start")
        rc = awaited(proc, self._log, timeout_s=(settings.duration_ns + settings.run_timeout_ns) / 1e9,
                     name=name, budget=budget)
        if traced(self._ctx.cell):  # the launcher's pid is the program's (it execs it): its trace's tasks
            pid = target.run(["cat", f"{live_dir(target)}/{self._marker}.pid"]).stdout
            (self._ctx.local_dir / PROGRAM_PID).write_text(pid)
        output = fetched_text(target, self._log).strip()
        if rc != 0:
            last = output.splitlines()[-1] if output else "(no output)"
            if rc == EXIT_UNAVAILABLE:
                raise RunFailed(last, status="unavailable")
            raise RunFailed(f"{name} exited with status {rc}: {last}")
        return output

    def abandon(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.stop()


def run_program(ctx: RunContext, name: str, argv: list[str]) -> str:
    """Run a wave-making program to its end (recorded, bounded by duration + run_timeout) and
    return its output; RunFailed with its last line when it exits non-zero."""
    return StartedProgram(ctx, name, argv).finish()


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
