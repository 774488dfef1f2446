"""The checks of `jitterlab doctor`: is a machine ready to be measured, and what should be fixed?

Reads the sysinfo snapshot (sysinfo.snapshot / sysinfo.checks) and tuning topics of a target that is
open already, looks for the tools it is told are needed, and makes one finding per topic with its
fix. Opening the target, knowing which plug-ins need which tool, and looking for instruments on
the controller are the command's (cli/commands/doctor.py).
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.arch import of_uname
from jitterlab.model.errors import TargetLost
from jitterlab.model.facts import SystemFacts, UnitFacts
from jitterlab.model.records import Warning_
from jitterlab.model.units import cpu_list
from jitterlab.system import sysinfo, tuning
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import CommandsUnit, CrossBuilt, command_timeout_s, has, host_key_warning

# tool -> (the Debian package that has it, who needs it: "impl node", "load cpu", ...)
Needs = Mapping[str, tuple[str, set[str]]]
BUILD_TOOLS = ("make", "cc")  # what building the programs on the target takes


@dataclass(frozen=True)
class Finding:
    """One topic of the diagnosis; `fix` None means all is well there; `informational`: what was
    found (probes, instruments), neither well nor to fix."""

    topic: str
    state: str
    fix: str | None = None
    informational: bool = False
    tuning: str = ""  # the tuning (jitterlab/tunings/) that applies the fix for a cell's runs: measurable


# doctor's topics whose fix a tuning applies for a cell's runs, as report/limits names them
TUNING_OF_TOPIC = {"RT throttling": "rt-unthrottled", "CPU governor": "governor-performance",
                   "isolcpus": "isolated", "IRQ affinity": "irq-away", "idle states": "cpu-dma-latency"}


def _missing(target: Target, tools: list[str]) -> list[str]:
    script = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    timeout_s = command_timeout_s(target, 30.0)
    try:
        return target.run(["sh", "-c", script, "sh", *tools], timeout_s=timeout_s).stdout.split()
    except CommandTimeout:
        raise TargetLost(f"target {target.name!r}: looking for its tools took longer than {timeout_s:g} s; "
                         "if the board is only slow, raise alive_timeout in its [[target]]") from None


def examine(target: Target, needs: Needs) -> tuple[SystemFacts, list[Finding]]:
    """The snapshot and the findings, tools first (`needs`: the tools to look for)."""
    info = sysinfo.snapshot(target)
    cross = has(target, CrossBuilt)
    if cross is not None:  # programs are built on the controller, not there
        needs = {t: v for t, v in needs.items() if t not in BUILD_TOOLS}
    missing = _missing(target, sorted(needs))
    present = [t for t in sorted(needs) if t not in missing]
    findings = [Finding("tools", f"{len(present)} of {len(needs)} present: {', '.join(present)}")]
    if missing:
        packages = sorted({needs[t][0] for t in missing})
        who = "; ".join(f"{t} ({needs[t][0]}) for {', '.join(sorted(needs[t][1]))}" for t in missing)
        findings.append(Finding("missing tools", who, _install(target, info, packages)))
    if cross is not None:
        findings.append(_cross_cc(cross.cross_cc, info))
    unit = has(target, CommandsUnit)
    if unit is not None:
        findings += _unit(unit, info)
    warning = host_key_warning(target)  # e.g. labgrid without known_hosts
    if warning is not None:
        findings.append(Finding("host key", warning.message, warning.remedy))
    covered: set[str] = set()

    def topic(name: str, state: str, warning: Warning_ | None) -> None:
        if warning is not None:
            covered.add(warning.message)
        if warning is None:
            findings.append(Finding(name, state))
            return
        tuning = TUNING_OF_TOPIC.get(name, "")
        if name == "RT throttling" and info.in_container:  # jitterlab cannot lift it from inside either
            tuning = ""
        findings.append(Finding(name, warning.message, warning.remedy, tuning=tuning))

    rt = info.rt_permission
    topic("RT permission", "SCHED_FIFO permitted" if rt else "unknown (no chrt: apt install util-linux)",
          sysinfo.check_rt_permission(info))  # fmt: skip
    governors = sorted({c.governor or "-" for c in info.cpus or ()})
    topic("CPU governor", "/".join(governors) if governors != ["-"] and governors else "no cpufreq (fixed)",
          sysinfo.check_governor(info))  # fmt: skip
    iso = info.isolcpus
    topic("isolcpus", cpu_list(iso) if iso else "none", sysinfo.check_isolated_cpus(info))
    topic("clocksource", str(info.clocksource), sysinfo.check_clocksource(info))
    model = info.preemption
    if model is None and info.kernel_version and "PREEMPT" not in info.kernel_version:
        model = "none or voluntary"  # uname -v names PREEMPT, PREEMPT_DYNAMIC and PREEMPT_RT kernels
    findings.append(_preemption(model, info.machine, _booted_by_us(target, info)))
    runtime = info.rt_runtime_us
    topic("RT throttling", "off" if runtime == -1 else "unknown", sysinfo.check_rt_throttling(info))
    topic("virtualization", str(info.virtualization or "unknown"), sysinfo.check_virtualized(info))
    loadavg = info.loadavg
    topic("load average", f"{loadavg[0]:.2f}" if loadavg else "unknown", sysinfo.check_load_average(info))
    for name, state, warning in tuning.topics(info):  # idle states, nohz/rcu, IRQs, SMT, THP, SMI, memory
        topic(name, state, warning)
    for warning in sysinfo.checks(info):
        if warning.message not in covered:
            findings.append(Finding("other", warning.message, warning.remedy))
    return info, findings


def rt_kernel_package(uname_m: str | None) -> str | None:
    """Debian's PREEMPT_RT kernel package for a machine of this `uname -m`, None when it has none."""
    arch = of_uname(uname_m)
    return arch.rt_package if arch is not None else None


