"""The devices of an emulated SoC board without virtio: its own network controller, its root on an
SD card, no 9p — so the per-boot files travel in the initramfs and the kernel's tree stays on this
machine (kernel modules are cross-built here and copied over SSH)."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.targets.qemu.machines.profile import BOARD_ROOT_MODULES, DeviceModel


@dataclass(frozen=True)
class SdCardBoard(DeviceModel):
    """A board with an SD card slot for its root and a NIC model of qemu's (`nic_model`)."""

    nic_model: str = ""

    def device(self, kind: str) -> str:
        raise ValueError(f"{self.name} has no virtio {kind} device")

    def nic(self, hostfwd: str) -> list[str]:
        return ["-nic", f"user,model={self.nic_model},restrict=on,hostfwd={hostfwd}"]

    def rng(self) -> list[str]:
        return []

    def disk(self, drive: str) -> list[str]:
        return ["-drive", f"{drive},id=root", "-device", "sd-card,drive=root"]

    def share(self, i: int, tag: str, path: str) -> list[str]:
        raise ValueError(f"{self.name} has no virtio: nothing is shared over 9p")

    def modules(self, board_root: bool) -> tuple[str, ...]:
        # the SD host's and the NIC's drivers (boot_modules), the root's file system, the overlay
        return (*self.boot_modules, *BOARD_ROOT_MODULES[1:], "overlay")
