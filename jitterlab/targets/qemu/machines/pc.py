"""The x86-64 PC guest: qemu's q35 machine, Debian's amd64 kernels, this machine's own root."""

from __future__ import annotations

from jitterlab.model.arch import AMD64
from jitterlab.targets.qemu.machines.bzimage import BzImage
from jitterlab.targets.qemu.machines.profile import VIRTIO_PCI, MachineProfile

PC = MachineProfile(
    name="pc",
    arch=AMD64,
    machine_args=("-machine", "q35"),
    accel={
        "kvm": ("-accel", "kvm", "-cpu", "host"),
        "tcg": ("-accel", "tcg,thread=multi", "-cpu", "max"),
    },
    console="ttyS0",
    image=BzImage(pvh=True),
    devices=VIRTIO_PCI,
    gpio=("none", "virtual"),
)
