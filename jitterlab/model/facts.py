"""What a target is, as one snapshot saw it (system/sysinfo.py makes it, every run refers to it): the
kernel and its preemption model, the CPUs and their frequency, isolation, RT limits, clocks, idle
states, SMT, interrupts, memory, the programs' runtimes, and, where they exist, the VM jitterlab
booted, the real-time unit beside it and the image a farm's board ran.

Stored as one JSON object per snapshot (the store's sysinfo table), under the keys every jitterlab
wrote: `SystemFacts.from_json` reads an older store's too (a key it lacks is None; one it does
not know is kept), `as_json` writes the same keys back (model/stored.py). None always means
"not known", never "no": a check says nothing about what it does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from jitterlab.model.arch import Arch, of_uname
from jitterlab.model.stored import FLAT, Stored, stored

NO_CONTAINER = (None, "", "none")  # what `systemd-detect-virt` says outside a container (or VM)


@dataclass(frozen=True, kw_only=True)
class CpuFreq(Stored):
    """One CPU's frequency governor and current clock (cpufreq, else /proc/cpuinfo's MHz)."""

    cpu: int | None = None
    governor: str | None = None  # None: no cpufreq (a fixed clock, or a VM)
    cur_mhz: float | None = None


@dataclass(frozen=True, kw_only=True)
class IdleState(Stored):
    """A cpuidle state of CPU 0: its name, exit latency and whether it is disabled."""

    name: str | None = None
    latency_us: int | None = None
    disabled: bool | None = None


@dataclass(frozen=True, kw_only=True)
class Irq(Stored):
    """An interrupt with a handler: its number, the CPUs it may run on and its handlers' names."""

    irq: int | None = None
    cpus: tuple[int, ...] | None = None  # None: its affinity was not readable
    actions: str | None = None


@dataclass(frozen=True, kw_only=True)
class Runtime(Stored):
    """What runs an impl's programs: its path (a distribution's, or a wrapper's) and version."""

    path: str | None = None
    version: str | None = None  # the first line of its --version


@dataclass(frozen=True, kw_only=True)
class ThrottleRecord(Stored):
    """What a campaign planned (preflight: `setting`, `needed`) or did (the runner) about a
    target's RT throttling (execution/rt_throttle.py), as its sysinfo and each run's settings keep it."""

    setting: str | None = None  # campaign.rt_throttling: "lift" or "keep"
    needed: bool | None = None  # a probe of the target's cells busy-polls there
    changed: bool | None = None  # jitterlab lifted it for the runs
    why: str | None = None  # why it did not
    runtime_before_us: int | None = stored("sched_rt_runtime_us_before")
    runtime_during_us: int | None = stored("sched_rt_runtime_us_during")
    restored_to_us: int | None = stored("restored_to")


@dataclass(frozen=True, kw_only=True)
class TuningCheck(Stored):
    """What a tuning's check (jitterlab/tunings/) said on a target when a campaign ran there, for the
    CPUs of some of its cells: `refused` its reason, None when it could be applied."""

    tuning: str | None = None
    program_cpus: tuple[int, ...] | None = None
    probe_cpus: tuple[int, ...] | None = None
    refused: str | None = None


@dataclass(frozen=True, kw_only=True)
class VmFacts(Stored):
    """A VM jitterlab booted (capability VirtualMachine): keys vm_*."""

    PREFIX: ClassVar[str] = "vm_"

    accel: str | None = None  # "kvm", or "tcg": emulated, functional evidence only
    host_machine: str | None = None  # `uname -m` of the controller that runs it
    boot_s: float | None = None
    machine: str | None = None  # the qemu machine profile
    kernel: str | None = None
    kernel_asked: str | None = None
    kernel_packages: str | None = None
    kernel_note: str | None = None
    root: str | None = None  # a board's own root image, when it boots one
    machine_cmdline: str | None = None
    dt_edits: str | None = None


@dataclass(frozen=True, kw_only=True)
class UnitFacts(Stored):
    """A real-time unit beside the target (capability CommandsUnit): keys unit_*."""

    PREFIX: ClassVar[str] = "unit_"

    kind: str | None = None  # its loader: "emulated", "remoteproc", "serial"
    profile: str | None = None
    pin: str | None = None
    tty: str | None = None
    baud: int | None = None
    accel: str | None = None
    emulator: str | None = None
    start_s: float | None = None
    sched: str | None = None
    core: str | None = None
    remoteproc: str | None = None
    firmware: str | None = None
    firmware_sha256: str | None = None
    firmware_error: str | None = None
    flash_bytes: int | None = None
    ram_bytes: int | None = None
    replaced: str | None = None
    core_before: str | None = None


@dataclass(frozen=True, kw_only=True)
class ImageFacts(Stored):
    """The image a farm's board was flashed with and booted (execution/farm.py)."""

    path: str | None = stored("image")
    sha256: str | None = stored("image_sha256")
    console_boot_s: float | None = None


