"""The CPU architectures jitterlab knows, one record each: what Debian, the kernel's build, the GNU
toolchain, the ELF header, `uname -m` and qemu call the same architecture.

Everything that differs between architectures is read from here: the emulator a qemu machine runs
and its package, the kernels it boots, the compilers that build for it, the check of a kernel
module built for it, the binfmt handler that runs its programs here, doctor's PREEMPT_RT package,
the clocksource sysinfo expects, and the tuning checks' advice: how its idle states are kept off
at boot, how SMT is switched off, whether SMIs exist, what its KVM needs. Advice jitterlab does not
know for an architecture is None, and the checks then say nothing rather than another one's. A
new architecture is one record added to ARCHES below.
"""

from __future__ import annotations

import platform
from collections.abc import Mapping
from dataclasses import dataclass, field

from jitterlab.model.registry import Registry


@dataclass(frozen=True)
class Arch:
    """One CPU architecture under its every name."""

    name: str  # Debian's ("arm64"): packages, apt states, roots and campaigns say this
    cpu: str  # for messages: "AArch64"
    uname: tuple[str, ...]  # what `uname -m` says on it; () when it cannot be told from another
    triplet: str  # the GNU toolchain's prefix, without its dash: "aarch64-linux-gnu"
    kernel_arch: str  # kbuild's ARCH=
    elf_class: int  # e_ident[EI_CLASS]: 1 = 32-bit, 2 = 64-bit
    elf_machine: int  # e_machine
    qemu_system: str  # the emulator of a whole machine
    qemu_package: str  # the Debian package that has it
    qemu_user: str  # qemu-user's name for it: binfmt_misc's handler is qemu-<qemu_user>
    # kernel flavour ("standard", "rt") -> Debian's metapackage; what a qemu machine of it boots
    kernels: Mapping[str, str] = field(default_factory=dict)
    clocksource: str | None = None  # the one cheap to read and stable, when the architecture has one
    max_cmdline: int = 2048  # the kernel's COMMAND_LINE_SIZE, its NUL included (at most: some take more)
    # the tuning checks' advice (system/tuning.py, sysinfo.py); None: not known for it, so not given
    idle_off: str | None = None  # boot parameters that keep its CPUs out of deep idle states
    smt_off: str | None = None  # how one hardware thread of each core is switched off
    smis: bool = False  # its firmware takes system management interrupts, invisible to the kernel
    kvm: str | None = None  # what a machine of it needs to run its own architecture's guests under KVM
    kvm_guests: tuple[str, ...] = ()  # other architectures (Debian's names) its KVM runs too
    bogomips: str | None = None  # what its kernel's BogoMIPS are, when they are not the CPU's speed
    cpuinfo_hypervisor: bool = False  # /proc/cpuinfo flags `hypervisor` in every guest
    soc_timer: bool = False  # some of its cores lack the architected timer: their SoC's is the clocksource

    def runs_under_kvm(self, guest: Arch) -> bool:
        """Whether KVM on a machine of this architecture runs a guest of `guest`'s."""
        return guest is self or guest.name in self.kvm_guests

    @property
    def rt_package(self) -> str | None:
        """Debian's PREEMPT_RT kernel metapackage, None when Debian has none here."""
        return self.kernels.get("rt")

    @property
    def cross_cc(self) -> str:
        """The GNU cross compiler that builds for it on another architecture."""
        return f"{self.triplet}-gcc"

    @property
    def cross_cc_package(self) -> str:
        return f"gcc-{self.triplet}"

    @property
    def cross_libc_package(self) -> str:
        """The static C library a cross compiler links, for this architecture (Debian's -cross)."""
        return f"libc6-dev-{self.name}-cross"


ARCHES: Registry[Arch] = Registry("Debian architecture")


def _add(arch: Arch, help: str) -> Arch:
    return ARCHES.add(arch.name, help, arch)


# x86's: intel_idle and ACPI C-states; SMT's switch; SMIs; vmx/svm
X86_IDLE_OFF = "idle=poll (or processor.max_cstate=1 intel_idle.max_cstate=0)"
X86_SMT_OFF = "echo off > /sys/devices/system/cpu/smt/control (or boot with nosmt)"
X86_KVM = "a machine whose CPU has vmx/svm and the kvm_intel/kvm_amd module loaded"
# the cpuidle framework's own switch (ARM's PSCI idle states, RISC-V's SBI ones go through it)
CPUIDLE_OFF = ("cpuidle.off=1 (or write 1 to the deep states' /sys/devices/system/cpu/cpu*/cpuidle/state*/"
               "disable)")
# an ARM kernel takes a hardware thread offline as a CPU
CPU_OFFLINE = "echo 0 > /sys/devices/system/cpu/cpuN/online for one thread of each core"
# an ARM kernel derives BogoMIPS from its architected timer: 125 on a 62.5 MHz timer, at any clock
ARM_BOGOMIPS = "on ARM the timer's rate, not the CPU's speed"

