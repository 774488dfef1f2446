"""Schedules the runs of a campaign on its targets: one run at a time per target, the targets in
parallel; prepares each target (leftovers swept, programs deployed), runs each run's phases
(execution/run.py) and commits it; interrupts, lost targets, retries and resume."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from jitterlab import plugins
from jitterlab.campaign.file import Campaign
from jitterlab.execution import build_cache, rt_throttle
from jitterlab.execution.controller import open_controller
from jitterlab.execution.deploy import deploy
from jitterlab.execution.loads import TargetLoads, load_key
from jitterlab.execution.preflight import TargetSession, open_targets, unbuilt
from jitterlab.execution.run import Measured, measure
from jitterlab.execution.sweep import sweep
from jitterlab.execution.timings import OFF, TimedLoads, TimedPhases, Timings
from jitterlab.execution.tuning import RunTuning, measure_tuned
from jitterlab.measure.benchmarks.base import Benchmark, Phases
from jitterlab.measure.context import RunContext, Throttling
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.facts import SystemFacts, ThrottleRecord
from jitterlab.model.records import Cell, Metric, RunRecord, StoredSettings, Warning_
from jitterlab.store.catalog import Store
from jitterlab.system import sysinfo
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import ControllerMachine, has
from jitterlab.targets.processes import remove_records, remove_scratch, retire, scratch_dir
from jitterlab.tracing import changes as tracing_changes
from jitterlab.tunings import journal as tunings_journal

__all__ = ["Outcome", "Runner", "TargetSession", "estimate_s", "open_targets"]


@dataclass
class Outcome:
    campaign_id: int
    done: int = 0
    skipped: int = 0
    failed: int = 0
    interrupted: bool = False


# progress callback: (target name, description of the run starting or None when one ends, seconds)
Progress = Callable[[str, str | None, float], None]


def estimate_s(campaign: Campaign, cells: list[tuple[Cell, int]]) -> float:
    return sum(_bench(c).estimate_s(campaign.settings_for(c), c) for c, _ in cells)


def _bench(cell: Cell) -> Benchmark:
    return plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")


def _warm(benches: set[Phases]) -> None:
    for bench in benches:
        with contextlib.suppress(Exception):  # a failure here shows again where it matters: in a run
            bench.warm()


def start_warming(cells: list[Cell]) -> threading.Thread:
    """Load what the analysis of these cells' runs compiles (numba's cache: seconds under load) in a
    thread, from before the targets are opened (preflight waits on them) until the first run needs it;
    give it to the Runner (`warming=`), whose runs wait for it."""
    warming = threading.Thread(target=_warm, args=({_bench(c) for c in cells},), name="warm-analysis",
                               daemon=True)
    warming.start()
    return warming


class _Tally:
    """The outcome the targets' threads count into, and the errors (bugs) they met."""

    def __init__(self, outcome: Outcome) -> None:
        self.outcome = outcome
        self.errors: list[BaseException] = []
        self._lock = threading.Lock()

    def add(self, *, done: int, failed: int) -> None:
        with self._lock:
            self.outcome.done += done
            self.outcome.failed += failed


