"""A cell's tuning (matrix key `tuning`, jitterlab/tunings/) for its runs: checked at preflight, so
that a cell it cannot be applied to is unavailable with its reason (at `run --dry-run` already,
never measured as if "none"); applied right before each run's loads and measurement, put back right
after on every path (an interrupt puts it back from the main thread before the targets close; a
kill leaves its journal entry, which the next campaign's preparation restores); and recorded with
the run: the attachment `tuning.json` holds what it did (model/tuning.py `Applied`: each file's
text before and after) and what restoring left."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from jitterlab import plugins
from jitterlab.execution.run import Measured
from jitterlab.execution.timings import OFF, Timings
from jitterlab.measure.context import Placement, RunContext
from jitterlab.model.errors import RunFailed, TargetLost
from jitterlab.model.facts import TuningCheck
from jitterlab.model.records import NO_TUNING, Cell, Warning_
from jitterlab.model.tuning import Applied, Cpus, ProgramTraits, applied_from_json
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.tunings.base import Tuning

ATTACHMENT = "tuning.json"


def cpus_of(cell: Cell, placement: Placement) -> Cpus:
    """The CPUs a cell's tuning works on: the program's, and the probe's when it has one of its own."""
    bench: plugins.Scheduling = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
    own_probe = placement.probe_cpu is not None and bench.needs_probe_cpu(cell)
    return Cpus(tuple(placement.program_cpus or ()), (placement.probe_cpu,) if own_probe else ())


def program_of(cell: Cell) -> ProgramTraits | None:
    """The program a cell's impl starts, as the tunings that change how it runs read it; None for a
    cell that starts none of an impl (a kernel module, a unit, a wrapped tool)."""
    impl = cell.param("impl")
    if isinstance(impl, str) and impl in plugins.IMPLS:
        return plugins.IMPLS.get(impl, "matrix.impl").program
    return None


def tunings_of(cell: Cell) -> list[tuple[str, Tuning]]:
    """The tunings of a cell, in the order they are applied ("irq-away+cpu-dma-latency": both);
    none for "none"."""
    if cell.tuning == NO_TUNING:
        return []
    return [(name, plugins.TUNINGS.get(name, "matrix.tuning")) for name in cell.tuning.split("+")]


Checked = dict[tuple[str, Cpus], str | None]  # (tuning, CPUs) -> its check's refusal, None: it can


def refusals(target: Target, cells: Iterable[Cell], placement: Placement,
             checked: Checked | None = None) -> dict[str, str]:
    """cell key -> why its tuning cannot be applied there (it does nothing for the cell's program,
    or its check refuses); each check asked once per tuning and CPUs (`checked`: those asked
    already, and where the answers go). Changes nothing."""
    out: dict[str, str] = {}
    checked = {} if checked is None else checked
    for cell in cells:
        cpus = cpus_of(cell, placement)
        for name, tuning in tunings_of(cell):
            why = tuning.skips(program_of(cell))
            if why is not None:
                why = f"it does nothing here: {why}"
            else:
                if (name, cpus) not in checked:
                    checked[(name, cpus)] = tuning.check(target, cpus)
                why = checked[(name, cpus)]
            if why is not None:
                out[cell.key] = f"tuning {name} cannot be applied: {why}"
                break
    return out


def machine_checks(target: Target, cells: Iterable[Cell], placement: Placement,
                   checked: Checked | None = None) -> tuple[TuningCheck, ...]:
    """What the check of every tuning that changes the machine (one whose fix a limit or a cause
    names) says on `target` for the CPUs of its cells, as its system facts keep it: a suggestion
    to measure a tuning the machine refuses is withheld (report/limits.py). Changes nothing."""
    checked = {} if checked is None else checked
    cpus = list(dict.fromkeys(cpus_of(c, placement) for c in cells))
    out = []
    for entry in plugins.TUNINGS:
        if entry.name == NO_TUNING or entry.obj.skips(None) is not None:  # a program's, not the machine's
            continue
        for these in cpus:
            if (entry.name, these) not in checked:
                checked[(entry.name, these)] = entry.obj.check(target, these)
            out.append(TuningCheck(tuning=entry.name, program_cpus=these.program, probe_cpus=these.probe,
                                   refused=checked[(entry.name, these)]))
    return tuple(out)


