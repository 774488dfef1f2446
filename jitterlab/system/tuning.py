"""The tuning an RT engineer checks first, read with the sysinfo snapshot: idle states and
cpu_dma_latency, nohz_full and rcu_nocbs against isolcpus, interrupts delivered to isolated CPUs,
hyperthread siblings, transparent huge pages and the SMI counter cyclictest --smi reads; plus the
memory left to applications and BogoMIPS.

SCRIPT is a constant fragment of sysinfo's snapshot script (nothing from a campaign goes into
it); `parse` turns its sections into snapshot fields; each check is one small function returning
a Warning_ with its remedy, or None, and is listed in CHECKS (sysinfo.checks and doctor use them).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from jitterlab.model.facts import IdleState, Irq, SystemFacts
from jitterlab.model.records import Warning_
from jitterlab.model.units import cpu_list

SCRIPT = r"""
s meminfo; grep -E '^(MemTotal|MemAvailable):' /proc/meminfo 2>/dev/null
s bogomips; grep -iE '^bogomips[[:space:]]*:' /proc/cpuinfo 2>/dev/null
s vendor; grep -m1 -E '^vendor_id[[:space:]]*:' /proc/cpuinfo 2>/dev/null
s cpuidle_driver; cat /sys/devices/system/cpu/cpuidle/current_driver 2>/dev/null
s cpuidle
for d in /sys/devices/system/cpu/cpu0/cpuidle/state[0-9]*; do
  [ -d "$d" ] || continue
  echo "$(cat "$d/latency" 2>/dev/null || echo -) $(cat "$d/disable" 2>/dev/null || echo 0) $(cat "$d/name")"
done
s cpu_dma_latency; od -An -td4 -N4 /dev/cpu_dma_latency 2>/dev/null
s smt_active; cat /sys/devices/system/cpu/smt/active 2>/dev/null
s siblings
for d in /sys/devices/system/cpu/cpu[0-9]*; do
  t=$(cat "$d/topology/thread_siblings_list" 2>/dev/null) && echo "${d##*/cpu} $t"
done
s thp; cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null
s irqs
for d in /proc/irq/[0-9]*; do
  n=""; for h in "$d"/*/; do [ -d "$h" ] && h=${h%/} && n="$n${n:+,}${h##*/}"; done
  [ -n "$n" ] || continue
  a=$(cat "$d/effective_affinity_list" 2>/dev/null)
  [ -n "$a" ] || a=$(cat "$d/smp_affinity_list" 2>/dev/null)
  echo "${d##*/} ${a:--} $n"
done
s msr; [ -e /dev/cpu/0/msr ] && echo yes || echo no
"""

DEEP_IDLE_US = 10  # an idle state whose exit latency is above this shows in latency figures
NO_QOS_REQUEST = 2_000_000_000  # what /dev/cpu_dma_latency reads when nobody holds a request
_CMDLINE_LIST = r"(?:^|\s){}=(\S+)"


def parse(sec: dict) -> dict[str, object]:
    """The snapshot's fields from the sections of SCRIPT (and the cmdline); None where unreadable."""
    mem = dict(re.findall(r"^(\w+):\s+(\d+) kB", sec.get("meminfo") or "", re.M))
    vendor = re.search(r":\s*(\S+)", sec.get("vendor") or "")
    return {
        "mem_total_kb": int(mem["MemTotal"]) if "MemTotal" in mem else None,
        "mem_available_kb": int(mem["MemAvailable"]) if "MemAvailable" in mem else None,
        "bogomips": tuple(float(x) for x in re.findall(r":\s*([\d.]+)", sec.get("bogomips") or "")) or None,
        "cpu_vendor": vendor.group(1) if vendor else None,
        "cpuidle_driver": sec.get("cpuidle_driver"),
        "cpuidle_states": _idle_states(sec.get("cpuidle")),
        "cpu_dma_latency_us": _int(sec.get("cpu_dma_latency")),
        "smt_active": None if sec.get("smt_active") is None else sec["smt_active"] == "1",
        "thread_siblings": _siblings(sec.get("siblings")),
        "thp": _chosen(sec.get("thp")),
        "irqs": _irqs(sec.get("irqs")),
        "msr_device": None if sec.get("msr") is None else sec["msr"] == "yes",
        "rcu_nocbs": _cmdline_cpus(sec.get("cmdline"), "rcu_nocbs"),
    }


def _int(text: str | None) -> int | None:
    try:
        return int(text.strip()) if text else None
    except ValueError:
        return None


