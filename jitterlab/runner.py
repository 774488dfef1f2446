"""Executes the cells of a campaign on its targets: preflight, loads, benchmark, commit, resume."""

from __future__ import annotations

import contextlib
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from jitterlab import plugins, sysinfo
from jitterlab.benchmarks.base import Measurement, Placement, RunContext
from jitterlab.campaign import Campaign, Cell, TargetSpec
from jitterlab.deploy import deploy
from jitterlab.errors import RunFailed, TargetLost, UserError
from jitterlab.loads.base import LoadContext
from jitterlab.records import Metric, Warning_
from jitterlab.store.catalog import RunRecord, Store
from jitterlab.store.raw import write_raw
from jitterlab.sweep import scratch_dir, sweep
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.unreachable import UnreachableTarget


@dataclass
class TargetSession:
    """A target opened for a campaign, with what preflight learned about it."""

    spec: TargetSpec
    target: Target
    info: dict
    placement: Placement
    rt_permitted: bool
    bindir: str = ""
    sysinfo_id: int | None = None
    warnings: list[Warning_] = field(default_factory=list)
    lost: str | None = None  # why the target cannot be reached: its remaining runs fail with this
    # cells that cannot run on this target (it lacks their interpreter or tool) -> why
    unavailable: dict[str, str] = field(default_factory=dict)


@dataclass
class Outcome:
    campaign_id: int
    done: int = 0
    skipped: int = 0
    failed: int = 0
    interrupted: bool = False


# progress callback: (target name, description of the run starting or None when one ends, seconds)
Progress = Callable[[str, str | None, float], None]


_REMOVE_SCRATCH = 'rm -rf -- "$1"; rmdir -- "$2" 2>/dev/null; exit 0'


def estimate_s(campaign: Campaign, cells: list[tuple[Cell, int]]) -> float:
    return sum(
        plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").estimate_s(campaign, c) for c, _ in cells
    )


def open_targets(campaign: Campaign) -> list[TargetSession]:
    """Connect to every target (in parallel), read its sysinfo, check tools and permissions.

    Raises UserError; a target that cannot be reached gets a session with `lost` set instead.
    """
    opened: dict[str, TargetSession | BaseException] = {}

    def open_one(spec: TargetSpec) -> None:
        target = None
        try:
            factory = plugins.TARGETS.get(spec.kind, f"{campaign.path}: target.kind")
            target = factory(spec.name, spec.options)
            opened[spec.name] = _preflight(campaign, spec, target)
        except TargetLost as exc:
            if target is not None:
                target.close()
            stand_in = UnreachableTarget(spec.name, exc.reason)
            nowhere = Placement(None, None)
            opened[spec.name] = TargetSession(spec, stand_in, {}, nowhere, False, lost=exc.reason)
        except BaseException as exc:
            if target is not None:
                target.close()
            opened[spec.name] = exc

    threads = [threading.Thread(target=open_one, args=(s,), daemon=True) for s in campaign.targets]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(0.2)
    finally:
        sessions = [x for x in opened.values() if isinstance(x, TargetSession)]
        errors = [opened[s.name] for s in campaign.targets if isinstance(opened.get(s.name), BaseException)]
        if errors or len(opened) < len(threads):  # an error, or interrupted while connecting
            for session in sessions:
                session.target.close()
    if errors:
        raise errors[0]
    return [opened[s.name] for s in campaign.targets]  # type: ignore[misc]


