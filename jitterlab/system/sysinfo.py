"""What the target is: kernel, preemption model, CPUs, frequency, isolation, RT limits, clocks
(and, through tuning.py, idle states, SMT, THP, IRQ affinity, memory and BogoMIPS).

`snapshot()` reads everything with one fixed shell script over the Target protocol (one round
trip over SSH); `checks()` turns a snapshot into warnings with remedies, one function per check.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace

from jitterlab.model.arch import host_uname, of_uname
from jitterlab.model.errors import TargetLost
from jitterlab.model.facts import CpuFreq, Runtime, SystemFacts, ThrottleRecord, UnitFacts, VmFacts
from jitterlab.model.records import Warning_
from jitterlab.model.units import cpu_list
from jitterlab.system import tuning
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import CommandsUnit, VirtualMachine, command_timeout_s, has

_MARK = "@@jitterlab-section "
_ABSENT = "@@absent"
_EMPTY_OK = ("isolated", "nohz_full")

# A constant: nothing from the user or the campaign is ever put into it.
_SCRIPT = r"""
s() { echo; echo "@@jitterlab-section $1"; }
s kernel_release; uname -r
s kernel_version; uname -v
s machine; uname -m
s hostname; cat /proc/sys/kernel/hostname 2>/dev/null || uname -n
s os_release; cat /etc/os-release 2>/dev/null
s cmdline; cat /proc/cmdline 2>/dev/null
keys='processor|model name|cpu MHz|Hardware|Model|CPU implementer|CPU part'
s cpuinfo; grep -E "^($keys)[[:space:]]*:" /proc/cpuinfo 2>/dev/null
s hypervisor_flag; grep -qwm1 hypervisor /proc/cpuinfo 2>/dev/null && echo yes
s online; cat /sys/devices/system/cpu/online 2>/dev/null
s isolated; cat /sys/devices/system/cpu/isolated 2>/dev/null || echo @@absent
s nohz_full; cat /sys/devices/system/cpu/nohz_full 2>/dev/null || echo @@absent
s cpufreq
for d in /sys/devices/system/cpu/cpu[0-9]*; do
  g=$(cat "$d/cpufreq/scaling_governor" 2>/dev/null)
  f=$(cat "$d/cpufreq/scaling_cur_freq" 2>/dev/null)
  echo "${d##*/cpu} ${g:--} ${f:--}"
done
s realtime; cat /sys/kernel/realtime 2>/dev/null
s preempt_debugfs; cat /sys/kernel/debug/sched/preempt 2>/dev/null
s preempt_config
{ zcat /proc/config.gz 2>/dev/null || cat "/boot/config-$(uname -r)" 2>/dev/null; } |
  grep -E '^CONFIG_PREEMPT(_NONE|_VOLUNTARY|_LAZY|_RT|_DYNAMIC)?=y'
s rt_runtime_us; cat /proc/sys/kernel/sched_rt_runtime_us 2>/dev/null
s rt_period_us; cat /proc/sys/kernel/sched_rt_period_us 2>/dev/null
s clocksource; cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null
s clocksources; cat /sys/devices/system/clocksource/clocksource0/available_clocksource 2>/dev/null
s loadavg; cat /proc/loadavg 2>/dev/null
s uptime; cat /proc/uptime 2>/dev/null
v() { command -v systemd-detect-virt >/dev/null 2>&1 && systemd-detect-virt "$1" 2>/dev/null; }
s virt; v --vm
s dt_model; tr -d '\000' < /proc/device-tree/model 2>/dev/null
s dt_compatible; tr '\000' ' ' < /proc/device-tree/compatible 2>/dev/null
s container; v --container
s user_id; id -u 2>/dev/null
s rt_permission; command -v chrt >/dev/null 2>&1 && { chrt -f 1 true >/dev/null 2>&1; echo $?; }
s runtimes
for t in bash python3 node cc; do
  p=$(command -v "$t" 2>/dev/null) || continue
  printf '%s\t%s\t%s\n' "$t" "$p" "$("$t" --version 2>&1 </dev/null | head -n 1)"