def _cpus(text: str) -> tuple[int, ...] | None:
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        if not lo.isdigit() or (hi and not hi.isdigit()):
            return None
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return tuple(cpus)


def _idle_states(text: str | None) -> tuple[IdleState, ...] | None:
    states = []
    for line in (text or "").splitlines():
        latency, disabled, *name = line.split()
        states.append(IdleState(name=" ".join(name), latency_us=int(latency) if latency.isdigit() else None,
                                disabled=disabled == "1"))
    return tuple(states) or None


def _siblings(text: str | None) -> dict[int, tuple[int, ...]] | None:
    """CPU -> the hardware threads of its core."""
    out = {}
    for line in (text or "").splitlines():
        cpu, _, siblings = line.partition(" ")
        listed = _cpus(siblings.strip())
        if cpu.isdigit() and listed is not None:
            out[int(cpu)] = listed
    return out or None


def _chosen(text: str | None) -> str | None:
    """The [bracketed] choice of a sysfs setting: "always [madvise] never" -> "madvise"."""
    found = re.search(r"\[(\w+)\]", text or "")
    return found.group(1) if found else None


def _irqs(text: str | None) -> tuple[Irq, ...] | None:
    irqs = []
    for line in (text or "").splitlines():
        fields = line.split(" ", 2)
        if len(fields) == 3 and fields[0].isdigit():
            irqs.append(Irq(irq=int(fields[0]), cpus=_cpus(fields[1]) if fields[1] != "-" else None,
                            actions=fields[2]))
    return tuple(irqs) or None


def _cmdline_cpus(cmdline: str | None, key: str) -> tuple[int, ...] | None:
    """A CPU list given on the kernel command line (rcu_nocbs=2-3); () when not given, None when the
    command line is unknown."""
    if cmdline is None:
        return None
    found = re.search(_CMDLINE_LIST.format(re.escape(key)), cmdline)
    return (_cpus(found.group(1)) or ()) if found else ()


def _cmdline_has(info: SystemFacts, *words: str) -> bool:
    return any(re.search(rf"(?:^|\s){re.escape(w)}(?:\s|$)", info.cmdline or "") for w in words)


# --- checks ------------------------------------------------------------------------------------


def check_cstates(info: SystemFacts) -> Warning_ | None:
    states = info.cpuidle_states or ()
    deep = [s for s in states if not s.disabled and (s.latency_us or 0) > DEEP_IDLE_US]
    held = info.cpu_dma_latency_us
    if (not deep or _cmdline_has(info, "idle=poll", "cpuidle.off=1")
            or (held is not None and held <= DEEP_IDLE_US)):
        return None
    worst = max(deep, key=lambda s: s.latency_us or 0)
    # how idle states are kept off at boot is the architecture's (x86: idle=poll; ARM: cpuidle.off);
    # holding a PM QoS request works on any
    boot = info.arch.idle_off if info.arch is not None else None
    return Warning_(
        f"CPU idle states up to {worst.name} (exit latency {worst.latency_us} µs) are enabled: a CPU "
        "that slept wakes that much later",
        (f"boot with {boot}, or hold" if boot else "hold") + " /dev/cpu_dma_latency at 0 while measuring "
        "(cyclictest does unless --laptop)")


def check_nohz_rcu(info: SystemFacts) -> Warning_ | None:
    isolated = set(info.isolcpus or ())
    if not isolated:
        return None
    missing = [f"{key}={cpu_list(cpus) or 'none'}" for key, cpus in
               (("nohz_full", info.nohz_full), ("rcu_nocbs", info.rcu_nocbs))
               if cpus is not None and not isolated <= set(cpus)]  # None: unknown
    if not missing:
        return None
    cpus = cpu_list(isolated)
    return Warning_(
        f"isolated CPUs {cpus} still take the scheduler tick or RCU callbacks ({', '.join(missing)})",
        f"boot with nohz_full={cpus} rcu_nocbs={cpus} beside isolcpus={cpus}")


def check_irq_affinity(info: SystemFacts) -> Warning_ | None:
    isolated = set(info.isolcpus or ())
    if not isolated:
        return None
    hit = [q for q in info.irqs or () if q.cpus and isolated & set(q.cpus)]
    if not hit:
        return None
    named = ", ".join(f"{q.irq} ({q.actions})" for q in hit[:5]) + (" ..." if len(hit) > 5 else "")
    housekeeping = cpu_list(set(range(info.n_cpus or 0)) - isolated) or "<housekeeping CPUs>"
    return Warning_(
        f"{len(hit)} interrupt(s) are delivered to isolated CPUs {cpu_list(isolated)}: {named}",
        f"write {housekeeping} to /proc/irq/N/smp_affinity_list, or boot with irqaffinity={housekeeping} "
        f"and isolcpus=managed_irq,domain,{cpu_list(isolated)}")