def _preflight(campaign: Campaign, spec: TargetSpec, target: Target) -> TargetSession:
    cells = [c for c in campaign.cells if c.target == spec.name]
    info = sysinfo.snapshot(target)
    needs: dict[str, tuple[str, set[str]]] = {}
    cell_tools: dict[str, set[str]] = {}  # tool -> keys of the cells that need it
    for cell in cells:
        bench = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        for tool, package in bench.tools(cell).items():
            needs.setdefault(tool, (package, set()))[1].add(_needed_by(cell))
            cell_tools.setdefault(tool, set()).add(cell.key)
        for load in cell.load.split("+"):
            for tool, package in plugins.LOADS.get(load, "matrix.load").tools.items():
                needs.setdefault(tool, (package, set()))[1].add(f"load {load}")
    for load in sorted({part for cell in cells for part in cell.load.split("+")}):
        load_spec = plugins.LOADS.get(load, "matrix.load")
        if load_spec.preflight is not None:
            options = dict(campaign.load_options.get(load, {}))
            load_spec.preflight(target, options, f"{campaign.path}: loads.{load}")
    if getattr(target, "cross_cc", None):  # the programs are built here and sent ready to run
        for tool in ("make", "cc"):
            needs.pop(tool, None)
    missing = _missing_tools(target, sorted(needs))
    # a tool only some cells need (node for impl node, sysbench for sysbench-cpu) makes those cells
    # unavailable, and the others run; a load's tool, or the compiler every program needs, stops all
    hard = [t for t in missing if t in _BUILD_TOOLS or any(n.startswith("load ") for n in needs[t][1])]
    if hard:
        what = "; ".join(
            f"{t} (apt install {needs[t][0]}; needed by {', '.join(sorted(needs[t][1]))})" for t in hard
        )
        raise UserError(f"target {spec.name!r}: missing tools: {what}")
    unavailable: dict[str, str] = {}
    for tool in missing:
        for key in cell_tools[tool]:
            why = f"{tool} (apt install {needs[tool][0]})"
            unavailable[key] = f"{unavailable[key]}, {why}" if key in unavailable else why
    unavailable = {k: f"the target lacks {v}" for k, v in unavailable.items()}
    cells = [c for c in cells if c.key not in unavailable]
    for name in sorted({c.benchmark for c in cells}):  # what only the target can tell (a peer's answer)
        bench = plugins.BENCHMARKS.get(name, "matrix.benchmark")
        bench.preflight(target, campaign, [c for c in cells if c.benchmark == name])
    realtime = sorted(
        {_needed_by(c) for c in cells if plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_rt(c)}
    )
    rt_permitted = bool(info.get("rt_permission"))
    if realtime and not rt_permitted and campaign.on_missing_rt == "error":
        raise UserError(
            f"{campaign.path}: target {spec.name!r} does not permit SCHED_FIFO, which "
            f"{', '.join(realtime)} needs; run as root or grant CAP_SYS_NICE (or an rtprio limit), "
            'or set campaign.on_missing_rt = "fallback" to run it as SCHED_OTHER, marked in each run'
        )
    n_cpus = int(info.get("n_cpus") or 1)
    warnings = list(sysinfo.checks(info))
    placement = _placement(campaign, cells, n_cpus, warnings)
    for tool in missing:
        warnings.append(
            Warning_(
                f"{tool} is missing: {', '.join(sorted(needs[tool][1]))} cannot run on this target "
                "(its runs are stored as unavailable)",
                f"apt install {needs[tool][0]} on the target, then jitterlab run --resume --retry-failed",
            )
        )
    return TargetSession(
        spec, target, info, placement, rt_permitted, warnings=warnings, unavailable=unavailable
    )


def _lost_meanwhile(target: Target) -> TargetLost | None:
    """After a failed run: is the target itself gone? (one command, only when a run failed)"""
    try:
        target.run(["true"], timeout_s=30)
    except TargetLost as exc:
        return exc
    except (RunFailed, CommandTimeout):
        return None
    return None


_BUILD_TOOLS = {"make", "cc"}  # every C program is built with them when the target is prepared


def _needed_by(cell: Cell) -> str:
    return f"impl {cell.impl}" if cell.benchmark == "squarewave" else f"benchmark {cell.benchmark}"