AMD64 = _add(Arch(
    name="amd64", cpu="x86-64", uname=("x86_64",), triplet="x86_64-linux-gnu", kernel_arch="x86",
    elf_class=2, elf_machine=62, qemu_system="qemu-system-x86_64", qemu_package="qemu-system-x86",
    qemu_user="x86_64", kernels={"standard": "linux-image-amd64", "rt": "linux-image-rt-amd64"},
    clocksource="tsc", idle_off=X86_IDLE_OFF, smt_off=X86_SMT_OFF, smis=True, kvm=X86_KVM,
    kvm_guests=("i386",), cpuinfo_hypervisor=True,
), "64-bit x86 (PCs, servers)")
I386 = _add(Arch(
    name="i386", cpu="x86", uname=("i686", "i586", "i386"), triplet="i686-linux-gnu", kernel_arch="x86",
    elf_class=1, elf_machine=3, qemu_system="qemu-system-i386", qemu_package="qemu-system-x86",
    qemu_user="i386", clocksource="tsc", idle_off=X86_IDLE_OFF, smt_off=X86_SMT_OFF, smis=True, kvm=X86_KVM,
    cpuinfo_hypervisor=True,
), "32-bit x86")
ARM64 = _add(Arch(
    name="arm64", cpu="AArch64", uname=("aarch64", "arm64"), triplet="aarch64-linux-gnu",
    kernel_arch="arm64", elf_class=2, elf_machine=183, qemu_system="qemu-system-aarch64",
    qemu_package="qemu-system-arm", qemu_user="aarch64",
    kernels={"standard": "linux-image-arm64", "rt": "linux-image-rt-arm64"}, clocksource="arch_sys_counter",
    idle_off=CPUIDLE_OFF, smt_off=CPU_OFFLINE, kvm="an ARM machine whose /dev/kvm exists",
    kvm_guests=("armhf", "armel"),  # a 32-bit guest, on a core that runs AArch32 at EL1
    bogomips=ARM_BOGOMIPS,
), "64-bit ARM (Cortex-A53, A72, ...)")
ARMHF = _add(Arch(
    # armv8l: a 32-bit userland on a 64-bit ARM kernel
    name="armhf", cpu="ARM", uname=("armv7l", "armv8l"), triplet="arm-linux-gnueabihf", kernel_arch="arm",
    elf_class=1, elf_machine=40, qemu_system="qemu-system-arm", qemu_package="qemu-system-arm",
    qemu_user="arm", kernels={"standard": "linux-image-armmp", "rt": "linux-image-rt-armmp"},
    clocksource="arch_sys_counter", max_cmdline=1024, idle_off=CPUIDLE_OFF, smt_off=CPU_OFFLINE,
    bogomips=ARM_BOGOMIPS, soc_timer=True,  # no KVM host since Linux 5.7
), "32-bit ARM with hardware floating point (Cortex-A7, A9, A15, ...)")
ARMEL = _add(Arch(
    # `uname -m` cannot tell it from armhf: a machine that says armv7l is taken for armhf
    name="armel", cpu="ARM", uname=(), triplet="arm-linux-gnueabi", kernel_arch="arm", elf_class=1,
    elf_machine=40, qemu_system="qemu-system-arm", qemu_package="qemu-system-arm", qemu_user="arm",
    max_cmdline=1024, idle_off=CPUIDLE_OFF, smt_off=CPU_OFFLINE, bogomips=ARM_BOGOMIPS, soc_timer=True,
), "32-bit ARM, soft floating point (ARMv5, ARMv6)")
RISCV64 = _add(Arch(
    name="riscv64", cpu="RISC-V", uname=("riscv64",), triplet="riscv64-linux-gnu", kernel_arch="riscv",
    elf_class=2, elf_machine=243, qemu_system="qemu-system-riscv64", qemu_package="qemu-system-misc",
    qemu_user="riscv64", max_cmdline=1024, idle_off=CPUIDLE_OFF,
    kvm="a RISC-V machine whose CPU has the H (hypervisor) extension and whose /dev/kvm exists",
), "64-bit RISC-V")
PPC64EL = _add(Arch(
    name="ppc64el", cpu="POWER", uname=("ppc64le",), triplet="powerpc64le-linux-gnu", kernel_arch="powerpc",
    elf_class=2, elf_machine=21, qemu_system="qemu-system-ppc64", qemu_package="qemu-system-ppc",
    qemu_user="ppc64le", smt_off="ppc64_cpu --smt=off (powerpc-utils)",
), "64-bit POWER, little-endian")
S390X = _add(Arch(
    name="s390x", cpu="s390x", uname=("s390x",), triplet="s390x-linux-gnu", kernel_arch="s390",
    elf_class=2, elf_machine=22, qemu_system="qemu-system-s390x", qemu_package="qemu-system-misc",
    qemu_user="s390x",
), "IBM Z")
MIPS64EL = _add(Arch(
    name="mips64el", cpu="MIPS64", uname=("mips64",), triplet="mips64el-linux-gnuabi64", kernel_arch="mips",
    elf_class=2, elf_machine=8, qemu_system="qemu-system-mips64el", qemu_package="qemu-system-mips",
    qemu_user="mips64el",
), "64-bit MIPS, little-endian")


def of_uname(uname_m: str | None) -> Arch | None:
    """The architecture `uname -m` names ("aarch64" -> arm64); None for one jitterlab does not know."""
    return next((e.obj for e in ARCHES if uname_m in e.obj.uname), None)


def of_triplet(triplet: str | None) -> Arch | None:
    """The architecture of a GNU triplet ("arm-linux-gnueabihf" -> armhf); None when unknown."""
    return next((e.obj for e in ARCHES if e.obj.triplet == triplet), None)


def of_elf(elf_machine: int, elf_class: int) -> Arch | None:
    """An architecture whose ELF objects have this e_machine and class (armhf and armel share theirs)."""
    return next((e.obj for e in ARCHES if (e.obj.elf_machine, e.obj.elf_class) == (elf_machine, elf_class)),
                None)


def host_uname() -> str:
    """`uname -m` of the machine jitterlab runs on (the controller)."""
    return platform.machine()


def host_arch() -> str:
    """The Debian architecture of the machine jitterlab runs on ("amd64"); its `uname -m` when
    jitterlab knows no architecture by that name."""
    uname_m = host_uname()
    arch = of_uname(uname_m)
    return arch.name if arch is not None else uname_m