def check_smt(info: SystemFacts) -> Warning_ | None:
    if not info.smt_active:
        return None
    isolated = set(info.isolcpus or ())
    siblings = info.thread_siblings or {}
    if isolated:
        exposed = sorted(c for c in isolated if set(siblings.get(c, (c,))) - isolated)
        if not exposed:
            return None
        what = f"isolated CPUs {cpu_list(exposed)} share a core with CPUs that are not isolated"
    else:
        what = "SMT (hyperthreading) is on"
    # how a sibling is switched off is the architecture's (x86: smt/control, nosmt; ARM: a CPU offline)
    off = info.arch.smt_off if info.arch is not None else None
    return Warning_(
        f"{what}: work on a hyperthread sibling slows the measured thread",
        (f"{off}, or isolate" if off else "isolate") + " whole cores; the switch benchmark's sibling_load "
        "shows the cost")


def check_thp(info: SystemFacts) -> Warning_ | None:
    if info.thp != "always":
        return None
    return Warning_(
        "transparent huge pages are always on: huge-page faults and khugepaged's compaction stall tasks",
        "echo madvise > /sys/kernel/mm/transparent_hugepage/enabled "
        "(or boot with transparent_hugepage=never)")


def _has_smis(info: SystemFacts) -> bool:
    """An architecture whose firmware takes SMIs (x86's)."""
    return info.arch is not None and info.arch.smis


def _smis_counted(info: SystemFacts) -> bool:
    """Only Intel CPUs count SMIs (MSR_SMI_COUNT); a guest does not see them."""
    return _has_smis(info) and info.cpu_vendor == "GenuineIntel" and info.virtualization in (None, "none")


def check_smi_counter(info: SystemFacts) -> Warning_ | None:
    if not _smis_counted(info) or info.msr_device:
        return None
    return Warning_(
        "SMIs cannot be counted: /dev/cpu/0/msr is missing",
        "modprobe msr; then cyclictest --smi counts SMIs per thread (or run the hwlat benchmark)")


CHECKS: tuple[Callable[[SystemFacts], Warning_ | None], ...] = (
    check_cstates, check_nohz_rcu, check_irq_affinity, check_smt, check_thp, check_smi_counter,
)


def topics(info: SystemFacts) -> list[tuple[str, str, Warning_ | None]]:
    """(topic, state, warning) for `jitterlab doctor`, one per check plus memory and BogoMIPS."""
    states = info.cpuidle_states or ()
    idle = ", ".join(f"{s.name} {s.latency_us}µs{' off' if s.disabled else ''}" for s in states)
    dma = info.cpu_dma_latency_us
    held = "" if dma is None else f"; cpu_dma_latency {dma} µs held" if dma < NO_QOS_REQUEST else ""
    isolated = info.isolcpus or ()
    irqs = info.irqs or ()
    counted = ("cyclictest --smi can count SMIs" if _smis_counted(info)
               else "no SMI counter (not an Intel CPU, or a VM)")
    mem, total = info.mem_available_kb, info.mem_total_kb
    bogomips = info.bogomips or ()
    what = info.arch.bogomips if info.arch is not None else None  # ARM's: a timer's rate
    speed = f" ({what})" if bogomips and what else ""
    smi = [("SMI counter", counted, check_smi_counter(info))] if _has_smis(info) else []
    return [
        ("idle states", (idle or "no cpuidle") + held, check_cstates(info)),
        ("nohz/rcu", f"nohz_full {cpu_list(info.nohz_full or []) or 'none'}, rcu_nocbs "
         f"{cpu_list(info.rcu_nocbs or []) or 'none'}", check_nohz_rcu(info)),
        ("IRQ affinity",
         f"{len(irqs)} interrupts" + (f", isolated CPUs {cpu_list(isolated)}" * bool(isolated)),
         check_irq_affinity(info)),
        ("SMT", {True: "on", False: "off", None: "unknown"}[info.smt_active], check_smt(info)),
        ("transparent hugepages", str(info.thp or "unknown"), check_thp(info)),
        *smi,
        ("memory", f"{mem // 1024} MiB available of {total // 1024} MiB" if mem and total else "unknown",
         None),
        ("BogoMIPS", f"{bogomips[0]:g}" + (f" (x{len(bogomips)} CPUs)" if len(bogomips) > 1 else "")
         + speed if bogomips else "unknown", None),
    ]