class Runner:
    def __init__(
        self,
        campaign: Campaign,
        store: Store,
        *,
        resume: bool = False,
        retry_failed: bool = False,
        retry_damaged: bool = False,
        progress: Progress | None = None,
        notice: Callable[[str, str], None] | None = None,
        only_repetitions: set[int] | None = None,
        retry_hint: str = "measure them later with run --resume --retry-failed",
        timings: Timings = OFF,
        warming: threading.Thread | None = None,
    ) -> None:
        self.campaign = campaign
        self.retry_hint = retry_hint  # what measures a lost target's runs again (an image campaign's differs)
        self.store = store
        self.resume = resume
        self.retry_failed = retry_failed
        self.retry_damaged = retry_damaged
        self._replaces: dict[tuple[str, int], str] = {}  # a run measured again -> the run it replaces
        self._campaign_id: int | None = None
        self.progress = progress or (lambda target, what, seconds: None)
        self.notice: Callable[[str, str], None] = notice or (lambda target, message: None)
        self.stop_event = threading.Event()
        # on an interrupt: set once the main thread has stopped what ran on the targets, so a run's
        # cleanup does not remove its directory while its observer and loads still write into it
        self._interrupting, self._stopped = threading.Event(), threading.Event()
        self._controller: Target | None = None
        self.only_repetitions = only_repetitions  # monitor: one interval's repetition at a time
        self.timings = timings  # where the wall time goes (run --timings)
        self._warming = warming  # start_warming's, when it was started before the targets were opened

    def resumed_campaign(self) -> int | None:
        """With --resume, the latest campaign of this name in the store measured with the same
        settings and labels (image=A after image=B was measured: its labels find it), locked until
        the store is closed (a second jitterlab measuring it is refused, naming who measures it);
        None when there is none to resume."""
        c = self.campaign
        if self._campaign_id is not None or not self.resume:
            return self._campaign_id
        previous = (self.store.latest_campaign(c.name, c.fingerprint) or self.store.latest_campaign(c.name))
        if previous is None:
            return None
        if previous.fingerprint != c.fingerprint:
            raise UserError(
                f"{c.path}: --resume: campaign {c.name!r} in {self.store.where} was run with "
                "other settings (duration, warmup, labels, repetitions or load options "
                "changed); run without --resume to start it afresh, or restore the old file"
            )
        self.store.lock_campaign(previous.id, c.name)
        self._campaign_id = previous.id
        return self._campaign_id

    def campaign_id(self) -> int:
        """The campaign's id in the store: resumed, or a new one; locked until the store is closed."""
        if self.resumed_campaign() is None:
            c = self.campaign
            campaign_id = self.store.new_campaign(c.name, c.fingerprint, str(c.path), c.source,
                                                  dict(c.labels))
            self.store.lock_campaign(campaign_id, c.name)
            self._campaign_id = campaign_id
        assert self._campaign_id is not None
        return self._campaign_id

    def pending(self, campaign_id: int) -> tuple[list[tuple[Cell, int]], int]:
        committed = self.store.committed(campaign_id)
        ids = self.store.run_ids(campaign_id)
        damaged = self.store.damaged(campaign_id) if self.retry_damaged else {}
        todo, skipped = [], 0
        self._replaces.clear()
        for cell, rep in self.campaign.runs():
            if self.only_repetitions is not None and rep not in self.only_repetitions:
                continue
            status = committed.get((cell.key, rep))
            if status is None:
                todo.append((cell, rep))
            elif (self.retry_failed and status != "ok") or (cell.key, rep) in damaged:
                todo.append((cell, rep))
                self._replaces[(cell.key, rep)] = ids[(cell.key, rep)]
            else:
                skipped += 1
        return todo, skipped

    def execute(self, sessions: list[TargetSession], campaign_id: int) -> Outcome:
        """Every pending run of the campaign: each target's in a thread of its own, its runs one at a
        time; the outcome counts them (interrupted: Ctrl-C stopped them)."""
        todo, skipped = self.pending(campaign_id)
        tally = _Tally(Outcome(campaign_id, skipped=skipped))
        # the analysis' compiled code loads while the targets are prepared, not in the first run
        warming = self._warming or start_warming([c for c, _ in todo])
        # set by each worker as it ends: waited on instead of Thread.join, which an interrupt arriving
        # inside it can leave believing the thread ended while it still cleans up (CPython gh-90882)
        ended = {s.spec.name: threading.Event() for s in sessions}
        threads = [
            threading.Thread(target=self._worker, name=f"target-{s.spec.name}", daemon=True,
                             args=(s, campaign_id, [x for x in todo if x[0].target == s.spec.name],
                                   warming, tally, ended[s.spec.name]))
            for s in sessions
        ]
        if any(has(s.target, ControllerMachine) is None for s in sessions):
            self._controller = open_controller()  # where instruments and clients run
        try:
            for thread in threads:
                thread.start()
            tally.outcome.interrupted = self._await(sessions, ended)
        finally:
            if self._controller is not None:
                self._controller.close()
        if tally.errors:
            raise tally.errors[0]
        return tally.outcome

    def _worker(self, session: TargetSession, campaign_id: int, mine: list[tuple[Cell, int]],
                warming: threading.Thread, tally: _Tally, ended: threading.Event) -> None:
        """One target's thread: its runs, then what they leave released, on every path."""
        loads = TargetLoads(self.campaign, session.target, session.placement, self.notice)
        try:
            self._target_runs(session, campaign_id, mine, loads, warming, tally)
        except BaseException as exc:
            if not self.stop_event.is_set():
                tally.errors.append(exc)
            self.stop_event.set()
        finally:
            try:
                self._release(session, loads)
            finally:
                ended.set()

    def _target_runs(self, session: TargetSession, campaign_id: int, mine: list[tuple[Cell, int]],
                     loads: TargetLoads, warming: threading.Thread, tally: _Tally) -> None:
        """The target prepared, then its runs one at a time; once it is lost, the rest are committed
        as failed with the reason. Returns early when the campaign stops."""
        if session.lost is None:
            try:
                with self.timings.phase("target prepare", session.spec.name):
                    self._prepare(session, campaign_id)
            except RunFailed as exc:  # unreachable, or its disk is full: no run can work
                session.lost = exc.reason
        with self.timings.phase("analysis warm (waited)", session.spec.name):
            warming.join()
        for i, (cell, rep) in enumerate(mine):
            if self.stop_event.is_set():
                return
            if session.lost is not None:
                loads.stop()
                failed = self._not_run(session, campaign_id, mine[i:])
                tally.add(done=failed, failed=failed)
                return
            if cell.key in session.unavailable:
                status = self._unavailable(session, campaign_id, cell, rep)
            else:
                status = self._one_run(session, campaign_id, cell, rep, loads,
                                       self._same_loads(session, mine[i:]))
            if status is None:
                return
            tally.add(done=1, failed=int(status != "ok"))

    def _release(self, session: TargetSession, loads: TargetLoads) -> None:
        """What a target's runs leave: its loads stopped (nothing is kept up past them), its RT
        throttling put back (even when a load errs), what they retired (the records of the processes
        they stopped, the last run's directory)."""
        if self._interrupting.is_set():
            self._stopped.wait(60)  # its processes are being stopped: they may still write
        try:
            loads.stop()
        finally:
            self._restore_throttling(session)
        if session.lost is None:
            with contextlib.suppress(Exception):
                remove_records(session.target)

    def _await(self, sessions: list[TargetSession], ended: dict[str, threading.Event]) -> bool:
        """Wait for every target's thread to end; True when Ctrl-C interrupted them."""
        try:
            while not all(e.is_set() for e in ended.values()):
                for event in ended.values():
                    event.wait(0.2)
            return False
        except KeyboardInterrupt:
            self._interrupt(sessions, ended)
            return True

    def _interrupt(self, sessions: list[TargetSession], ended: dict[str, threading.Event]) -> None:
        """Stop every target's runs: throttling put back while the targets still answer, then the
        targets closed (which kills what runs; the interrupted runs are not committed)."""
        self._interrupting.set()
        self.stop_event.set()
        try:
            for session in sessions:
                self._restore_throttling(session)
                if session.tuning is not None:  # the run's own thread would find its target closed
                    for problem in session.tuning.restore():
                        self.notice(session.spec.name, f"tuning {session.tuning.cell.tuning}: {problem}")
            for session in sessions:
                session.target.close()
        finally:
            self._stopped.set()
        for event in ended.values():
            event.wait(30)  # the interrupted runs remove their directories

    def _not_run(self, session: TargetSession, campaign_id: int, runs: list[tuple[Cell, int]]) -> int:
        """Commit runs of a target that cannot be reached as failed, with the reason."""
        self.notice(
            session.spec.name,
            f"{session.lost}; its {len(runs)} remaining run(s) are stored as failed ({self.retry_hint})",
        )
        for cell, rep in runs:
            self._commit(session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
                         Measured("failed", f"not run: {session.lost}"))
            self.progress(session.spec.name, None, estimate_s(self.campaign, [(cell, rep)]))
        return len(runs)

    def _unavailable(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int) -> str:
        """Commit a run the target cannot do (it lacks the cell's tool) as unavailable, with why."""
        self._commit(session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
                     Measured("unavailable", session.unavailable[cell.key]))
        self.progress(session.spec.name, None, estimate_s(self.campaign, [(cell, rep)]))
        return "unavailable"

    def _prepare(self, session: TargetSession, campaign_id: int) -> None:
        for leftover in sweep(session.target):
            self.notice(session.spec.name, f"stopped a leftover of an earlier killed run: {leftover}")
        for done in rt_throttle.restore_orphaned(session.target):
            self.notice(session.spec.name, done)
        for done in tunings_journal.restore_orphaned(session.target):
            self.notice(session.spec.name, done)
        for done in tracing_changes.restore_orphaned(session.target):
            self.notice(session.spec.name, done)
        self._lift_throttling(session)
        cells = [c for c in self.campaign.cells
                 if c.target == session.spec.name and c.key not in session.unavailable]
        deployment = None
        try:  # preflight may have found none of the cells can run here: nothing to build for them
            if cells:
                with self.timings.phase("deploy (build programs)", session.spec.name):
                    deployment = deploy(session.target)
        finally:  # the snapshot is kept also when the build fails; it tells how the programs came to be
            if deployment is not None:
                session.info = replace(session.info, programs_build=deployment.build or None)
            session.sysinfo_id = self.store.add_sysinfo(campaign_id, session.spec.name, session.info)
            self.store.add_warnings(campaign_id, session.warnings, target=session.spec.name)
        if deployment is None:
            return
        if "reused" in deployment.build:
            self.notice(session.spec.name, f"programs not built there: {deployment.build.partition('; ')[2]} "
                                           f"(same build identity; {build_cache.ENV}=off builds every time)")
        session.bindir = deployment.bindir
        missing = unbuilt(cells, deployment.built, deployment.build_error, deployment.cross_arch)
        if missing:
            session.unavailable.update(missing)
            for why in sorted(set(missing.values())):
                self.notice(session.spec.name, f"{why}; those cells are stored as unavailable")

    def _lift_throttling(self, session: TargetSession) -> None:
        """Lift the target's RT throttling for its runs when the campaign and the target allow it
        (execution/rt_throttle.py); the sysinfo and warnings then tell the state the runs had."""
        needed = any(_bench(c).needs_probe_cpu(c) for c in self.campaign.cells
                     if c.target == session.spec.name and c.key not in session.unavailable)
        before = session.info
        session.throttle = rt_throttle.lift(session.target, self.campaign.settings.rt_throttling,
                                            needed=needed, info=before)
        session.info = replace(before, rt_throttling=replace(session.throttle.record(), needed=needed))
        if session.throttle.changed:
            session.info = replace(session.info, rt_runtime_us=rt_throttle.LIFTED_US)
        # preflight's warning told the plan; this one what was done (none once it is lifted)
        stale, done = sysinfo.check_rt_throttling(before), sysinfo.check_rt_throttling(session.info)
        session.warnings = [done if w == stale else w for w in session.warnings if w != stale or done]
        if session.throttle.changed:
            self.notice(session.spec.name, f"RT throttling lifted for the runs (sched_rt_runtime_us "
                                           f"{session.throttle.before_us} -> -1; put back when they end)")

    def _restore_throttling(self, session: TargetSession) -> None:
        """Put the target's RT throttling back (idempotent); a failure is told, and the restore
        record stays for the next campaign's sweep."""
        if session.throttle is None:
            return
        try:
            problem = session.throttle.restore()
        except Exception as exc:  # the target went away: its record stays for the next sweep
            problem = (f"could not restore RT throttling ({exc}); the next campaign on this target "
                       "restores it, or: sysctl -w kernel.sched_rt_runtime_us="
                       f"{session.throttle.original_us}")
        if problem:
            self.notice(session.spec.name, problem)

    def _same_loads(self, session: TargetSession, runs: list[tuple[Cell, int]]) -> int:
        """How many of these runs, from the first on, use the first one's loads in a row."""
        key, n = load_key(self.campaign, runs[0][0]), 0
        for cell, _ in runs:
            if cell.key in session.unavailable or load_key(self.campaign, cell) != key:
                break
            n += 1
        return n

    def _one_run(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int, loads: TargetLoads,
                 runs: int) -> str | None:
        """Measure and commit one run; None when interrupted (nothing is committed then). `runs`:
        consecutive runs of the target (this one included) that use this run's loads."""
        target, settings = session.target, self.campaign.settings_for(cell)
        bench = _bench(cell)
        estimate = bench.estimate_s(settings, cell)
        self.progress(session.spec.name, f"{bench.label(cell)} #{rep + 1}", estimate)
        run_id = uuid.uuid4().hex[:12]
        scratch = scratch_dir(target, run_id)
        local_dir = Path(tempfile.mkdtemp(prefix=f"jitterlab-{run_id}-"))
        started_ns, t0, t0_s = time.time_ns(), time.monotonic(), time.time()
        try:
            controller = target if has(target, ControllerMachine) else self._controller
            ctx = RunContext(target, settings, cell, rep, scratch, local_dir, session.bindir,
                             session.placement, session.rt_permitted, controller=controller,
                             throttling=throttling_of(session.info))
            phases, run_loads = bench, loads
            if self.timings.enabled:
                phases = TimedPhases(bench, self.timings, session.spec.name)
                run_loads = TimedLoads(loads, self.timings, session.spec.name)  # type: ignore[assignment]
            session.tuning = RunTuning(target, cell, session.placement)
            result = measure_tuned(session.tuning, ctx,
                                   lambda tuned: measure(phases, tuned, run_loads, keep=runs > 1, runs=runs),
                                   self.timings)
            if result.lost is not None:
                session.lost = result.lost
        except Exception:
            if self.stop_event.is_set():
                result = None
            else:
                raise  # a bug in jitterlab: keep its traceback
        finally:
            if self._interrupting.is_set():
                self._stopped.wait(60)  # its processes are being stopped: they may still write there
            with contextlib.suppress(Exception), self.timings.phase("scratch removal", session.spec.name):
                if self.stop_event.is_set():  # no run comes after it here
                    remove_scratch(target, scratch)
                else:  # removed as the next run makes its own, or as the target's runs end (_release)
                    retire(target, scratch)
            self.progress(session.spec.name, None, estimate)
        if self.stop_event.is_set() or result is None:
            shutil.rmtree(local_dir, ignore_errors=True)
            return None
        try:
            with self.timings.phase("commit", session.spec.name):
                self._commit(session, campaign_id, cell, rep, run_id, started_ns, time.monotonic() - t0,
                             result)
        finally:
            shutil.rmtree(local_dir, ignore_errors=True)
            self.timings.record("run", t0_s, time.time(), session.spec.name)
        return result.status

    def _commit(
        self,
        session: TargetSession,
        campaign_id: int,
        cell: Cell,
        rep: int,
        run_id: str,
        started_ns: int,
        wall_s: float,
        result: Measured,
    ) -> None:
        series = None
        metrics: dict[tuple[str, str], Metric] = {}
        warnings: list[Warning_] = []
        status, error, measurement, attachments = (result.status, result.error, result.measurement,
                                                    result.attachments)
        if measurement is not None and status == "ok":
            series = measurement.series or None
            for m in [*measurement.metrics, *result.load_metrics]:
                metrics[(m.subject, m.name)] = m
            warnings = measurement.warnings
            attachments = {**measurement.attachments, **attachments}
        placement = session.placement
        settings = StoredSettings.of(
            self.campaign.settings_for(cell), probe_cpu=placement.probe_cpu,
            program_cpus=placement.program_cpus, load_cpus=placement.load_cpus,
            rt_permitted=session.rt_permitted,
            rt_throttling=session.throttle.record() if session.throttle else ThrottleRecord.given(
                setting=self.campaign.settings.rt_throttling, changed=False,
                why="the target was not prepared"))
        record = RunRecord(
            id=run_id,
            campaign_id=campaign_id,
            cell=cell,
            repetition=rep,
            settings=settings,
            labels=dict(self.campaign.labels),
            status=status,
            error=error,
            started_ns=started_ns,
            wall_s=wall_s,
            raw_path=None,
            raw_sha256=None,
            sysinfo_id=session.sysinfo_id,
            metrics=metrics,
        )
        # the store writes the raw series and attachments, then the rows: the one commit path of imports too
        self.store.commit_run(record, warnings, series=series, files=attachments,
                              replaces=self._replaces.get((cell.key, rep)))


def throttling_of(info: SystemFacts) -> Throttling:
    """RT throttling as a run has it, from its target's sysinfo after the campaign lifted it or not."""
    warning = sysinfo.check_rt_throttling(info)
    return Throttling(warning is not None, warning.remedy if warning is not None else "")
