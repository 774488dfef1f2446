"""The loads of one target across its runs: started for a run, warmed up and checked before it
measures, checked and read after, and kept up for the next run when that one uses the same loads
and they can report per run (Sustained); stopped otherwise, on failure, and when the target's runs
end. A kept load that fails its check before a run is restarted, with its warm-up."""

from __future__ import annotations

import contextlib
import time
import uuid
from dataclasses import dataclass

from jitterlab import plugins
from jitterlab.campaign.file import Campaign
from jitterlab.measure.context import Placement
from jitterlab.measure.loads.base import LoadContext, Sustained
from jitterlab.model.errors import RunFailed, TargetLost
from jitterlab.model.records import Cell, Metric
from jitterlab.targets.base import Target
from jitterlab.targets.processes import remove_scratch, scratch_dir


def load_key(campaign: Campaign, cell: Cell) -> tuple:
    """What makes two runs' loads the same: the names and their options."""
    return tuple((name, repr(sorted(campaign.settings.options_of("loads", name).items())))
                 for name in cell.load.split("+"))


@dataclass
class _Running:
    key: tuple
    loads: list  # (name, load)
    scratch: str  # the loads' own directory: they may outlive the run that started them
    until: float  # monotonic time their warm-up ends
    fresh: bool = True  # started for this run (else kept from the previous one)

    @property
    def sustained(self) -> bool:
        """Every load can be read per run, so all may stay up for the next run."""
        return all(isinstance(load, Sustained) for _, load in self.loads)


class TargetLoads:
    """The loads running on one target; one run at a time uses it (the target's worker thread)."""

    def __init__(self, campaign: Campaign, target: Target, placement: Placement, notice) -> None:
        self._campaign, self._target, self._placement, self._notice = campaign, target, placement, notice
        self._running: _Running | None = None

    def start(self, cell: Cell, runs: int) -> None:
        """Before a run prepares: keep the loads of the previous run when they are the cell's (and
        pass their check), else start the cell's, for `runs` consecutive runs at most."""
        key = load_key(self._campaign, cell)
        if self._running is not None and self._running.key == key:
            try:
                self._check("before")
                return
            except TargetLost:
                raise
            except RunFailed as exc:  # failed between runs: a fresh start, with its warm-up
                self._notice(self._target.name, f"{exc.reason}; restarting it")
        self.stop()
        settings = self._campaign.settings
        longest_ns = self._campaign.duration_range_ns[1]  # a table may run longer than campaign.duration
        per_run_s = (settings.load_warmup_ns + settings.warmup_ns + longest_ns
                     + settings.run_timeout_ns) / 1e9
        # the tools bound their own lifetime too, so not even a SIGKILLed runner leaves them forever
        lifetime_s = per_run_s * max(1, runs) + 30
        scratch = scratch_dir(self._target, f"loads-{uuid.uuid4().hex[:12]}")
        self._running = _Running(key, [], scratch, 0.0)
        try:
            self._target.run(["mkdir", "-p", scratch])
            for name in cell.load.split("+"):
                load = plugins.LOADS.get(name, "matrix.load").factory()
                options = settings.options_of("loads", name)
                self._running.loads.append((name, load))  # stopped with the others if start() fails
                load.start(LoadContext(self._target, f"{scratch}/load-{name}", self._placement.load_cpus,
                                       options, max_duration_s=lifetime_s,
                                       probe_cpu=self._placement.probe_cpu))
        except BaseException:
            self.stop()
            raise
        if cell.load != "idle":
            self._running.until = time.monotonic() + settings.load_warmup_ns / 1e9

    def up(self) -> None:
        """Right before the measurement: the rest of the warm-up waited out, the loads just started
        checked, and the kept ones' reading begun."""
        running = self._running
        assert running is not None, "start() comes first"
        time.sleep(max(0.0, running.until - time.monotonic()))
        if running.fresh:
            self._check("before")  # (kept ones were checked by start(), right before the run prepared)
        for _, load in running.loads:
            if isinstance(load, Sustained) and not running.fresh:
                load.mark()  # what it did between the runs is no run's
        running.until, running.fresh = 0.0, False  # warmed up; kept from now on

    def down(self, keep: bool) -> list[Metric]:
        """Right after the measurement: the loads checked (they ran all along) and read; kept up
        when `keep` (the next run uses the same) and they can be read per run, else stopped."""
        running = self._running
        assert running is not None, "start() comes first"
        self._check("during")
        if keep and running.sustained:
            return _named([(name, load.snapshot()) for name, load in running.loads])
        self._running = None
        try:
            return _named([(name, load.stop()) for name, load in running.loads])
        finally:
            _cleanup(self._target, running)

    def after_failure(self, keep: bool) -> None:
        """After a failed run: loads that the next run uses and can read per run stay up (its
        check before it measures decides whether they still run); the others are stopped."""
        running = self._running
        if running is not None and keep and running.sustained:
            running.until, running.fresh = 0.0, False
            return
        self.stop()

    def stop(self) -> None:
        """Stop what runs (after a failure, when the target's runs end, on an interrupt); quiet."""
        running, self._running = self._running, None
        if running is not None:
            for _, load in running.loads:
                with contextlib.suppress(Exception):
                    load.stop()
            _cleanup(self._target, running)

    def _check(self, when: str) -> None:
        assert self._running is not None
        for name, load in self._running.loads:
            try:
                load.check()
            except TargetLost:
                raise
            except RunFailed as exc:
                raise RunFailed(f"load {name} was not running {when} the measurement: {exc.reason}",
                                status="failed") from None


def _named(readings: list[tuple[str, list[Metric]]]) -> list[Metric]:
    """One load's metrics as they are; several loads' suffixed with their names."""
    return [Metric(m.name if len(readings) == 1 else f"{m.name}_{name}", m.value, m.unit, m.subject,
                   m.direction) for name, metrics in readings for m in metrics]


def _cleanup(target: Target, running: _Running) -> None:
    with contextlib.suppress(Exception):
        remove_scratch(target, running.scratch)