def refusal_warnings(unavailable: dict[str, str]) -> list[Warning_]:
    """One warning per reason a tuning was refused, as preflight lists a missing tool's."""
    reasons = dict.fromkeys(w for w in unavailable.values() if w.startswith("tuning "))
    return [Warning_(f"{why} (its cells' runs are stored as unavailable)",
                     "measure them where it can be applied (jitterlab list tunings says what each needs), "
                     "or leave the tuning out of matrix.tuning / --tuning")
            for why in reasons]


class RunTuning:
    """The tunings of one run: applied once, in order, restored once, in reverse order, from
    whichever thread comes first (the run's own when it ends, or the main thread's on an interrupt,
    before it closes the target)."""

    def __init__(self, target: Target, cell: Cell, placement: Placement) -> None:
        self.target, self.cell = target, cell
        self.tunings = tunings_of(cell)
        self.cpus = cpus_of(cell, placement)
        self.applied: list[tuple[Tuning, Applied]] = []
        self.problems: list[str] | None = None  # None: not restored yet
        self._lock = threading.Lock()

    def apply(self) -> tuple[Applied, ...]:
        """Apply the cell's tunings (none for "none"); RunFailed (unavailable) with the reason of
        the first that cannot be, the ones before it put back."""
        with self._lock:
            if self.problems is not None:  # interrupted before they were applied: leave them be
                raise RunFailed("interrupted before its tuning was applied")
            try:
                for _, tuning in self.tunings:
                    self.applied.append((tuning, tuning.apply(self.target, self.cpus)))
            except BaseException:
                self._restore()
                raise
            return tuple(a for _, a in self.applied)

    def restore(self) -> list[str]:
        """Put back what was applied (idempotent); the problems left, each with its fix."""
        with self._lock:
            return self._restore()

    def _restore(self) -> list[str]:
        if self.problems is not None:
            return self.problems
        self.problems = []
        for tuning, applied in reversed(self.applied):
            try:
                self.problems += tuning.restore(self.target, applied)
            except Exception as exc:  # a lost target: its journal entry stays for the next campaign
                self.problems.append(f"{applied.tuning} could not be put back ({exc}); the next jitterlab "
                                     "run on this machine puts it back from its journal")
        return self.problems

    def record(self) -> bytes:
        """What the run stores: each tuning's Applied, and what restoring left."""
        return json.dumps({"applied": [a.as_json() for _, a in self.applied],
                           "restore_problems": self.problems or []}, indent=1, sort_keys=True).encode()


def read_record(data: bytes) -> tuple[list[Applied], list[str]]:
    """A run's `tuning.json`: what its tunings did, and what restoring them left; ValueError otherwise."""
    try:
        found = json.loads(data)
        return ([applied_from_json(a) for a in found["applied"]],
                [str(p) for p in found["restore_problems"]])
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a run's tuning record: {exc}") from None


def measure_tuned(run: RunTuning, ctx: RunContext, measure: Callable[[RunContext], Measured],
                  timings: Timings = OFF) -> Measured:
    """`measure` under the run's tuning: applied first, restored after whatever happens, recorded
    with the run (`timings`: applying and restoring timed, `run --timings`). A tuning that cannot be
    applied makes the run unavailable with its reason; one that cannot be put back fails the run
    (the runs after it would be measured under it)."""
    target = ctx.target.name
    try:
        with timings.phase("tuning apply", target) if run.tunings else contextlib.nullcontext():
            applied = run.apply()
    except TargetLost as exc:
        return Measured("failed", exc.reason, lost=exc.reason)
    except RunFailed as exc:
        return Measured(exc.status, exc.reason)
    except CommandTimeout as exc:
        return Measured("timeout", f"applying tuning {run.cell.tuning}: {exc}")
    try:
        result = measure(replace(ctx, tunings=(*ctx.tunings, *applied)))
    finally:
        with timings.phase("tuning restore", target) if applied else contextlib.nullcontext():
            problems = run.restore()
    if not applied:
        return result
    result.attachments[ATTACHMENT] = run.record()
    if problems and result.lost is None:
        said = "; ".join(problems)
        result.status, result.error = "failed", f"tuning {run.cell.tuning} was not put back whole: {said}"
    return result
