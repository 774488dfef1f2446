"""The checks of `jitterlab doctor`: is a machine ready to be measured, and what should be fixed?

Reads the sysinfo snapshot (sysinfo.snapshot / sysinfo.checks) and tuning topics of a target that is
open already, looks for the tools it is told are needed, and makes one finding per topic with its
fix. Opening the target, knowing which plug-ins need which tool, and looking for instruments on
the controller are the command's (cli/commands/doctor.py).
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.errors import TargetLost
from jitterlab.model.records import Warning_
from jitterlab.model.units import cpu_list
from jitterlab.system import sysinfo, tuning
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import CrossBuilt, command_timeout_s, has, host_key_warning

# tool -> (the Debian package that has it, who needs it: "impl node", "load cpu", ...)
Needs = Mapping[str, tuple[str, set[str]]]
BUILD_TOOLS = ("make", "cc")  # what building the programs on the target takes


@dataclass(frozen=True)
class Finding:
    """One topic of the diagnosis; `fix` None means all is well there."""

    topic: str
    state: str
    fix: str | None = None


def _missing(target: Target, tools: list[str]) -> list[str]:
    script = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    timeout_s = command_timeout_s(target, 30.0)
    try:
        return target.run(["sh", "-c", script, "sh", *tools], timeout_s=timeout_s).stdout.split()
    except CommandTimeout:
        raise TargetLost(f"target {target.name!r}: looking for its tools took longer than {timeout_s:g} s; "
                         "if the board is only slow, raise alive_timeout in its [[target]]") from None


def examine(target: Target, needs: Needs) -> tuple[dict, list[Finding]]:
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
        findings.append(Finding("missing tools", who, f"apt install {' '.join(packages)}"))
    if cross is not None and shutil.which(cross.cross_cc.split()[0]) is None:
        findings.append(Finding("cross cc", f"{cross.cross_cc} is not installed here",
                                "install the cross compiler"))
    warning = host_key_warning(target)  # e.g. labgrid without known_hosts
    if warning is not None:
        findings.append(Finding("host key", warning.message, warning.remedy))
    covered: set[str] = set()

    def topic(name: str, state: str, warning: Warning_ | None) -> None:
        if warning is not None:
            covered.add(warning.message)
        if warning is None:
            findings.append(Finding(name, state))
        else:
            findings.append(Finding(name, warning.message, warning.remedy))

    rt = info.get("rt_permission")
    topic("RT permission", "SCHED_FIFO permitted" if rt else "unknown (no chrt: apt install util-linux)",
          sysinfo.check_rt_permission(info))  # fmt: skip
    governors = sorted({c.get("governor") or "-" for c in info.get("cpus") or []})
    topic("CPU governor", "/".join(governors) if governors != ["-"] and governors else "no cpufreq (fixed)",
          sysinfo.check_governor(info))  # fmt: skip
    iso = info.get("isolcpus")
    topic("isolcpus", cpu_list(iso) if iso else "none", sysinfo.check_isolated_cpus(info))
    topic("clocksource", str(info.get("clocksource")), sysinfo.check_clocksource(info))
    findings.append(_preemption(info.get("preemption"), info.get("machine")))
    runtime = info.get("rt_runtime_us")
    topic("RT throttling", "off" if runtime == -1 else "unknown", sysinfo.check_rt_throttling(info))
    topic("virtualization", str(info.get("virtualization") or "unknown"), sysinfo.check_virtualized(info))
    loadavg = info.get("loadavg")
    topic("load average", f"{loadavg[0]:.2f}" if loadavg else "unknown", sysinfo.check_load_average(info))
    for name, state, warning in tuning.topics(info):  # idle states, nohz/rcu, IRQs, SMT, THP, SMI, memory
        topic(name, state, warning)
    for warning in sysinfo.checks(info):
        if warning.message not in covered:
            findings.append(Finding("other", warning.message, warning.remedy))
    return info, findings


# `uname -m` -> Debian's PREEMPT_RT kernel package for that architecture
RT_KERNEL_PACKAGE = {"x86_64": "linux-image-rt-amd64", "aarch64": "linux-image-rt-arm64",
                     "arm64": "linux-image-rt-arm64", "armv7l": "linux-image-rt-armmp",
                     "armv8l": "linux-image-rt-armmp"}


def rt_kernel_hint(machine: str | None) -> str:
    """How to get a PREEMPT_RT kernel on a machine of this `uname -m` (Debian's package for it)."""
    package = RT_KERNEL_PACKAGE.get(machine or "")
    if package is not None:
        return f"apt install {package}"
    return (f"Debian has no PREEMPT_RT kernel package for {machine or 'this architecture'}: "
            "build one with CONFIG_PREEMPT_RT")


def _preemption(model: str | None, machine: str | None = None) -> Finding:
    if model is None:
        return Finding("preemption", "unknown (no kernel config readable)")
    if model == "rt" or model.endswith("full") or model.endswith("lazy"):
        return Finding("preemption", model)
    return Finding(
        "preemption",
        f"{model}: a task waits for the kernel to reach a preemption point",
        "boot with preempt=full (kernels with PREEMPT_DYNAMIC) or install a PREEMPT_RT kernel "
        f"({rt_kernel_hint(machine)})",
    )


def describe(info: dict) -> str:
    parts = [
        info.get("os_name") or "?",
        f"kernel {info.get('kernel_release') or '?'} ({info.get('machine') or '?'})",
        f"{info.get('n_cpus') or '?'} CPUs",
    ]
    if info.get("virtualization") not in (None, "none"):
        parts.append(f"virtualized ({info['virtualization']})")
    return ", ".join(parts)
