"""The machine's own problems that limit what a campaign measured, read from the sysinfo its runs
stored: each with its fix and what the fix would likely change in these very results, and the
evidence a target gives (bare metal, a VM, an emulated CPU). Nothing here looks at a target."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from jitterlab.model.campaigns import StoredCampaign
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import RunRecord
from jitterlab.report.format import format_value, percent
from jitterlab.report.traits import observer, own, periodic, subject_of
from jitterlab.store.damage import RowDamaged

BARE, VM, EMULATED = "bare metal", "VM", "emulated"
UNIT_EMULATED = "unit_emulated"  # the metric of a run whose wave an emulated real-time unit made
HEADLINE = "max_rel_period_error"


@dataclass(frozen=True)
class Limit:
    target: str
    what: str
    fix: str
    likely: str
    # the causes of late periods (analysis/attribution.py) its fix removes: on a traced target a
    # limit none of whose causes its traces show is not proposed (report/causes.py)
    causes: frozenset[str] = frozenset()
    tuning: str = ""  # the tuning (jitterlab/tunings/) that applies the fix for a cell's runs: measurable
    refused: str = ""  # why that tuning is not proposed: its check refused on the target when it ran


FactsOf = Callable[[int], SystemFacts | None]  # the store's sysinfo(id)


def sysinfo_by_target(runs: list[RunRecord], sysinfo_of: FactsOf) -> dict[str, SystemFacts]:
    """The latest sysinfo each target's runs were measured under."""
    latest: dict[str, int] = {}
    for r in sorted(runs, key=lambda r: r.started_ns):
        if r.sysinfo_id is not None:
            latest[r.target] = r.sysinfo_id
    return {target: info for target, sid in sorted(latest.items()) if (info := sysinfo_of(sid)) is not None}


def evidence(info: SystemFacts) -> tuple[str, str]:
    """(level, in words): bare metal, a VM (its hypervisor), or emulated (TCG: functional only)."""
    if info.emulated:
        return EMULATED, "emulated (qemu TCG): functional evidence only, never timing evidence"
    if info.virtualized:
        return VM, (f"a VM ({info.virtualization}): timing of this VM, which its hypervisor may stop at "
                    "any time")
    return BARE, "bare metal"


def emulated_targets(runs: list[RunRecord], sysinfo_of: FactsOf) -> set[str]:
    """The targets any of whose runs had an emulated CPU (evidence() EMULATED): their numbers and
    figures are functional evidence only (the terminal's note, the report's tables and figures)."""
    out: set[str] = set()
    for sysinfo_id in {r.sysinfo_id for r in runs if r.sysinfo_id is not None}:
        info = sysinfo_of(sysinfo_id)
        if info is not None and info.emulated:
            out |= {r.target for r in runs if r.sysinfo_id == sysinfo_id}
    return out


def blind_share(runs: list[RunRecord]) -> tuple[float, float] | None:
    """(blind time / measured time over the runs, the largest share of one run) of an independent
    polling probe, or None when no run has one."""
    shares, blind_ns, total_ns = [], 0.0, 0.0
    for r in runs:
        blind = own(r, "blind_time_ns") if observer(subject_of(r)).independent else None
        duration_ns = float(r.settings.duration_ns or 0)
        if r.status == "ok" and blind is not None and duration_ns > 0:
            shares.append(blind / duration_ns)
            blind_ns += blind
            total_ns += duration_ns
    return (blind_ns / total_ns, max(shares)) if shares else None


def limits(runs: list[RunRecord], sysinfo_of: FactsOf,
           traced: Mapping[str, frozenset[str]] | None = None) -> list[Limit]:
    """What limited each target's measurements, the worst first. `traced`: per target whose runs
    explained late periods, the causes its traces show (report.causes.traced_causes); a limit whose
    fix removes only causes they do not show is left out there, so the limits and the causes agree."""
    return [limit for limit, kept in _judged(runs, sysinfo_of, traced) if kept]


