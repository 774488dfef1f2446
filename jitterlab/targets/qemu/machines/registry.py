"""The qemu machine profiles users can name in a qemu target's `machine` key: the one list of them.
Their architecture and kernels are the profile's (`jitterlab list` shows them), not in their help."""

from __future__ import annotations

from jitterlab.model.registry import Registry
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.machines.profile import MachineProfile
from jitterlab.targets.qemu.machines.sabrelite import SABRELITE
from jitterlab.targets.qemu.machines.virt import VIRT_ARM64, VIRT_ARMHF

MACHINES: Registry[MachineProfile] = Registry("qemu machine")
DEFAULT = "pc"

MACHINES.add(PC.name, "an x86-64 PC (q35) with this machine's own root", PC)

MACHINES.add(VIRT_ARM64.name, "qemu's arm64 virt board (Cortex-A53, one CPU), the board's own Debian root, "
             "a traced PL061 GPIO controller", VIRT_ARM64)
MACHINES.add(VIRT_ARMHF.name, "qemu's armhf virt board (Cortex-A15, one CPU), the board's own Debian root, "
             "a traced PL061 GPIO controller", VIRT_ARMHF)
MACHINES.add(SABRELITE.name, "qemu's i.MX6Q sabrelite board (Cortex-A9, one CPU), the board's own "
             "Debian root on an SD card, gpio-mxc (read over QMP)", SABRELITE)
