"""qemu's `sabrelite`: an i.MX6 Quad board (Cortex-A9, gpio-mxc GPIO1-7 from 0x0209C000), the
study's SoC family, with Debian's armmp kernels and the board's own root on an SD card.

What jitterlab changes of Debian's imx6q-sabrelite.dtb, and why: the Cortex-A9's TWD timer
(/soc/timer@a00600) is disabled — with it qemu's model made every sleep run 2-2.4x long; the SD
card qemu attaches sits in the slot the stock tree enables with card detection (usdhc4, the
kernel's mmcblk3). No virtio: no 9p, so per-boot files ride in the initramfs, and kernel modules
are cross-built on the controller. qemu cannot power the board off; jitterlab stops qemu itself.
qemu traces no i.MX6 GPIO: the register-poll probe reads the data register over QMP instead.
"""

from __future__ import annotations

from jitterlab.model.arch import ARMHF
from jitterlab.model.socs import SOCS
from jitterlab.targets.qemu.machines.arm_image import ArmImage
from jitterlab.targets.qemu.machines.profile import DtEdit, MachineProfile
from jitterlab.targets.qemu.machines.soc_devices import SdCardBoard
from jitterlab.targets.qemu.machines.virt import BOARD_CMDLINE, BOARD_ROOT_PACKAGES, VIRT_ARMHF

IMX6_SD = SdCardBoard(
    name="imx6-sd",
    suffix="",
    # the SD host's driver chain and the FEC Ethernet; gpio-mxc is a module in Debian's armmp
    boot_modules=("sdhci", "sdhci_pltfm", "sdhci_esdhc_imx", "fec", "gpio_mxc"),
    nic_model="imx.enet",
    shares_9p=False,
    root_device="/dev/mmcblk3",  # the slot qemu attaches -device sd-card to: usdhc4
    # an SD card cannot be read-only in qemu: the guest writes to a scratch copy qemu keeps
    disk_access="snapshot=on",
    console_uart=1,  # the tree's stdout-path is UART2 (ttymxc1), qemu's second serial port
)

SABRELITE = MachineProfile(
    name="sabrelite",
    arch=ARMHF,
    machine_args=("-machine", "sabrelite"),
    accel={"tcg": ("-accel", "tcg")},  # the machine has its Cortex-A9 fixed
    console="ttymxc1",
    image=ArmImage(),
    devices=IMX6_SD,
    guest_root=VIRT_ARMHF.guest_root,
    board_root_packages=BOARD_ROOT_PACKAGES,
    cmdline=BOARD_CMDLINE,
    dtb="imx6q-sabrelite.dtb",
    dt_edits=(DtEdit("/soc/timer@a00600", "status", "disabled",
                     "qemu's Cortex-A9 TWD timer made every sleep run 2-2.4x long"),),
    gpio=("none",),
    gpio_soc=SOCS["imx6"],
    cpus=1,
    memory_bytes=1 << 30,
    boot_timeout_s=300.0,
    # an i.MX6 Quad; qemu 7.2 refuses more RAM than below the SoC's peripherals ("above max supported")
    max_cpus=4,
    max_memory_bytes=0xF0000000,
)
