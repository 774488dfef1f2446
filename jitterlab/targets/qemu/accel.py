"""Which accelerator a qemu target uses: kvm only where it really works, else tcg (emulation).

The existence of /dev/kvm proves nothing: in some cloud VMs it is a paravirtual device (PVM)
that a stock kernel cannot use (it hangs in the decompressor or dies with an emulation failure,
and qemu does not fall back by itself). KVM needs the CPU's virtualization extension (the vmx or
svm flag in /proc/cpuinfo) and the kvm_intel or kvm_amd module that drives it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError

_DRIVER = {"vmx": "kvm_intel", "svm": "kvm_amd"}


@dataclass(frozen=True)
class Accel:
    name: str  # "kvm" | "tcg"
    why: str  # one clause: what the decision rests on


def cpu_flags(cpuinfo: str) -> set[str]:
    """The flags of the first CPU in /proc/cpuinfo's text."""
    for line in cpuinfo.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags":
            return set(value.split())
    return set()


def loaded_modules(proc_modules: str, sys_module_names: list[str]) -> set[str]:
    """Module names from /proc/modules' text, plus /sys/module's entries (built-in drivers too)."""
    return {line.split()[0] for line in proc_modules.splitlines() if line.strip()} | set(sys_module_names)


def kvm_problem(flags: set[str], modules: set[str], dev_kvm_usable: bool) -> str | None:
    """Why KVM cannot run a stock kernel here, or None when it can."""
    extension = next((flag for flag in ("vmx", "svm") if flag in flags), None)
    if extension is None:
        return "the CPU has no vmx or svm flag (no hardware virtualization is passed to this machine)"
    if _DRIVER[extension] not in modules:
        return f"the {_DRIVER[extension]} module is not loaded (modprobe {_DRIVER[extension]})"
    if not dev_kvm_usable:
        return "/dev/kvm cannot be opened for reading and writing (add yourself to group kvm)"
    return None


def choose(requested: str, flags: set[str], modules: set[str], dev_kvm_usable: bool, where: str,
           machine_problem: str | None = None) -> Accel:
    """The accelerator for `requested` ("auto", "kvm", "tcg"); kvm that cannot work is a UserError.
    `machine_problem`: why kvm cannot run the machine whatever this one has (another CPU)."""
    if requested == "tcg":
        return Accel("tcg", "accel = tcg was asked for")
    problem = machine_problem or kvm_problem(flags, modules, dev_kvm_usable)
    if problem is None:
        return Accel("kvm", "the CPU has hardware virtualization and its kvm module is loaded")
    if requested == "kvm":
        raise UserError(
            f'{where}.accel: kvm cannot work on this machine: {problem}; use accel = "auto" or "tcg"'
        )
    return Accel("tcg", problem)


def detect(requested: str, where: str, machine_problem: str | None = None) -> Accel:
    """choose() on this machine's /proc/cpuinfo, loaded modules and /dev/kvm."""

    def read(path: str) -> str:
        try:
            return Path(path).read_text()
        except OSError:
            return ""

    try:
        sys_modules = os.listdir("/sys/module")
    except OSError:
        sys_modules = []
    usable = os.path.exists("/dev/kvm") and os.access("/dev/kvm", os.R_OK | os.W_OK)
    modules = loaded_modules(read("/proc/modules"), sys_modules)
    return choose(requested, cpu_flags(read("/proc/cpuinfo")), modules, usable, where, machine_problem)
