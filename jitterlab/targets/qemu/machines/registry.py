"""The qemu machine profiles users can name in a qemu target's `machine` key."""

from __future__ import annotations

from jitterlab.model.registry import Registry
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.machines.profile import MachineProfile

MACHINES: Registry[MachineProfile] = Registry("qemu machine")
DEFAULT = "pc"

MACHINES.add(PC.name, "an x86-64 PC (q35) with Debian's amd64 kernels and this machine's own root", PC)