def _placement(campaign: Campaign, cells: list[Cell], n_cpus: int, warnings: list[Warning_]) -> Placement:
    """Where program, probe and loads run: [campaign.cpus], else the probe on the last CPU."""
    for role, cpus in campaign.cpus.items():
        if max(cpus) >= n_cpus:
            raise UserError(
                f"{campaign.path}: campaign.cpus.{role}: CPU {max(cpus)} does not exist on "
                f"a target with {n_cpus} CPUs (0-{n_cpus - 1})"
            )
    vpin = any(c.probe == "vpin" for c in cells)
    probe = campaign.cpus.get("probe", (n_cpus - 1,) if vpin and n_cpus > 1 else ())
    probe_cpu = probe[0] if probe else None
    default_program = tuple(c for c in range(n_cpus) if c != probe_cpu) or None
    program = campaign.cpus.get("program", default_program if probe_cpu is not None else None)
    loads = campaign.cpus.get("load")
    if vpin and probe_cpu is None:
        warnings.append(
            Warning_(
                "one CPU only: the vpin probe shares it with the program and is "
                "blind whenever the program runs",
                'use probe = "self"',
            )
        )
    elif vpin and any(c.load != "idle" for c in cells) and (loads is None or probe_cpu in loads):
        warnings.append(
            Warning_(
                f"loads run on CPU {probe_cpu} too, where the vpin probe polls: it will be blind more often",
                'keep loads off the probe\'s CPU with [campaign.cpus] load = "..." or isolate it (isolcpus=)',
            )
        )
    if vpin and program and probe_cpu in program:
        warnings.append(
            Warning_(
                f"the program and the vpin probe share CPU {probe_cpu}",
                "give them different CPUs in [campaign.cpus]",
            )
        )
    return Placement(program_cpus=program, probe_cpu=probe_cpu, load_cpus=loads)


def _missing_tools(target: Target, tools: list[str]) -> list[str]:
    if not tools:
        return []
    script = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    done = target.run(["sh", "-c", script, "sh", *tools], timeout_s=30)
    return done.stdout.split()