def withheld(runs: list[RunRecord], sysinfo_of: FactsOf, traced: Mapping[str, frozenset[str]]) -> list[Limit]:
    """The limits that limits() leaves out because the traces show none of their causes."""
    return [limit for limit, kept in _judged(runs, sysinfo_of, traced) if not kept]


def _judged(runs: list[RunRecord], sysinfo_of: FactsOf,
            traced: Mapping[str, frozenset[str]] | None) -> list[tuple[Limit, bool]]:
    out: list[tuple[Limit, bool]] = []
    for target, info in sysinfo_by_target(runs, sysinfo_of).items():
        mine = [r for r in runs if r.target == target]
        shown = (traced or {}).get(target)
        out += [(_measurable(limit, info), shown is None or not limit.causes or bool(limit.causes & shown))
                for check in _CHECKS if (limit := check(target, info, mine)) is not None]
    return out


def _measurable(limit: Limit, info: SystemFacts) -> Limit:
    """`limit` with why its tuning is not proposed where that tuning's check refused when the campaign
    ran there (SystemFacts.tuning_checks): no command is printed that would measure nothing."""
    why = info.tuning_refused(limit.tuning) if limit.tuning else None
    if why is None:
        return limit
    return replace(limit, refused=refusal(limit.tuning, f"{limit.target}: {why}"))


def refusal(tuning: str, where: str) -> str:
    """Why a tuning is not proposed, in words: "tuning T cannot be applied on TARGET: REASON"."""
    return f"tuning {tuning} cannot be applied on {where}"


# what the traces show when these limits hold (analysis/attribution.py CAUSES)
BY_OTHERS = frozenset({"wakeup", "switch", "timer", "irq", "softirq", "migration"})


