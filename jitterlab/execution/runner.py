"""Executes the cells of a campaign on its targets: preflight, loads, benchmark, commit, resume."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jitterlab import plugins
from jitterlab.campaign.file import Campaign
from jitterlab.execution.deploy import deploy
from jitterlab.execution.preflight import TargetSession, open_targets, unbuilt
from jitterlab.execution.sweep import sweep
from jitterlab.measure.benchmarks.base import Benchmark, Measurement
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.loads.base import LoadContext
from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.model.records import Cell, Metric, RunRecord, Warning_
from jitterlab.store.catalog import Store
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import remove_records, remove_scratch, scratch_dir

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
    return sum(_bench(c).estimate_s(campaign.settings, c) for c, _ in cells)


def _bench(cell: Cell) -> Benchmark:
    return plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")


def _warm(benches: set[Benchmark]) -> None:
    for bench in benches:
        with contextlib.suppress(Exception):  # a failure here shows again where it matters: in a run
            bench.warm()


def _lost_meanwhile(target: Target) -> TargetLost | None:
    """After a failed run: is the target itself gone? (one command, only when a run failed)"""
    try:
        target.run(["true"], timeout_s=30)
    except TargetLost as exc:
        return exc
    except (RunFailed, CommandTimeout):
        return None
    return None


class _LoadWarmup:
    """Called once the benchmark is about to measure: waits out the rest of the loads' warm-up
    (the benchmark may have prepared its probe meanwhile) and checks that they run. Idempotent."""

    def __init__(self, loads: list, until: float, check) -> None:
        self._loads, self._until, self._check = loads, until, check
        self._done = False

    def __call__(self) -> None:
        if self._done:
            return
        self._done = True
        if not self._until:
            return
        time.sleep(max(0.0, self._until - time.monotonic()))
        for name, load in self._loads:
            self._check(name, load, "before")


class _LoadStop:
    """Called once the benchmark's measurement has ended: checks that the loads ran all along,
    stops them and keeps what they report. Idempotent."""

    def __init__(self, loads: list, check, stop) -> None:
        self._loads, self._check, self._stop = loads, check, stop
        self.metrics: list[Metric] = []
        self._done = False

    def __call__(self) -> None:
        if self._done:
            return
        self._done = True
        for name, load in self._loads:
            self._check(name, load, "during")
        self.metrics = self._stop(self._loads)
        self._loads.clear()


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
    ) -> None:
        self.campaign = campaign
        self.store = store
        self.resume = resume
        self.retry_failed = retry_failed
        self.retry_damaged = retry_damaged
        self._replaces: dict[tuple[str, int], str] = {}  # a run measured again -> the run it replaces
        self._campaign_id: int | None = None
        self.progress = progress or (lambda target, what, seconds: None)
        self.notice: Callable[[str, str], None] = lambda target, message: None
        self.stop_event = threading.Event()
        # on an interrupt: set once the main thread has stopped what ran on the targets, so a run's
        # cleanup does not remove its directory while its observer and loads still write into it
        self._interrupting, self._stopped = threading.Event(), threading.Event()
        self._controller: LocalTarget | None = None
        self.only_repetitions: set[int] | None = None  # monitor: one interval's repetition at a time

    def resumed_campaign(self) -> int | None:
        """With --resume, the latest campaign of this name in the store, locked until the store is
        closed (a second jitterlab measuring it is refused, naming who measures it); None when
        there is none to resume."""
        c = self.campaign
        if self._campaign_id is not None or not self.resume:
            return self._campaign_id
        previous = self.store.latest_campaign(c.name)
        if previous is None:
            return None
        if previous["fingerprint"] != c.fingerprint:
            raise UserError(
                f"{c.path}: --resume: campaign {c.name!r} in {self.store.where} was run with "
                "other settings (duration, warmup, labels, repetitions or load options "
                "changed); run without --resume to start it afresh, or restore the old file"
            )
        self.store.lock_campaign(int(previous["id"]), c.name)
        self._campaign_id = int(previous["id"])
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
        todo, skipped = self.pending(campaign_id)
        outcome = Outcome(campaign_id, skipped=skipped)
        lock = threading.Lock()
        errors: list[BaseException] = []
        # the analysis' compiled code loads while the targets are prepared, not in the first run
        warming = threading.Thread(target=_warm, args=({_bench(c) for c, _ in todo},),
                                   name="warm-analysis", daemon=True)
        warming.start()

        # set by each worker as it ends: waited on instead of Thread.join, which an interrupt arriving
        # inside it can leave believing the thread ended while it still cleans up (CPython gh-90882)
        ended = {s.spec.name: threading.Event() for s in sessions}

        def worker(session: TargetSession) -> None:
            try:
                if session.lost is None:
                    try:
                        self._prepare(session, campaign_id)
                    except RunFailed as exc:  # unreachable, or its disk is full: no run can work
                        session.lost = exc.reason
                warming.join()
                mine = [x for x in todo if x[0].target == session.spec.name]
                for i, (cell, rep) in enumerate(mine):
                    if self.stop_event.is_set():
                        return
                    if session.lost is not None:
                        failed = self._not_run(session, campaign_id, mine[i:])
                        with lock:
                            outcome.done += failed
                            outcome.failed += failed
                        return
                    if cell.key in session.unavailable:
                        status = self._unavailable(session, campaign_id, cell, rep)
                    else:
                        status = self._one_run(session, campaign_id, cell, rep)
                    if status is None:
                        return
                    with lock:
                        outcome.done += 1
                        outcome.failed += status != "ok"
            except BaseException as exc:
                if not self.stop_event.is_set():
                    errors.append(exc)
                self.stop_event.set()
            finally:
                try:
                    if session.lost is None:
                        with contextlib.suppress(Exception):  # records of processes stopped after a run
                            remove_records(session.target)
                finally:
                    ended[session.spec.name].set()

        threads = [
            threading.Thread(target=worker, args=(s,), name=f"target-{s.spec.name}", daemon=True)
            for s in sessions
        ]
        if any(getattr(s.target, "kind", "") != "local" for s in sessions):
            self._controller = LocalTarget(name="controller")  # where instruments and clients run
        try:
            for thread in threads:
                thread.start()
            try:
                while not all(e.is_set() for e in ended.values()):
                    for event in ended.values():
                        event.wait(0.2)
            except KeyboardInterrupt:
                outcome.interrupted = True
                self._interrupting.set()
                self.stop_event.set()
                try:
                    for session in sessions:
                        session.target.close()  # kills what runs; the interrupted run is not committed
                finally:
                    self._stopped.set()
                for event in ended.values():
                    event.wait(30)  # the interrupted runs remove their directories
        finally:
            if self._controller is not None:
                self._controller.close()
        if errors:
            raise errors[0]
        return outcome

    def _not_run(self, session: TargetSession, campaign_id: int, runs: list[tuple[Cell, int]]) -> int:
        """Commit runs of a target that cannot be reached as failed, with the reason."""
        self.notice(
            session.spec.name,
            f"{session.lost}; its {len(runs)} remaining run(s) are stored as failed "
            "(measure them later with run --resume --retry-failed)",
        )
        for cell, rep in runs:
            self._commit(
                session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
                "failed", f"not run: {session.lost}", None, [], {},
            )  # fmt: skip
            self.progress(session.spec.name, None, _bench(cell).estimate_s(self.campaign.settings, cell))
        return len(runs)

    def _unavailable(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int) -> str:
        """Commit a run the target cannot do (it lacks the cell's tool) as unavailable, with why."""
        self._commit(
            session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
            "unavailable", session.unavailable[cell.key], None, [], {},
        )  # fmt: skip
        self.progress(session.spec.name, None, _bench(cell).estimate_s(self.campaign.settings, cell))
        return "unavailable"

    def _prepare(self, session: TargetSession, campaign_id: int) -> None:
        for leftover in sweep(session.target):
            self.notice(session.spec.name, f"stopped a leftover of an earlier killed run: {leftover}")
        session.sysinfo_id = self.store.add_sysinfo(campaign_id, session.spec.name, session.info)
        self.store.add_warnings(campaign_id, session.warnings, target=session.spec.name)
        deployment = deploy(session.target)
        session.bindir = deployment.bindir
        cells = [c for c in self.campaign.cells
                 if c.target == session.spec.name and c.key not in session.unavailable]
        missing = unbuilt(cells, deployment.built, deployment.build_error)
        if missing:
            session.unavailable.update(missing)
            for why in sorted(set(missing.values())):
                self.notice(session.spec.name, f"{why}; those cells are stored as unavailable")

    def _one_run(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int) -> str | None:
        """Measure and commit one run; None when interrupted (nothing is committed then)."""
        target, settings = session.target, self.campaign.settings
        bench = _bench(cell)
        estimate = bench.estimate_s(settings, cell)
        self.progress(session.spec.name, f"{bench.label(cell)} #{rep + 1}", estimate)
        run_id = uuid.uuid4().hex[:12]
        scratch = scratch_dir(target, run_id)
        local_dir = Path(tempfile.mkdtemp(prefix=f"jitterlab-{run_id}-"))
        started_ns, t0 = time.time_ns(), time.monotonic()
        loads: list = []
        measurement, status, error = None, "ok", None
        attachments: dict[str, bytes] = {}
        load_metrics: list[Metric] = []
        try:
            target.run(["mkdir", "-p", scratch])
            loads = self._start_loads(cell, target, scratch, session.placement)
            until = time.monotonic() + settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
            warmed = _LoadWarmup(loads, until, self._check_load)
            finished = _LoadStop(loads, self._check_load, self._stop_loads)
            ctx = RunContext(
                target,
                settings,
                cell,
                rep,
                scratch,
                local_dir,
                session.bindir,
                session.placement,
                session.rt_permitted,
                controller=target if getattr(target, "kind", "") == "local" else self._controller,
                loads_ready=warmed,
                loads_done=finished,
            )
            if not getattr(bench, "awaits_loads", False):
                warmed()
            measurement = bench.execute(ctx)
            warmed()  # a benchmark that awaits the loads itself may have failed before it did
            finished()  # unless the benchmark stopped them before its analysis
            load_metrics = finished.metrics
        except RunFailed as exc:
            status, error, attachments = exc.status, exc.reason, exc.attachments
            lost = exc if isinstance(exc, TargetLost) else _lost_meanwhile(target)
            if lost is not None:  # a program killed by a dropped connection is no finding of the run
                session.lost = lost.reason
                error = exc.reason if lost is exc else f"{lost.reason} (the run itself said: {exc.reason})"
        except CommandTimeout as exc:
            status, error = "timeout", str(exc)
        except Exception:
            if self.stop_event.is_set():
                return None
            raise  # a bug in jitterlab: keep its traceback
        finally:
            for _, load in loads:
                with contextlib.suppress(Exception):
                    load.stop()
            if self._interrupting.is_set():
                self._stopped.wait(60)  # its processes are being stopped: they may still write there
            with contextlib.suppress(Exception):
                remove_scratch(target, scratch)
            self.progress(session.spec.name, None, estimate)
        if self.stop_event.is_set():
            shutil.rmtree(local_dir, ignore_errors=True)
            return None
        try:
            self._commit(
                session,
                campaign_id,
                cell,
                rep,
                run_id,
                started_ns,
                time.monotonic() - t0,
                status,
                error,
                measurement,
                load_metrics,
                attachments,
            )
        finally:
            shutil.rmtree(local_dir, ignore_errors=True)
        return status

    def _start_loads(self, cell: Cell, target: Target, scratch: str, placement: Placement) -> list:
        parts = cell.load.split("+")
        c = self.campaign.settings
        # the tools bound their own lifetime too, so not even a SIGKILLed runner leaves them forever
        lifetime_s = (c.load_warmup_ns + c.warmup_ns + c.duration_ns + c.run_timeout_ns) / 1e9 + 30
        started = []
        for name in parts:
            spec = plugins.LOADS.get(name, "matrix.load")
            load = spec.factory()
            options = c.options_of("loads", name)
            load.start(
                LoadContext(
                    target, f"{scratch}/load-{name}", placement.load_cpus, options, max_duration_s=lifetime_s
                )
            )
            started.append((name, load))
        return started

    @staticmethod
    def _check_load(name: str, load, when: str) -> None:
        try:
            load.check()
        except TargetLost:
            raise
        except RunFailed as exc:
            raise RunFailed(
                f"load {name} was not running {when} the measurement: {exc.reason}", status="failed"
            ) from None

    @staticmethod
    def _stop_loads(loads: list) -> list[Metric]:
        metrics: list[Metric] = []
        for name, load in loads:
            for m in load.stop():
                metrics.append(
                    Metric(m.name if len(loads) == 1 else f"{m.name}_{name}", m.value, m.unit, m.probe,
                           m.direction)
                )
        return metrics

    def _commit(
        self,
        session: TargetSession,
        campaign_id: int,
        cell: Cell,
        rep: int,
        run_id: str,
        started_ns: int,
        wall_s: float,
        status: str,
        error: str | None,
        measurement: Measurement | None,
        load_metrics: list[Metric],
        attachments: dict[str, bytes],
    ) -> None:
        raw_path = raw_sha = None
        metrics: dict[tuple[str, str], Metric] = {}
        warnings: list[Warning_] = []
        if measurement is not None and status == "ok":
            if measurement.series:
                raw_path, raw_sha = self.store.write_series(run_id, measurement.series)
            for m in [*measurement.metrics, *load_metrics]:
                metrics[(m.probe, m.name)] = m
            warnings = measurement.warnings
            attachments = {**measurement.attachments, **attachments}
        settings = {
            **self.campaign.settings.as_json(),
            "probe_cpu": session.placement.probe_cpu,
            "program_cpus": session.placement.program_cpus,
            "load_cpus": session.placement.load_cpus,
            "rt_permitted": session.rt_permitted,
        }
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
            raw_path=raw_path,
            raw_sha256=raw_sha,
            sysinfo_id=session.sysinfo_id,
            metrics=metrics,
            attachments=self.store.write_attachments(run_id, attachments),
        )
        self.store.commit_run(record, warnings, replaces=self._replaces.get((cell.key, rep)))
