"""The x86-64 PC guest: qemu's q35 machine, Debian's amd64 kernels, this machine's own root."""

from __future__ import annotations

from jitterlab.targets.qemu.machines.bzimage import BzImage
from jitterlab.targets.qemu.machines.profile import VIRTIO_PCI, Build, MachineProfile

PC = MachineProfile(
    name="pc",
    arch="amd64",
    qemu="qemu-system-x86_64",
    qemu_package="qemu-system-x86",
    machine=("-machine", "q35"),
    accel={
        "kvm": ("-accel", "kvm", "-cpu", "host"),
        "tcg": ("-accel", "tcg,thread=multi", "-cpu", "max"),
    },
    console="ttyS0",
    image=BzImage(pvh=True),
    kernels={"standard": "linux-image-amd64", "rt": "linux-image-rt-amd64"},
    devices=VIRTIO_PCI,
    # the guest runs this machine's userland, so programs built here with its cc run there
    # unchanged (and an emulated guest compiles an order of magnitude slower)
    build=Build(cc="cc", init_cc="gcc", init_cc_package="gcc", libc_package="libc6-dev"),
    gpio=("none", "virtual"),
)
