"""A cell's tuning (matrix key `tuning`, jitterlab/tunings/) for its runs: checked at preflight, so
that a cell it cannot be applied to is unavailable with its reason (at `run --dry-run` already,
never measured as if "none"); applied right before each run's loads and measurement, put back right
after on every path (an interrupt puts it back from the main thread before the targets close; a
kill leaves its journal entry, which the next campaign's preparation restores); and recorded with
the run: the attachment `tuning.json` holds what it did (model/tuning.py `Applied`: each file's
text before and after) and what restoring left."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from dataclasses import replace

from jitterlab import plugins
from jitterlab.execution.run import Measured
from jitterlab.measure.context import Placement, RunContext
from jitterlab.model.errors import RunFailed, TargetLost
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


def tuning_of(cell: Cell) -> Tuning:
    return plugins.TUNINGS.get(cell.tuning, "matrix.tuning")


def refusals(target: Target, cells: Iterable[Cell], placement: Placement) -> dict[str, str]:
    """cell key -> why its tuning cannot be applied there (it does nothing for the cell's program,
    or its check refuses); each check asked once per tuning and CPUs. Changes nothing."""
    out: dict[str, str] = {}
    checked: dict[tuple[str, Cpus], str | None] = {}
    for cell in cells:
        if cell.tuning == NO_TUNING:
            continue
        tuning, cpus = tuning_of(cell), cpus_of(cell, placement)
        why = tuning.skips(program_of(cell))
        if why is not None:
            why = f"it does nothing here: {why}"
        else:
            if (cell.tuning, cpus) not in checked:
                checked[(cell.tuning, cpus)] = tuning.check(target, cpus)
            why = checked[(cell.tuning, cpus)]
        if why is not None:
            out[cell.key] = f"tuning {cell.tuning} cannot be applied: {why}"
    return out


def refusal_warnings(unavailable: dict[str, str]) -> list[Warning_]:
    """One warning per reason a tuning was refused, as preflight lists a missing tool's."""
    reasons = dict.fromkeys(w for w in unavailable.values() if w.startswith("tuning "))
    return [Warning_(f"{why} (its cells' runs are stored as unavailable)",
                     "measure them where it can be applied (jitterlab list tunings says what each needs), "
                     "or leave the tuning out of matrix.tuning / --tuning")
            for why in reasons]


class RunTuning:
    """The tuning of one run: applied once, restored once, from whichever thread comes first (the
    run's own when it ends, or the main thread's on an interrupt, before it closes the target)."""

    def __init__(self, target: Target, cell: Cell, placement: Placement) -> None:
        self.target, self.cell = target, cell
        self.tuning = tuning_of(cell) if cell.tuning != NO_TUNING else None
        self.cpus = cpus_of(cell, placement)
        self.applied: Applied | None = None
        self.problems: list[str] | None = None  # None: not restored yet
        self._lock = threading.Lock()

    def apply(self) -> Applied | None:
        """Apply the cell's tuning (None for "none"); RunFailed (unavailable) with its reason."""
        if self.tuning is None:
            return None
        with self._lock:
            if self.problems is not None:  # interrupted before it was applied: leave it be
                raise RunFailed("interrupted before its tuning was applied")
            self.applied = self.tuning.apply(self.target, self.cpus)
            return self.applied

    def restore(self) -> list[str]:
        """Put back what was applied (idempotent); the problems left, each with its fix."""
        with self._lock:
            if self.problems is not None:
                return self.problems
            self.problems = []
            if self.tuning is not None and self.applied is not None:
                try:
                    self.problems = self.tuning.restore(self.target, self.applied)
                except Exception as exc:  # a lost target: its journal entry stays for the next campaign
                    self.problems = [f"it could not be put back ({exc}); the next jitterlab run on this "
                                     "machine puts it back from its journal"]
            return self.problems

    def record(self) -> bytes:
        """What the run stores: the Applied, and what restoring left."""
        assert self.applied is not None
        return json.dumps({"applied": self.applied.as_json(), "restore_problems": self.problems or []},
                          indent=1, sort_keys=True).encode()


def read_record(data: bytes) -> tuple[Applied, list[str]]:
    """A run's `tuning.json`: what its tuning did, and what restoring it left; ValueError otherwise."""
    try:
        found = json.loads(data)
        return applied_from_json(found["applied"]), [str(p) for p in found["restore_problems"]]
    except (KeyError, TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"not a run's tuning record: {exc}") from None


def measure_tuned(run: RunTuning, ctx: RunContext, measure: Callable[[RunContext], Measured]) -> Measured:
    """`measure` under the run's tuning: applied first, restored after whatever happens, recorded
    with the run. A tuning that cannot be applied makes the run unavailable with its reason; one
    that cannot be put back fails the run (the runs after it would be measured under it)."""
    try:
        applied = run.apply()
    except TargetLost as exc:
        return Measured("failed", exc.reason, lost=exc.reason)
    except RunFailed as exc:
        return Measured(exc.status, exc.reason)
    except CommandTimeout as exc:
        return Measured("timeout", f"applying tuning {run.cell.tuning}: {exc}")
    try:
        result = measure(replace(ctx, tunings=(*ctx.tunings, applied)) if applied is not None else ctx)
    finally:
        problems = run.restore()
    if applied is None:
        return result
    result.attachments[ATTACHMENT] = run.record()
    if problems and result.lost is None:
        said = "; ".join(problems)
        result.status, result.error = "failed", f"tuning {run.cell.tuning} was not put back whole: {said}"
    return result
