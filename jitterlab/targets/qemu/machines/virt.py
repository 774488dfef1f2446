"""qemu's `virt` boards, arm64 and armhf: the fast lane of the emulated ARM boards.

A board like the ones jitterlab is for (one core, its own Debian root, no compiler, reached over
SSH) on the machine qemu emulates fastest: virtio disk and network on virtio-mmio, no device-tree
edits (qemu writes the tree), and a PL061 GPIO controller at 0x09030000 whose 8 output levels qemu
traces on this machine (line 3 is wired to gpio-keys as the power button).
"""

from __future__ import annotations

from jitterlab.model.arch import ARM64, ARMHF, Arch
from jitterlab.model.socs import SOCS
from jitterlab.targets.qemu.machines.arm_image import ArmImage
from jitterlab.targets.qemu.machines.profile import (
    BOARD_PACKAGES,
    BOARD_ROOT,
    VIRTIO_MMIO,
    MachineProfile,
    TracedGpio,
)

PL061 = TracedGpio(SOCS["pl061"], event="pl061_set_output")
# Debian's kernels set STRICT_DEVMEM and IO_STRICT_DEVMEM: without iomem=relaxed a program cannot
# map the GPIO block through /dev/mem (gpiomem pins), even as root
BOARD_CMDLINE = "iomem=relaxed"
# the cross compiler links against the board's root (--sysroot): its C library's headers and crt
BOARD_ROOT_PACKAGES = (*BOARD_PACKAGES, "libc6-dev")


def _virt(arch: Arch, cpu: str) -> MachineProfile:
    return MachineProfile(
        name=f"virt-{arch.name}",
        arch=arch,
        machine_args=("-machine", "virt"),
        accel={"tcg": ("-accel", "tcg", "-cpu", cpu)},
        console="ttyAMA0",
        image=ArmImage(),
        devices=VIRTIO_MMIO,
        guest_root=BOARD_ROOT,
        board_root_packages=BOARD_ROOT_PACKAGES,
        cmdline=BOARD_CMDLINE,
        traced_gpio=PL061,
        gpio_soc=PL061.soc,
        gpio=("none", "virtual"),
        cpus=1,
        memory_bytes=1 << 30,
        boot_timeout_s=300.0,
        max_cpus=8,  # mach-virt with its default GICv2
    )


VIRT_ARM64 = _virt(ARM64, "cortex-a53")
VIRT_ARMHF = _virt(ARMHF, "cortex-a15")