@dataclass(frozen=True, kw_only=True)
class SystemFacts(Stored):
    """One snapshot of a target."""

    kernel_release: str | None = None
    kernel_version: str | None = None  # `uname -v`
    machine: str | None = None  # `uname -m`
    preemption: str | None = None  # none, voluntary, full, lazy, rt; dynamic:<mode> (PREEMPT_DYNAMIC)
    cmdline: str | None = None
    cpu_model: str | None = None
    n_cpus: int | None = None
    cpus_online: tuple[int, ...] | None = None
    cpus: tuple[CpuFreq, ...] | None = None
    isolcpus: tuple[int, ...] | None = None  # (): none isolated; None: not known
    nohz_full: tuple[int, ...] | None = None
    rt_runtime_us: int | None = None  # -1: RT throttling off
    rt_period_us: int | None = None
    clocksource: str | None = None
    clocksources_available: tuple[str, ...] | None = None
    loadavg: tuple[float, ...] | None = None
    uptime_s: float | None = None
    hostname: str | None = None
    os_name: str | None = None
    virtualization: str | None = None  # the hypervisor, "qemu", "vm", or "none"
    container: str | None = None
    user_id: int | None = None  # who jitterlab is there: 0 may lift RT throttling
    rt_permission: bool | None = None  # SCHED_FIFO permitted
    runtimes: Mapping[str, Runtime] | None = None  # by command name: bash, python3, node, cc
    # how the C programs the runs used came to be (execution/deploy.py): "native", "cross <cc>", or
    # "native; reused <key> built on <target>" (sent from the build cache, not made there)
    programs_build: str | None = None
    mem_total_kb: int | None = None
    mem_available_kb: int | None = None
    bogomips: tuple[float, ...] | None = None
    cpu_vendor: str | None = None
    cpuidle_driver: str | None = None
    cpuidle_states: tuple[IdleState, ...] | None = None
    cpu_dma_latency_us: int | None = None
    smt_active: bool | None = None
    thread_siblings: Mapping[int, tuple[int, ...]] | None = None  # CPU -> the threads of its core
    thp: str | None = None
    irqs: tuple[Irq, ...] | None = None
    msr_device: bool | None = None
    rcu_nocbs: tuple[int, ...] | None = None
    rt_throttling: ThrottleRecord | None = None  # what the campaign planned or did
    tuning_checks: tuple[TuningCheck, ...] | None = None  # None: not asked (doctor, an older jitterlab)
    vm: VmFacts | None = field(default=None, metadata=FLAT)
    unit: UnitFacts | None = field(default=None, metadata=FLAT)
    image: ImageFacts | None = field(default=None, metadata=FLAT)

    @property
    def arch(self) -> Arch | None:
        """The architecture its `uname -m` names; None for one jitterlab does not know."""
        return of_uname(self.machine)

    @property
    def virtualized(self) -> bool:
        return self.virtualization not in (None, "none", "")

    @property
    def in_container(self) -> bool:
        return self.container not in NO_CONTAINER

    @property
    def emulated(self) -> bool:
        """A VM whose CPU qemu emulates (TCG): its figures are functional evidence only."""
        return self.vm is not None and self.vm.accel == "tcg"

    def tuning_refused(self, tuning: str) -> str | None:
        """Why `tuning` could not be applied here: its check's reason when it refused for the CPUs
        of every cell it was asked for; None when it could be applied to some, or was not asked."""
        said = [c.refused for c in self.tuning_checks or () if c.tuning == tuning]
        return said[0] if said and all(said) else None

    @property
    def kvm_needs(self) -> str | None:
        """For a VM: what the machine that runs it needs to run it under KVM (its architecture's
        `kvm`); None where KVM there cannot run this guest's architecture, or it is not known."""
        host = of_uname(self.vm.host_machine) if self.vm is not None else None
        if host is None or host.kvm is None:
            return None
        guest = self.arch
        runs = host.runs_under_kvm(guest) if guest is not None else self.machine in host.uname
        return host.kvm if runs else None


_PREEMPT_CONFIG = {"rt": "PREEMPT_RT", "full": "PREEMPT", "lazy": "PREEMPT_LAZY",
                   "voluntary": "PREEMPT_VOLUNTARY", "none": "PREEMPT_NONE"}


def preemption_words(preemption: str | None) -> str:
    """A preemption model in the kernel's words: "PREEMPT_RT", "PREEMPT_DYNAMIC, preempt=none"."""
    if preemption is None:
        return "preemption model unknown"
    mode = preemption.removeprefix("dynamic").lstrip(":")
    if preemption.startswith("dynamic"):
        return "PREEMPT_DYNAMIC" + (f", preempt={mode}" if mode else "")
    return _PREEMPT_CONFIG.get(preemption, preemption)