def rt_kernel_hint(uname_m: str | None) -> str:
    """How to get a PREEMPT_RT kernel on a machine of this `uname -m` (Debian's package for it)."""
    package = rt_kernel_package(uname_m)
    if package is not None:
        return f"apt install {package}"
    return (f"Debian has no PREEMPT_RT kernel package for {uname_m or 'this architecture'}: "
            "build one with CONFIG_PREEMPT_RT")


def _preemption(model: str | None, uname_m: str | None = None, booted: str | None = None) -> Finding:
    """`booted`: the [[target]] of a VM jitterlab boots, whose kernel and command line are its options."""
    if model is None:
        return Finding("preemption", "unknown (no kernel config readable)")
    if model == "rt" or model.endswith("full") or model.endswith("lazy"):
        return Finding("preemption", model)
    switch = model.startswith("dynamic")  # preempt= only switches a kernel built with PREEMPT_DYNAMIC
    if booted is not None:
        package = rt_kernel_package(uname_m)
        rt = 'kernel = "rt"' + (f" ({package})" if package else "")
        fix = f'{booted}: ' + (f'cmdline = "preempt=full", or {rt}' if switch else rt)
    else:
        fix = ("boot with preempt=full or install a PREEMPT_RT kernel" if switch else
               "install a PREEMPT_RT kernel (this kernel has no PREEMPT_DYNAMIC to switch)")
        fix += f" ({rt_kernel_hint(uname_m)})"
    return Finding("preemption", f"{model}: a task waits for the kernel to reach a preemption point", fix)


def _booted_by_us(target: Target, info: SystemFacts) -> str | None:
    """'in [[target]] "NAME"' for a VM jitterlab boots (its kernel, command line and root are options
    of its [[target]]), else None."""
    return f'in [[target]] "{target.name}"' if info.vm is not None and info.vm.machine else None


def _install(target: Target, info: SystemFacts, packages: list[str]) -> str:
    """How to get `packages` onto the target: apt on it, or, for a board jitterlab boots with a root of
    its own (read-only, built on the controller), into that root's package list."""
    if _board_root(info) and (booted := _booted_by_us(target, info)) is not None:
        listed = ", ".join(f'"{p}"' for p in packages)
        return f"{booted}: packages = [{listed}] (jitterlab builds the board's root again with them)"
    return f"apt install {' '.join(packages)}"


# "aarch64-linux-gnu-gcc-12" -> Debian's gcc-12-aarch64-linux-gnu: the cross compiler's package
_CROSS_GCC = re.compile(r"^(?P<triplet>[\w.]+-[\w.]+-[\w.]+)-gcc(?P<version>-\d+)?$")


def _board_root(info: SystemFacts) -> str | None:
    """The board's own root image a VM jitterlab booted runs, if it does."""
    return info.vm.root if info.vm is not None else None


def _cross_cc(cross_cc: str, info: SystemFacts) -> Finding:
    word = cross_cc.split()[0]
    if shutil.which(word) is not None:
        whose = "the board's" if _board_root(info) else "the target's"
        return Finding("cross cc", f"{word} on the controller builds {whose} programs")
    m = _CROSS_GCC.match(word)
    fix = (f"apt install gcc{m['version'] or ''}-{m['triplet']}" if m else
           f"install {word}, the cross compiler for the target, on the controller")
    return Finding("cross cc", f"{word} is not installed here", fix)


def _unit(unit: CommandsUnit, info: SystemFacts) -> list[Finding]:
    """The real-time unit beside the target: its firmware, built here (the toolchain), and what the
    unit needs there (a remoteproc core, a writable firmware directory, its tty), without loading it."""
    out = []
    facts = info.unit or UnitFacts()
    what = f"{facts.profile} ({facts.kind})"
    if facts.firmware_error:
        out.append(Finding("unit firmware", f"{what}: does not build here", facts.firmware_error))
    elif facts.firmware_sha256:
        out.append(Finding("unit firmware", f"{what}: built here with arm-none-eabi-gcc, "
                           f"{facts.flash_bytes} B flash, {facts.ram_bytes} B RAM, "
                           f"sha256 {facts.firmware_sha256[:12]}"))
    else:
        out.append(Finding("unit firmware", f"{what}: {facts.firmware or 'not built by jitterlab'}"))
    return out + [Finding(topic, state, fix) for topic, state, fix in unit.unit_checks()]


def describe(info: SystemFacts) -> str:
    parts = [
        info.os_name or "?",
        f"kernel {info.kernel_release or '?'} ({info.machine or '?'})",
        f"{info.n_cpus or '?'} CPUs",
    ]
    if info.virtualization not in (None, "none"):
        parts.append(f"virtualized ({info.virtualization})")
    return ", ".join(parts)