def _emulated(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    if not info.emulated:
        return None
    kvm = info.kvm_needs  # what its host's architecture needs; none: KVM there cannot run this board
    return Limit(target, "an emulated CPU (qemu TCG): every instruction is translated, so periods and "
                 "errors say nothing of real timing",
                 f'boot the VM with accel = "kvm" on {kvm}, or measure on the board' if kvm else
                 "measure on the board",
                 "figures that are timing at all; these ones only show that the programs ran")


def emulated_units(runs: list[RunRecord], impl_of=lambda r: str(r.param("impl"))) -> set[tuple[str, str]]:
    """(target, impl) whose wave a real-time unit made that qemu emulated on the controller (the
    run's unit_emulated): functional evidence only, whatever the target itself is."""
    return {(r.target, impl_of(r)) for r in runs if r.metric(UNIT_EMULATED)}


def _emulated_unit(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    if not any(r.metric(UNIT_EMULATED) for r in runs):
        return None
    return Limit(target, "an emulated real-time unit (qemu TCG on the controller, timed by its clock): the "
                 "unit's wave shows that its firmware made every edge, not how a real unit keeps time",
                 'measure a real unit: unit.kind = "remoteproc" or "serial", with probe "sigrok" or "scpi" '
                 "(docs/units.md)",
                 "the unit's periods within its crystal's ppm under every load, which no emulator can "
                 "show")


def _virtual(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    virt = info.virtualization
    if not info.virtualized or info.emulated:
        return None
    worst = max((v for r in runs if r.status == "ok" and (v := own(r, HEADLINE)) is not None), default=None)
    seen = f" (the worst period here was {percent(worst)} off)" if worst is not None else ""
    square = bool(periodic(runs))
    return Limit(target, f"a VM ({virt}): the hypervisor stops it at times, and each stall is one long "
                 f"{'period' if square else 'pause'}{seen}",
                 "measure on bare metal for the hardware's figures; compare VM results only with VM ones",
                 "the max columns come close to the p99 ones: one stall per run no longer sinks a cell"
                 if square else "the hardware's own figures, without the hypervisor's pauses in them",
                 frozenset({"unaccounted"}))


def _rt_permission(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    if info.rt_permission is not False:
        return None
    return Limit(target, "SCHED_FIFO was refused: real-time impls (c-fifo) ran as normal tasks",
                 "run as root, or grant CAP_SYS_NICE or an rtprio limit (/etc/security/limits.conf)",
                 "c-fifo's own figures, well below c-mmap's under load", frozenset({"wakeup"}))


def _rt_throttling(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    runtime, period = info.rt_runtime_us, info.rt_period_us
    if runtime is None or runtime == -1:
        return None
    lost = percent(1 - runtime / period) if period else "part"
    what = (f"RT throttling (kernel.sched_rt_runtime_us={runtime}): a busy real-time task is stopped for "
            f"{lost} of every {format_value(period, 'us')}")
    square = periodic(runs)
    share = blind_share([r for r in square if _on_target(subject_of(r))])
    if share is not None:
        # its blind share is the screen's first line: said here as what the fix changes, not again
        likely = ("the polling probe (SCHED_FIFO) keeps its CPU through the throttled time: the periods it "
                  "was blind to then (its blind share, above) are measured, not excluded")
    else:
        likely = "little for tasks that sleep between their work; a busy real-time task keeps its CPU"
    for probe in sorted({subject_of(r) for r in square if not _on_target(subject_of(r))}):
        # a probe outside the target (a thread on the controller reading the emulator's monitor, an
        # analyzer) is not throttled there: its blind spans are its own reads that came late
        elsewhere = blind_share([r for r in square if subject_of(r) == probe])
        if elsewhere is not None:
            likely += (f"; probe {probe} runs on the {_location(probe)}, out of reach of the target's "
                       f"throttling: its {percent(elsewhere[0])} blind time (where its reads came late) "
                       "stays")
    root = info.user_id == 0
    fix = f"sysctl -w kernel.sched_rt_runtime_us=-1 ({'' if root else 'as root; '}until reboot)"
    if info.in_container:  # jitterlab cannot lift it from inside
        # the command first: folded at 80 columns, "...container (docker):" ended its line
        fix = f"{fix} on the host of this container ({info.container})"
    polled_here = info.rt_throttling.needed if info.rt_throttling is not None else None
    if polled_here is None:  # a sysinfo stored before the runner recorded it: the runs' probes tell
        polled_here = not square or any(_on_target(subject_of(r)) for r in square)
    if not polled_here:  # no probe to lift it for: only a busy real-time thread of the program's
        fix = ("nothing for the probes, which run outside the target; for a program that keeps a "
               f"real-time thread busy there (e.g. impl kmod-busy): {fix}")
    # from inside a container jitterlab cannot lift it either: no tuning to measure it by
    return Limit(target, what, fix, likely, tuning="" if info.in_container else "rt-unthrottled")


def _location(probe: str) -> str:
    """Where a probe runs (probes/base.py LOCATIONS); "target" for one no longer registered."""
    return observer(probe).location


def _on_target(probe: str) -> bool:
    """An independent probe that runs on the target (vpin's SCHED_FIFO poller), whom its RT
    throttling stops."""
    return bool(probe) and observer(probe).independent and _location(probe) == "target"


def _not_isolated(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    if info.isolcpus != () or (info.n_cpus or 0) < 2:
        return None
    square = bool(periodic(runs))
    who = "the program and the probe share their" if square else "the benchmark shares its"
    return Limit(target, f"no isolated CPU: {who} CPUs with every other task and interrupt",
                 "boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> and give them to the program "
                 "and the probe ([campaign.cpus])",
                 "fewer and shorter stalls: the max rule holds at shorter periods, most of all under load"
                 if square else
                 "fewer and shorter stalls: lower maxima, most of all under load", BY_OTHERS,
                 tuning="isolated")


def _governor(target: str, info: SystemFacts, runs: list[RunRecord]) -> Limit | None:
    slow = sorted({str(c.governor) for c in info.cpus or () if c.governor not in (None, "performance")})
    if not slow:
        return None
    return Limit(target, f"CPU frequency governor {'/'.join(slow)}: the clock speed changes while measuring",
                 "cpupower frequency-set -g performance",
                 "steadier wake-ups at the short periods", frozenset({"program", "idle-exit"}),
                 tuning="governor-performance")


_CHECKS = (_emulated, _emulated_unit, _virtual, _rt_permission, _rt_throttling, _not_isolated, _governor)


def measure_tuning(path: str, results: str, labels: Mapping[str, str]) -> str:
    """The command that measures a limit's fix on this campaign: its cells under `none` (committed
    already: --resume finds the campaign by its labels and skips them) and under the tuning, until
    the verdict per cell is decided; `{tuning}` is left for the tuning's name."""
    given = "".join(f" --label {shlex.quote(f'{k}={v}')}" for k, v in sorted(labels.items()))
    return (f"jitterlab run {shlex.quote(path)} --results {shlex.quote(results)} --resume{given} "
            "--tuning none,{tuning} --until-decided tuning=none..tuning={tuning}")


def measure_tuning_of(found: StoredCampaign | None, results: str) -> str:
    """measure_tuning of a stored campaign, "" when its command would not run as printed: imported
    captures, or a campaign file no longer where it was measured from."""
    if found is None or found.imported or not found.source_path:
        return ""
    if not Path(found.source_path).is_file():  # measured elsewhere or moved: it would not run as printed
        return ""
    return measure_tuning(found.source_path, results, found.labels)


@dataclass(frozen=True)
class Measure:
    """What the line under a cause's remedy naming a tuning says: the command measuring the tuning on
    the campaign shown (`template`: measure_tuning's, "" when it would not run as printed), or, for a
    tuning whose check refused on every target of the runs shown, why it is not proposed."""

    template: str = ""
    refused: Mapping[str, str] = field(default_factory=dict)  # tuning -> why, in words

    def line(self, tuning: str) -> str:
        if tuning in self.refused:
            return f"not measured by a tuning here: {self.refused[tuning]}"
        return measured_line(tuning, self.template)


NO_MEASURE = Measure()  # no command to give, nothing refused


def measure_of(found: StoredCampaign | None, runs: list[RunRecord], sysinfo_of: FactsOf,
               results: str) -> Measure:
    """The Measure of these runs: measure_tuning_of their campaign `found`, and each tuning whose
    check refused on every target they ran on, as the campaign recorded it (SystemFacts.tuning_checks;
    a target that recorded no check for it does not refuse it)."""
    def facts(sysinfo_id: int) -> SystemFacts | None:  # a damaged snapshot refuses nothing: the
        try:  # command is proposed as for a store that did not ask (the views that read it say it)
            return sysinfo_of(sysinfo_id)
        except RowDamaged:
            return None

    infos = sysinfo_by_target(runs, facts)
    refused: dict[str, str] = {}
    for tuning in sorted({c.tuning for info in infos.values() for c in info.tuning_checks or ()}):
        why = {target: w for target, info in infos.items() if (w := info.tuning_refused(tuning))}
        if why and len(why) == len(infos):
            target, reason = next(iter(why.items()))
            where = (f"{target}: {reason}" if len(why) == 1
                     else f"any of the {len(why)} targets ({target}: {reason})")
            refused[tuning] = refusal(tuning, where)
    return Measure(measure_tuning_of(found, results), refused)


def limit_measured_line(limit: Limit, template: str) -> str:
    """The line under a limit: the command measuring its tuning (measured_line), or why its tuning
    is not proposed there; "" when it has neither."""
    if limit.refused:
        return f"not measured by a tuning here: {limit.refused}"
    return measured_line(limit.tuning, template)


def measured_line(tuning: str, template: str) -> str:
    """"measure it here (tuning T): COMMAND", the line under a remedy naming its tuning, with
    `template` (measure_tuning's) filled in; "" without a tuning or a command."""
    if not tuning or not template:
        return ""
    return f"measure it here (tuning {tuning}): {template.format(tuning=tuning)}"