done
""" + tuning.SCRIPT + "exit 0\n"

def snapshot(target: Target) -> SystemFacts:
    """Describe the target; a value that cannot be read is None, never an exception. A target that
    does not answer within its command timeout (which follows a slow target's alive_timeout) is
    lost: TargetLost with the reason, which the campaign records for its runs."""
    timeout_s = command_timeout_s(target, 30.0)
    try:
        done = target.run(["sh", "-c", _SCRIPT], timeout_s=timeout_s)
    except CommandTimeout:
        raise TargetLost(
            f"target {target.name!r}: reading its system description took longer than {timeout_s:g} s; "
            "if the board is only slow, raise alive_timeout in its [[target]]"
        ) from None
    info = parse(done.stdout)
    vm = has(target, VirtualMachine)
    if vm is not None:  # a VM jitterlab booted: "kvm" or "tcg" (emulation), and its boot's wall time
        # the controller's `uname -m`: it runs the VM
        facts = {"vm_accel": vm.vm_accel, "vm_host_machine": host_uname(), "vm_boot_s": vm.boot_s}
        info = replace(info, vm=VmFacts.from_json({**facts, **vm.vm_facts()}))
        if info.virtualization in (None, "none"):  # an emulated SoC board cannot tell: we can
            info = replace(info, virtualization="qemu")
    unit = has(target, CommandsUnit)
    if unit is not None:  # a real-time unit beside it: what it is, its firmware's hash and sizes
        info = replace(info, unit=UnitFacts.from_json(unit.unit_facts()))
    return info


def parse(text: str) -> SystemFacts:
    """Turn the script's tagged output into the snapshot."""
    sec = _sections(text)
    machine = sec.get("machine")
    n_listed, model, mhz = _cpuinfo(sec.get("cpuinfo"))
    cpus = _cpufreq(sec.get("cpufreq"), mhz)
    online = _cpulist(sec.get("online"))
    return SystemFacts(
        kernel_release=sec.get("kernel_release"),
        kernel_version=sec.get("kernel_version"),
        machine=machine,
        preemption=_preemption(sec),
        cmdline=sec.get("cmdline"),
        cpu_model=model,
        n_cpus=n_listed or (len(cpus) if cpus else None) or (len(online) if online else None),
        cpus_online=online,
        cpus=cpus,
        isolcpus=_cpulist(sec.get("isolated")),
        nohz_full=_cpulist(sec.get("nohz_full")),
        rt_runtime_us=_int(sec.get("rt_runtime_us")),
        rt_period_us=_int(sec.get("rt_period_us")),
        clocksource=sec.get("clocksource"),
        clocksources_available=tuple(sec["clocksources"].split()) if sec.get("clocksources") else None,
        loadavg=_floats(sec.get("loadavg"), 3),
        uptime_s=(_floats(sec.get("uptime"), 1) or [None])[0],
        hostname=sec.get("hostname"),
        os_name=_os_name(sec.get("os_release")),
        virtualization=_virtualization(sec, machine),
        container=sec.get("container"),
        user_id=_int(sec.get("user_id")),  # who jitterlab is there: 0 may lift RT throttling
        rt_permission=None if sec.get("rt_permission") is None else sec["rt_permission"] == "0",
        runtimes=_runtimes(sec.get("runtimes")),
        **tuning.parse(sec),  # idle states, SMT, THP, IRQs, memory, BogoMIPS, ...
    )


def _runtimes(text: str | None) -> dict[str, Runtime] | None:
    """What runs the impls' programs, by name: its path and the first line of its `--version`.

    The path tells a distribution's interpreter from a wrapper (a pyenv shim starts ~20x slower),
    the version what changed between two images. Names the target lacks are left out.
    """
    out = {}
    for line in (text or "").splitlines():
        name, _, rest = line.partition("\t")
        path, _, version = rest.partition("\t")
        if name and path.startswith("/"):
            out[name] = Runtime(path=path, version=version.strip())
    return out or None


def _sections(text: str) -> dict[str, str | None]:
    """Section name -> stripped content: None if the file was absent or nothing was printed.

    Only isolated/nohz_full tell an empty file (""), which means "none", from an absent one.
    """
    out: dict[str, str | None] = {}
    name, lines = None, []
    for line in [*text.splitlines(), _MARK]:
        if line.startswith(_MARK):
            if name is not None:
                content = "\n".join(lines).strip()
                out[name] = (
                    content if content != _ABSENT and (content or name in _EMPTY_OK) else None
                )
            name, lines = line[len(_MARK) :].strip(), []
        elif name is not None:
            lines.append(line)
    return out


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _floats(text: str | None, n: int) -> tuple[float, ...] | None:
    try:
        return tuple(float(x) for x in text.split()[:n]) if text else None
    except ValueError:
        return None


def _cpulist(text: str | None) -> tuple[int, ...] | None:
    """Parse "0-3,8" into (0, 1, 2, 3, 8); "" and "(null)" (an empty set) into ()."""
    if text is None:
        return None
    if text in ("", "(null)"):
        return ()
    cpus: list[int] = []
    try:
        for part in text.strip().split(","):
            lo, _, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
    except ValueError:
        return None
    return tuple(cpus)


def _cpuinfo(text: str | None) -> tuple[int | None, str | None, list[float | None]]:
    """/proc/cpuinfo's CPUs counted, their model and each one's MHz."""
    n, model, mhz, extra = 0, None, [], {}
    for line in (text or "").splitlines():
        key, _, value = (s.strip() for s in line.partition(":"))
        if key == "processor":
            n += 1
        elif key == "model name" and model is None:
            model = value
        elif key == "cpu MHz":
            mhz.append(float(value) if re.fullmatch(r"[\d.]+", value) else None)
        else:
            extra.setdefault(key, value)
    if model is None:  # ARM: the board or the core's ids instead of a marketing name
        model = extra.get("Model") or extra.get("Hardware")
        if model is None and "CPU part" in extra:
            model = f"implementer {extra.get('CPU implementer')} part {extra['CPU part']}"
    return n or None, model, mhz


def _cpufreq(text: str | None, cpuinfo_mhz: list) -> tuple[CpuFreq, ...] | None:
    """Per CPU: governor and current frequency (cpufreq, else /proc/cpuinfo's MHz)."""
    rows = []
    for line in (text or "").splitlines():
        fields = line.split()
        if len(fields) != 3 or not fields[0].isdigit():
            continue
        cpu, gov, khz = int(fields[0]), fields[1], fields[2]
        cur = int(khz) / 1000 if khz.isdigit() else None
        if cur is None and cpu < len(cpuinfo_mhz):
            cur = cpuinfo_mhz[cpu]
        rows.append(CpuFreq(cpu=cpu, governor=None if gov == "-" else gov, cur_mhz=cur))
    return tuple(sorted(rows, key=lambda r: r.cpu or 0)) or None


def _preemption(sec: dict) -> str | None:
    """none / voluntary / full / lazy / rt, or dynamic:<mode> for PREEMPT_DYNAMIC kernels."""
    version = sec.get("kernel_version") or ""
    config = set((sec.get("preempt_config") or "").replace("=y", "").split())
    if sec.get("realtime") == "1" or "PREEMPT_RT" in version or "CONFIG_PREEMPT_RT" in config:
        return "rt"
    chosen = re.search(r"\((\w+)\)", sec.get("preempt_debugfs") or "")  # only exists if dynamic
    dynamic = bool(chosen) or "PREEMPT_DYNAMIC" in version or "CONFIG_PREEMPT_DYNAMIC" in config
    if chosen:
        return f"dynamic:{chosen.group(1)}"
    if dynamic and (m := re.search(r"(?:^|\s)preempt=(\w+)", sec.get("cmdline") or "")):
        return f"dynamic:{m.group(1)}"
    built = next((mode for option, mode in _PREEMPT_CONFIG if option in config), None)
    if dynamic:
        return f"dynamic:{built}" if built else "dynamic"
    if built is None and re.search(r"\bPREEMPT\b", version):
        built = "full"
    return built  # None: uname -v cannot tell none from voluntary and no config was readable


_PREEMPT_CONFIG = (
    ("CONFIG_PREEMPT_LAZY", "lazy"),
    ("CONFIG_PREEMPT", "full"),
    ("CONFIG_PREEMPT_VOLUNTARY", "voluntary"),
    ("CONFIG_PREEMPT_NONE", "none"),
)


def _os_name(text: str | None) -> str | None:
    m = re.search(r'^PRETTY_NAME="?([^"\n]*)"?', text or "", re.M)
    return m.group(1) if m else None


# what a device tree of qemu's own machines says (`virt`: "linux,dummy-virt", a model naming QEMU)
_QEMU_DT = re.compile(r"qemu|linux,dummy-virt", re.I)


def _virtualization(sec: dict, machine: str | None) -> str | None:
    """The hypervisor (systemd-detect-virt --vm), else "qemu" when the device tree names a machine
    of qemu's own, else "vm" from the cpuinfo hypervisor flag. An emulated copy of a real board
    (an i.MX6 sabrelite, a raspi3b) cannot be told from inside: snapshot() marks the VMs it booted."""
    if sec.get("virt") and sec["virt"] != "none":
        return sec["virt"]
    if any(_QEMU_DT.search(sec.get(key) or "") for key in ("dt_model", "dt_compatible")):
        return "qemu"
    if sec.get("hypervisor_flag") == "yes":
        return "vm"
    if sec.get("virt"):
        return "none"
    arch = of_uname(machine)
    if arch is not None and arch.cpuinfo_hypervisor and "cpuinfo" in sec:  # its guests would say so
        return "none"
    return None


# --- checks: each returns a Warning_ or None -------------------------------------------------


def check_governor(info: SystemFacts) -> Warning_ | None:
    slow = [c for c in info.cpus or () if c.governor not in (None, "performance")]
    if not slow:
        return None
    governors = sorted({str(c.governor) for c in slow})
    return Warning_(
        f"CPU frequency governor is {'/'.join(governors)} on CPUs "
        f"{cpu_list([c.cpu for c in slow if c.cpu is not None])}: the clock speed changes during the "
        "measurement",
        "cpupower frequency-set -g performance",
    )


def check_rt_throttling(info: SystemFacts) -> Warning_ | None:
    """RT throttling on, with the remedy that fits: where the probes run and who jitterlab is there.

    `info.rt_throttling`, once a campaign planned it (preflight) or tried it (the runner):
    `needed` (a probe busy-polls on the target), `setting` ("lift" or "keep"), and `why` nothing
    was lifted. Without it (doctor), the remedy covers every probe."""
    runtime, period = info.rt_runtime_us, info.rt_period_us
    if runtime is None or runtime == -1:
        return None
    lost = f"{100 * (1 - runtime / period):.0f}%" if period else "part"
    plan = info.rt_throttling or ThrottleRecord()
    root = info.user_id == 0
    container = info.in_container  # jitterlab cannot lift it from inside
    by_hand = "sysctl -w kernel.sched_rt_runtime_us=-1"
    if container:
        by_hand = (f"inside a container ({info.container}) the setting belongs to its host: "
                   f"there, {by_hand}")
    elif not root:
        by_hand += " (as root)"
    message = (f"RT throttling is active (sched_rt_runtime_us={runtime}, sched_rt_period_us={period}): "
               f"a busy real-time task loses {lost} of each period")
    if plan.needed is False:
        # the probes run on the controller or an instrument, or are the program's own log: the
        # throttling blinds none of them, so nothing is lifted, whoever jitterlab is
        return Warning_(
            f"{message}; no probe of these runs polls on the target, so it blinds none of them and "
            "jitterlab leaves it as it is",
            "nothing to do for the probes; a program of yours that keeps a real-time thread busy there "
            f"(e.g. impl kmod-busy) is stopped that long: {by_hand}")
    message += " (a busy-polling probe is blind then)"
    if container:
        remedy = by_hand
    elif plan.setting == "keep":
        remedy = ('campaign.rt_throttling = "lift" lifts it for the runs and puts it back'
                  + ("" if root else ", when jitterlab runs as root there") + f"; or {by_hand}")
    elif root and plan.why:  # jitterlab tried, and not for want of being root
        remedy = f"jitterlab could not lift it ({plan.why}): {by_hand}"
    elif root:
        remedy = ("jitterlab lifts it for the runs of a probe that busy-polls on the target "
                  '(campaign.rt_throttling = "lift", the default) and puts it back')
    else:
        remedy = ('run jitterlab as root: with campaign.rt_throttling = "lift" (the default) it lifts it '
                  f"for the runs of a busy-polling probe and puts it back; or {by_hand}")
    return Warning_(message, remedy)


def check_rt_permission(info: SystemFacts) -> Warning_ | None:
    if info.rt_permission is not False:
        return None
    return Warning_(
        "processes cannot get SCHED_FIFO (chrt -f 1 true failed): real-time impls run as "
        "normal tasks",
        "run as root, or grant CAP_SYS_NICE (setcap cap_sys_nice+ep) or an rtprio limit "
        "in /etc/security/limits.conf (e.g. '@realtime - rtprio 99')",
    )


def check_virtualized(info: SystemFacts) -> Warning_ | None:
    virt = info.virtualization
    if virt in (None, "none"):
        return None
    return Warning_(
        f"the target is virtualized ({virt}): the hypervisor can deschedule it at any time",
        "measure on bare metal to characterize hardware; compare VM results only with VM results",
    )


def check_vm_accel(info: SystemFacts) -> Warning_ | None:
    if not info.emulated:
        return None
    guest, host = info.machine, info.vm.host_machine if info.vm else None
    guest_arch, host_arch = of_uname(guest), of_uname(host)
    if guest and host and guest != host and not (
            guest_arch is not None and host_arch is not None and host_arch.runs_under_kvm(guest_arch)):
        # KVM runs a guest of the host's own architecture only: an ARM board on x86 is always emulated
        remedy = (f"KVM cannot run an {guest} board on this {host} controller: for timing, measure on the "
                  "real board (an ssh target); keep this one for what works")
    elif info.kvm_needs is not None:
        remedy = f'boot it with accel = "kvm" on {info.kvm_needs}, or measure on real hardware'
    else:  # what KVM needs there is not known here: no other architecture's advice
        remedy = "for timing, measure on real hardware; keep this one for what works"
    return Warning_(
        "the target is a VM under TCG emulation (no KVM): its results are functional evidence, never "
        "timing evidence", remedy)


def check_isolated_cpus(info: SystemFacts) -> Warning_ | None:
    if info.isolcpus != () or (info.n_cpus or 0) < 2:
        return None
    return Warning_(
        "no CPUs are isolated: the benchmark shares its CPU with every other task and interrupt",
        "boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> and pin the benchmark there",
    )


def check_clocksource(info: SystemFacts) -> Warning_ | None:
    arch = info.arch
    good = arch.clocksource if arch is not None else None
    current = info.clocksource
    if good is None or current is None or current == good:
        return None
    if good in (info.clocksources_available or ()):
        remedy = f"echo {good} > /sys/devices/system/clocksource/clocksource0/current_clocksource"
    elif arch is not None and arch.soc_timer and current != "jiffies":
        return None  # a core without the architected timer (ARM's Cortex-A9): its SoC's timer it is
    else:
        remedy = f"boot with clocksource={good} if the hardware has a stable {good}"
    return Warning_(
        f"clocksource is {current}, not {good}: reading the clock is slower and may be coarser",
        remedy,
    )


def check_load_average(info: SystemFacts) -> Warning_ | None:
    loadavg = info.loadavg
    n_cpus = info.n_cpus or 1
    if not loadavg or loadavg[0] <= 0.5 * n_cpus:
        return None
    return Warning_(
        f"load average is {loadavg[0]:.2f} on {n_cpus} CPUs at start: other work disturbs the run",
        "stop other work on the target, or wait until `uptime` shows the load has settled",
    )


CHECKS: tuple[Callable[[SystemFacts], Warning_ | None], ...] = (
    check_governor,
    check_rt_throttling,
    check_rt_permission,
    check_virtualized,
    check_vm_accel,
    check_isolated_cpus,
    check_clocksource,
    check_load_average,
    *tuning.CHECKS,  # the RT tuning checks: idle states, nohz/rcu, IRQ affinity, SMT, THP, SMI
)


def checks(info: SystemFacts) -> list[Warning_]:
    """Everything in a snapshot that may spoil a measurement, each with a remedy."""
    return [w for check in CHECKS if (w := check(info)) is not None]
