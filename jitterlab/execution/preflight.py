"""Before anything runs: connect to every target, read its sysinfo, check the tools, permissions
and CPUs the campaign's cells need there, and decide where program, probe and loads run."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field, replace

from jitterlab import plugins
from jitterlab.campaign.file import Campaign, TargetSpec
from jitterlab.execution import traced
from jitterlab.execution.rt_throttle import ThrottleChange
from jitterlab.execution.tuning import Checked, RunTuning, machine_checks, refusal_warnings, refusals
from jitterlab.measure.context import Placement
from jitterlab.measure.squarewave.cell import traced as is_traced
from jitterlab.model.errors import TargetLost, UserError, Where
from jitterlab.model.facts import SystemFacts, ThrottleRecord
from jitterlab.model.records import Cell, Warning_
from jitterlab.system import sysinfo
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import (
    CrossBuilt,
    command_timeout_s,
    has,
    host_key_warning,
    lacks,
)
from jitterlab.targets.registry import offered_by
from jitterlab.targets.unreachable import UnreachableTarget

_BUILD_TOOLS = {"make": "make", "cc": "gcc"}  # every C program is built with them on the target


@dataclass
class TargetSession:
    """A target opened for a campaign, with what preflight learned about it."""

    spec: TargetSpec
    target: Target
    info: SystemFacts
    placement: Placement
    rt_permitted: bool
    bindir: str = ""
    sysinfo_id: int | None = None
    warnings: list[Warning_] = field(default_factory=list)
    lost: str | None = None  # why the target cannot be reached: its remaining runs fail with this
    # cells that cannot run on this target (it lacks their interpreter, tool or a library) -> why
    unavailable: dict[str, str] = field(default_factory=dict)
    throttle: ThrottleChange | None = None  # what the campaign did to its RT throttling (runner)
    tuning: RunTuning | None = None  # the tuning of the run measured now (runner), put back on an interrupt


def open_targets(campaign: Campaign) -> list[TargetSession]:
    """Connect to every target (in parallel), read its sysinfo, check tools and permissions.

    Raises UserError; a target that cannot be reached gets a session with `lost` set instead.
    """
    opened: dict[str, TargetSession | BaseException] = {}
    # set by each thread as it ends: Thread.join can be fooled by an interrupt (CPython gh-90882)
    ended = {s.name: threading.Event() for s in campaign.targets}

    def open_one(spec: TargetSpec) -> None:
        target = None
        try:
            factory = plugins.TARGETS.get(spec.kind, f"{campaign.path}: target.kind")
            target = factory(spec.name, spec.options, spec.where or None)
            opened[spec.name] = _preflight_or_lost(campaign, spec, target)
        except BaseException as exc:
            if target is not None:
                target.close()
            opened[spec.name] = lost_session(spec, exc.reason) if isinstance(exc, TargetLost) else exc
        finally:
            ended[spec.name].set()

    threads = [threading.Thread(target=open_one, args=(s,), daemon=True) for s in campaign.targets]
    try:
        for thread in threads:
            thread.start()
        for event in ended.values():
            while not event.wait(0.2):
                pass
    finally:
        sessions = [x for x in opened.values() if isinstance(x, TargetSession)]
        errors = [opened[s.name] for s in campaign.targets if isinstance(opened.get(s.name), BaseException)]
        if errors or len(opened) < len(threads):  # an error, or interrupted while connecting
            for session in sessions:
                session.target.close()
    if errors:
        raise errors[0]
    return [opened[s.name] for s in campaign.targets]  # type: ignore[misc]


def lost_session(spec: TargetSpec, reason: str) -> TargetSession:
    """A target that cannot be reached: its runs fail with the reason, the others go on."""
    nothing_known = SystemFacts.given()
    return TargetSession(spec, UnreachableTarget(spec.name, reason), nothing_known, Placement(None, None),
                         False, lost=reason)


def _preflight_or_lost(campaign: Campaign, spec: TargetSpec, target: Target) -> TargetSession:
    """preflight(), or the target as lost when it went away meanwhile; then it is closed here,
    outside the handler, so that an error closing it (a place not released) is raised, not lost."""
    try:
        return preflight(campaign, spec, target)
    except TargetLost as exc:
        reason = exc.reason
    target.close()
    return lost_session(spec, reason)


def preflight(campaign: Campaign, spec: TargetSpec, target: Target) -> TargetSession:
    cells = [c for c in campaign.cells if c.target == spec.name]
    settings = campaign.settings
    info = sysinfo.snapshot(target)
    needs: dict[str, tuple[str, set[str]]] = {}
    cell_tools: dict[str, set[str]] = {}  # tool -> keys of the cells that need it
    for cell in cells:
        bench: plugins.Needs = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        tools = dict(bench.tools(cell))
        if bench.programs(cell):
            tools.update(_BUILD_TOOLS)
        for tool, package in tools.items():
            needs.setdefault(tool, (package, set()))[1].add(bench.needer(cell))
            cell_tools.setdefault(tool, set()).add(cell.key)
        for load in cell.load.split("+"):
            for tool, package in plugins.LOADS.get(load, "matrix.load").tools.items():
                needs.setdefault(tool, (package, set()))[1].add(f"load {load}")
    for load in sorted({part for cell in cells for part in cell.load.split("+")}):
        load_spec = plugins.LOADS.get(load, "matrix.load")
        if load_spec.preflight is not None:
            options = settings.options_of("loads", load)
            load_spec.preflight(target, options, f"{campaign.path}: loads.{load}")
    if has(target, CrossBuilt) is not None:  # the programs are built here and sent ready to run
        for tool in _BUILD_TOOLS:
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
    declared = _undeclared(target, cells)  # what plug-ins declare they need beyond the target's tools
    for key, why in declared.items():
        unavailable.setdefault(key, why.message)
    untraced = traced.refusal(target) if any(is_traced(c) for c in cells) else None
    for cell in cells if untraced else ():
        if is_traced(cell):
            unavailable.setdefault(cell.key, untraced)  # type: ignore[arg-type]
    cells = [c for c in cells if c.key not in unavailable]
    for name in sorted({c.benchmark for c in cells}):  # what only the target can tell (a peer's answer)
        checks: plugins.Checks = plugins.BENCHMARKS.get(name, "matrix.benchmark")
        mine = [c for c in cells if c.benchmark == name]
        checks.preflight(target, settings, mine, Where(str(campaign.path), ("matrix",)))
    realtime = sorted({
        plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needer(c) for c in cells
        if plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_rt(c)
    })
    rt_permitted = bool(info.rt_permission)
    if realtime and not rt_permitted and settings.on_missing_rt == "error":
        raise UserError(
            f"{campaign.path}: target {spec.name!r} does not permit SCHED_FIFO, which "
            f"{', '.join(realtime)} needs; run as root or grant CAP_SYS_NICE (or an rtprio limit), "
            'or set campaign.on_missing_rt = "fallback" to run it as SCHED_OTHER, marked in each run'
        )
    n_cpus = info.n_cpus or 1
    # what the runner will do about RT throttling here, which the warning's remedy follows: lift it
    # only for a probe that busy-polls on the target, not for one outside it (on the controller)
    polling = any(plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_probe_cpu(c) for c in cells)
    info = replace(info, rt_throttling=ThrottleRecord.given(setting=settings.rt_throttling, needed=polling))
    warnings = list(sysinfo.checks(info))
    warnings += [w for w in [host_key_warning(target)] if w is not None]  # e.g. labgrid without known_hosts
    placement = _placement(campaign, cells, n_cpus, warnings)
    for tool in missing:
        warnings.append(
            Warning_(
                f"{tool} is missing: {', '.join(sorted(needs[tool][1]))} cannot run on this target "
                "(its runs are stored as unavailable)",
                f"apt install {needs[tool][0]} on the target, then jitterlab run --resume --retry-failed",
            )
        )
    if untraced:
        warnings.append(Warning_(f"{untraced} (its traced cells' runs are stored as unavailable)",
                                 'or set trace = "off" for this target\'s cells'))
    for why in dict.fromkeys(declared.values()):
        warnings.append(Warning_(f"{why.message} (its cells' runs are stored as unavailable)", why.remedy))
    checked: Checked = {}
    refused = refusals(target, cells, placement, checked)  # a tuning that cannot be applied to a cell here
    unavailable.update(refused)
    warnings += refusal_warnings(refused)
    info = replace(info, tuning_checks=machine_checks(target, cells, placement, checked))
    return TargetSession(
        spec, target, info, placement, rt_permitted, warnings=warnings, unavailable=unavailable
    )


def _undeclared(target: Target, cells: list[Cell]) -> dict[str, Warning_]:
    """Cells whose plug-ins declare a need this target or the controller cannot meet, found before
    anything is built for them -> why, in one line, with its remedy: a capability the target lacks (a
    probe that reads an emulated board's trace, on a real board), a command the controller lacks
    (sigrok-cli for the sigrok probe)."""
    why: dict[str, Warning_] = {}
    for cell in cells:
        bench: plugins.Needs = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        for cap, who in bench.capabilities(cell).items():
            if has(target, cap) is None:
                fix = f"measure those cells on a target that can: {offered_by(cap)}"
                why.setdefault(cell.key, Warning_(lacks(target, cap, f"{who} needs it"), fix))
        for tool, package in bench.controller_tools(cell).items():
            if shutil.which(tool) is None:
                why.setdefault(cell.key, Warning_(
                    f"the controller (this machine) lacks {tool} (apt install {package})",
                    f"apt install {package} on this machine, then jitterlab run --resume --retry-failed"))
    return why


def unbuilt(cells: list[Cell], built: frozenset[str], build_error: str,
            cross_arch: str | None = None) -> dict[str, str]:
    """Cells whose programs did not build -> why, naming the package to install: on the target, or,
    when they are cross-built here (`cross_arch`: the target's Debian architecture), the target
    architecture's package on this machine (or the sysroot the cross compiler is given)."""
    why: dict[str, str] = {}
    for cell in cells:
        bench: plugins.Needs = plugins.BENCHMARKS.get(cell.benchmark, "matrix.benchmark")
        missing = {p: pkg for p, pkg in bench.programs(cell).items() if p not in built}
        if not missing:
            continue
        packages = sorted({pkg for pkg in missing.values() if pkg})
        if cross_arch is None:
            hint = ", ".join(f"apt install {pkg}" for pkg in packages)
            where = "the target could not build"
        else:
            hint = _cross_hint(packages, cross_arch)
            where = "the programs cross-built for the target lack"
        why[cell.key] = (f"{where} {', '.join(sorted(missing))} "
                         f"({build_error or 'see make -C <programs>/c'})" + (f"; {hint}" if hint else ""))
    return why


def _cross_hint(packages: list[str], arch: str) -> str:
    """Installing the target architecture's libraries on this machine (Debian multiarch)."""
    if not packages:
        return ""
    if not arch:
        return (f"install {', '.join(packages)} of the target's architecture on this machine, "
                "or give cc a --sysroot= of the target's root that has them")
    wanted = " ".join(f"{pkg}:{arch}" for pkg in packages)
    return (f"on this machine: dpkg --add-architecture {arch}, apt update, apt install {wanted} "
            "(or give cc a --sysroot= of the target's root that has them)")


def _placement(campaign: Campaign, cells: list[Cell], n_cpus: int, warnings: list[Warning_]) -> Placement:
    """Where program, probe and loads run: [campaign.cpus], else a probe that needs a CPU of its
    own on the last CPU."""
    for role, cpus in campaign.cpus.items():
        if max(cpus) >= n_cpus:
            raise UserError(
                f"{campaign.path}: campaign.cpus.{role}: CPU {max(cpus)} does not exist on "
                f"a target with {n_cpus} CPUs (0-{n_cpus - 1})"
            )
    polling = any(plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_probe_cpu(c) for c in cells)
    if polling and n_cpus == 1:  # a busy-polling probe beside the program on one CPU sees nothing true
        probes = sorted({str(c.param("probe")) for c in cells
                         if plugins.BENCHMARKS.get(c.benchmark, "matrix.benchmark").needs_probe_cpu(c)})
        raise UserError(
            f"{campaign.path}: matrix.probe: probe {', '.join(probes)} needs a CPU of its own beside the "
            "program, and this target has one CPU; use probe = \"self\", \"gpio-loopback\" (a second GPIO "
            "line wired to the pin) or an instrument (\"sigrok\", \"scpi\")"
        )
    probe = campaign.cpus.get("probe", (n_cpus - 1,) if polling and n_cpus > 1 else ())
    probe_cpu = probe[0] if probe else None
    default_program = tuple(c for c in range(n_cpus) if c != probe_cpu) or None
    program = campaign.cpus.get("program", default_program if probe_cpu is not None else None)
    loads = campaign.cpus.get("load")
    if polling and any(c.load != "idle" for c in cells) and (loads is None or probe_cpu in loads):
        warnings.append(
            Warning_(
                f"loads run on CPU {probe_cpu} too, where the probe polls: it will be blind more often",
                'keep loads off the probe\'s CPU with [campaign.cpus] load = "..." or isolate it (isolcpus=)',
            )
        )
    if polling and program and probe_cpu in program:
        warnings.append(
            Warning_(
                f"the program and the probe share CPU {probe_cpu}",
                "give them different CPUs in [campaign.cpus]",
            )
        )
    return Placement(program_cpus=program, probe_cpu=probe_cpu, load_cpus=loads)


def _missing_tools(target: Target, tools: list[str]) -> list[str]:
    if not tools:
        return []
    script = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    timeout_s = command_timeout_s(target, 30.0)
    try:
        done = target.run(["sh", "-c", script, "sh", *tools], timeout_s=timeout_s)
    except CommandTimeout:
        raise TargetLost(f"target {target.name!r}: looking for its tools took longer than {timeout_s:g} s; "
                         "if the board is only slow, raise alive_timeout in its [[target]]") from None
    return done.stdout.split()