class Runner:
    def __init__(
        self,
        campaign: Campaign,
        store: Store,
        *,
        resume: bool = False,
        retry_failed: bool = False,
        progress: Progress | None = None,
    ) -> None:
        self.campaign = campaign
        self.store = store
        self.resume = resume
        self.retry_failed = retry_failed
        self.progress = progress or (lambda target, what, seconds: None)
        self.notice: Callable[[str, str], None] = lambda target, message: None
        self.stop_event = threading.Event()

    def campaign_id(self) -> int:
        c = self.campaign
        if self.resume:
            previous = self.store.latest_campaign(c.name)
            if previous is not None:
                if previous["fingerprint"] != c.fingerprint:
                    raise UserError(
                        f"{c.path}: --resume: campaign {c.name!r} in {self.store.root} was run with "
                        "other settings (duration, warmup, labels, repetitions or load options "
                        "changed); run without --resume to start it afresh, or restore the old file"
                    )
                return int(previous["id"])
        return self.store.new_campaign(c.name, c.fingerprint, str(c.path), c.source, dict(c.labels))

    def pending(self, campaign_id: int) -> tuple[list[tuple[Cell, int]], int]:
        committed = self.store.committed(campaign_id)
        todo, skipped = [], 0
        for cell, rep in self.campaign.runs():
            status = committed.get((cell.key, rep))
            if status is None or (self.retry_failed and status != "ok"):
                todo.append((cell, rep))
            else:
                skipped += 1
        return todo, skipped

    def execute(self, sessions: list[TargetSession], campaign_id: int) -> Outcome:
        todo, skipped = self.pending(campaign_id)
        outcome = Outcome(campaign_id, skipped=skipped)
        lock = threading.Lock()
        errors: list[BaseException] = []

        def worker(session: TargetSession) -> None:
            try:
                if session.lost is None:
                    try:
                        self._prepare(session, campaign_id)
                    except RunFailed as exc:  # unreachable, or its disk is full: no run can work
                        session.lost = exc.reason
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

        threads = [
            threading.Thread(target=worker, args=(s,), name=f"target-{s.spec.name}", daemon=True)
            for s in sessions
        ]
        for thread in threads:
            thread.start()
        try:
            while any(t.is_alive() for t in threads):
                for thread in threads:
                    thread.join(0.2)
        except KeyboardInterrupt:
            outcome.interrupted = True
            self.stop_event.set()
            for session in sessions:
                session.target.close()  # kills what runs; the interrupted run is not committed
            for thread in threads:
                thread.join(30)
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
            bench = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
            self._commit(
                session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
                "failed", f"not run: {session.lost}", None, [], {},
            )  # fmt: skip
            self.progress(session.spec.name, None, bench.estimate_s(self.campaign, cell))
        return len(runs)

    def _unavailable(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int) -> str:
        """Commit a run the target cannot do (it lacks the cell's tool) as unavailable, with why."""
        self._commit(
            session, campaign_id, cell, rep, uuid.uuid4().hex[:12], time.time_ns(), 0.0,
            "unavailable", session.unavailable[cell.key], None, [], {},
        )  # fmt: skip
        bench = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        self.progress(session.spec.name, None, bench.estimate_s(self.campaign, cell))
        return "unavailable"

    def _prepare(self, session: TargetSession, campaign_id: int) -> None:
        for leftover in sweep(session.target):
            self.notice(session.spec.name, f"stopped a leftover of an earlier killed run: {leftover}")
        session.sysinfo_id = self.store.add_sysinfo(campaign_id, session.spec.name, session.info)
        self.store.add_warnings(campaign_id, session.warnings, target=session.spec.name)
        session.bindir = deploy(session.target)

    def _one_run(self, session: TargetSession, campaign_id: int, cell: Cell, rep: int) -> str | None:
        """Measure and commit one run; None when interrupted (nothing is committed then)."""
        target, campaign = session.target, self.campaign
        bench = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        estimate = bench.estimate_s(campaign, cell)
        self.progress(session.spec.name, f"{cell.label()} #{rep + 1}", estimate)
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
            ctx = RunContext(
                target,
                campaign,
                cell,
                rep,
                scratch,
                local_dir,
                session.bindir,
                session.placement,
                session.rt_permitted,
            )
            measurement = bench.execute(ctx)
            for name, load in loads:
                self._check_load(name, load, "during")
            load_metrics = self._stop_loads(loads)
            loads = []
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
            with contextlib.suppress(Exception):
                # the run's directory, and its owner's when it was the last one in it
                target.run(["sh", "-c", _REMOVE_SCRATCH, "sh", scratch, scratch.rsplit("/", 1)[0]])
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
        c = self.campaign
        # the tools bound their own lifetime too, so not even a SIGKILLed runner leaves them forever
        lifetime_s = (c.load_warmup_ns + c.warmup_ns + c.duration_ns + c.run_timeout_ns) / 1e9 + 30
        started = []
        for name in parts:
            spec = plugins.LOADS.get(name, "matrix.load")
            load = spec.factory()
            options = dict(self.campaign.load_options.get(name, {}))
            load.start(
                LoadContext(
                    target, f"{scratch}/load-{name}", placement.load_cpus, options, max_duration_s=lifetime_s
                )
            )
            started.append((name, load))
        if cell.load != "idle":
            time.sleep(self.campaign.load_warmup_ns / 1e9)
            for name, load in started:
                self._check_load(name, load, "before")
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
                raw_path = f"raw/{run_id}.parquet"
                raw_sha = write_raw(self.store.root / raw_path, measurement.series)
            for m in [*measurement.metrics, *load_metrics]:
                metrics[(m.probe, m.name)] = m
            warnings = measurement.warnings
            attachments = {**measurement.attachments, **attachments}
        params = {
            "cell": dict(cell.params),
            "duration_ns": self.campaign.duration_ns,
            "warmup_ns": self.campaign.warmup_ns,
            "blind_threshold_ns": self.campaign.blind_threshold_ns,
            "probe_cpu": session.placement.probe_cpu,
            "program_cpus": session.placement.program_cpus,
            "load_cpus": session.placement.load_cpus,
            "rt_permitted": session.rt_permitted,
            "load_options": {k: dict(v) for k, v in self.campaign.load_options.items()},
        }
        record = RunRecord(
            id=run_id,
            campaign_id=campaign_id,
            cell_key=cell.key,
            repetition=rep,
            target=cell.target,
            benchmark=cell.benchmark,
            impl=cell.impl,
            load=cell.load,
            period_ns=cell.period_ns,
            probe=cell.probe,
            pin=cell.pin,
            params=params,
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
        self.store.commit_run(record, warnings)
