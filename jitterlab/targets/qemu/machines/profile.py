"""What a qemu machine profile says: everything that differs between the guests jitterlab boots.

A profile is data plus one small object (how the kernel image is given to qemu). The code that
prepares kernels, writes the initramfs and starts qemu reads the profile and assumes nothing of
its own about the CPU architecture, the qemu binary or the devices.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.arch import Arch, host_arch
from jitterlab.model.socs import SOCS, Soc

# The guest's root file system is this machine's own, read-only over 9p (tags jlroot, jlkernel,
# jlboot) under a tmpfs overlay, as init.c mounts it: the guest has the controller's userland.
HOST_ROOT = "host-9p"
# the modules the boot over HOST_ROOT needs besides the device transport's, in load order
HOST_ROOT_MODULES = ("9pnet_virtio", "9p", "overlay", "virtio_net", "virtio_rng")
# The board's own Debian root (targets/qemu/rootfs.py), an ext4 image on a read-only virtio disk
# under the same tmpfs overlay: the guest sees nothing of this machine's root. The kernel's tree
# and the per-boot files still come over 9p.
BOARD_ROOT = "board-disk"
BOARD_ROOT_MODULES = ("virtio_blk", "crc32c_generic", "ext4")
# what a board image has for jitterlab: SSH, python, libgpiod (tools, bindings, headers and the
# static library a cross build links), the loads; a compiler is not among them (cross-built)
BOARD_PACKAGES = (
    "openssh-server", "python3", "python3-libgpiod", "gpiod", "libgpiod-dev", "kmod", "procps",
    "iproute2", "util-linux", "stress-ng", "rt-tests",
)  # fmt: skip

class KernelImage(ABC):
    """How a machine's kernel is given to qemu (a bzImage, an ELF with a PVH entry, an Image...)."""

    label: str  # in messages: "give the path of a <label>"
    mismatch: str  # why a file is not one, in messages: "an x86 bzImage (no setup header)"

    @abstractmethod
    def release(self, path: Path) -> str | None:
        """The release (`uname -r`) a kernel file says it is; None when it is not of this format."""

    def bootable(self, vmlinuz: Path, config: Path, entry: Path) -> Path:
        """The file qemu loads for `vmlinuz` (made once into the cache directory `entry`); `config`
        is the kernel's /boot/config-<release>, which may be absent."""
        return vmlinuz


@dataclass(frozen=True)
class DeviceModel:
    """How the guest's devices sit on its bus: here virtio (network, rng, the root disk, 9p shares);
    a board without virtio is a subclass (machines/soc_devices.py)."""

    name: str  # "virtio-pci" | "virtio-mmio"
    suffix: str  # of qemu's device names: virtio-net-<suffix>
    boot_modules: tuple[str, ...]  # the transport's kernel modules, loaded first

    # the guest gets the kernel's tree and the per-boot files over 9p (else in its initramfs)
    shares_9p: bool = True
    # the board's root image as the guest sees it (init.c mounts what jitterlab.root= names)
    root_device: str = "/dev/vda"
    # how the root image is attached: read-only, so that any number of guests share the cached one
    disk_access: str = "readonly=on"
    # the UART the kernel's console is on (qemu's -serial ports are given in order)
    console_uart: int = 0

    def device(self, kind: str) -> str:
        return f"virtio-{kind}-{self.suffix}"

    def nic(self, hostfwd: str) -> list[str]:
        """qemu's arguments for the network card on user networking with port forwarding `hostfwd`."""
        return ["-netdev", f"user,id=net0,restrict=on,hostfwd={hostfwd}",
                "-device", f"{self.device('net')},netdev=net0"]

    def rng(self) -> list[str]:
        return ["-device", self.device("rng")]

    def disk(self, drive: str) -> list[str]:
        """qemu's arguments attaching the root image (`drive`: the -drive options but its id)."""
        return ["-drive", f"{drive},id=root", "-device", f"{self.device('blk')},drive=root"]

    def share(self, i: int, tag: str, path: str) -> list[str]:
        """A directory of this machine (`path`, in qemu's option syntax), read-only over 9p as `tag`."""
        fsdev = f"local,id=fs{i},path={path},security_model=none,readonly=on,multidevs=remap"
        return ["-fsdev", fsdev, "-device", f"{self.device('9p')},fsdev=fs{i},mount_tag={tag}"]

    def modules(self, board_root: bool) -> tuple[str, ...]:
        """The modules the initramfs loads, in order: the transport's, the disk's, the shares'."""
        return (*self.boot_modules, *(BOARD_ROOT_MODULES if board_root else ()), *HOST_ROOT_MODULES)


VIRTIO_PCI = DeviceModel("virtio-pci", "pci", ("virtio_pci",))
VIRTIO_MMIO = DeviceModel("virtio-mmio", "device", ("virtio_mmio",))


@dataclass(frozen=True)
class DtEdit:
    """One change jitterlab makes to a board's device tree before qemu gets it (fdtput)."""

    node: str  # "/soc/timer@a00600"
    prop: str  # "status"
    value: str  # "disabled"; "" for an empty property (a flag like non-removable)
    why: str  # recorded with the run


@dataclass(frozen=True)
class TracedGpio:
    """A GPIO controller whose output levels the emulator writes as trace events (-trace EVENT)."""

    soc: Soc  # its register map (model/socs.py): its name, its lines, those it reserves
    event: str  # qemu's trace event of a level change


@dataclass(frozen=True)
class Build:
    """How programs are built for the guest, all on the controller."""

    cc: str  # the campaign's C programs (argv word); "cc" when the guest runs this machine's userland
    init_cc: str  # the static init of the initramfs
    init_cc_package: str  # the Debian package that has init_cc
    libc_package: str  # the C library's static archive init_cc links

    @classmethod
    def cross(cls, arch: Arch) -> Build:
        """Everything cross-compiled here for `arch`: a board's root has no compiler."""
        return cls(cc=arch.cross_cc, init_cc=arch.cross_cc, init_cc_package=arch.cross_cc_package,
                   libc_package=arch.cross_libc_package)


# the guest runs this machine's userland, so programs built here with its cc run there unchanged
# (and an emulated guest compiles an order of magnitude slower)
NATIVE = Build(cc="cc", init_cc="gcc", init_cc_package="gcc", libc_package="libc6-dev")


# eq=False: profiles are compared (and hashed) as the single objects the registry holds
@dataclass(frozen=True, eq=False)
class MachineProfile:
    """One kind of guest: the emulator, the machine, its kernel, its root and its devices."""

    name: str
    arch: Arch  # the guest's CPU: the emulator, the kernels, the compilers and the command line's bound
    machine_args: tuple[str, ...]  # qemu's -machine arguments
    accel: Mapping[str, tuple[str, ...]]  # "kvm" | "tcg" -> qemu's -accel and -cpu arguments
    console: str  # the kernel's console device, on qemu's first serial port
    image: KernelImage
    devices: DeviceModel
    guest_root: str = HOST_ROOT  # the guest's root file system: HOST_ROOT or BOARD_ROOT
    board_root_packages: tuple[str, ...] = ()  # what its BOARD_ROOT holds
    cmdline: str = ""  # kernel parameters the machine needs, before the campaign's own
    traced_gpio: TracedGpio | None = None  # a GPIO controller qemu can trace (the emulator probe)
    gpio_soc: Soc | None = None  # the register map of its GPIO block, for register-poll and gpiomem
    dtb: str | None = None  # device tree in the kernel package's /usr/lib/linux-image-<release>/
    dt_edits: tuple[DtEdit, ...] = ()  # made to a copy of dtb, kept beside the kernel
    gpio: tuple[str, ...] = ("none",)  # the values of the gpio key, the default first
    cpus: int = 2
    memory_bytes: int = 1 << 30
    boot_timeout_s: float = 120.0
    # what qemu's machine takes (it refuses more when it starts); None: no bound below jitterlab's own
    max_cpus: int | None = None
    max_memory_bytes: int | None = None

    def __post_init__(self) -> None:
        # a register map users cannot name (pins.gpiomem soc, probes.register-poll soc) would refuse
        # every value they give it; a traced controller is the machine's GPIO block, not another
        for soc in (self.gpio_soc, self.traced_gpio.soc if self.traced_gpio else None):
            if soc is not None and SOCS.get(soc.name) is not soc:
                raise ValueError(f"qemu machine {self.name!r}: GPIO block {soc.name!r} is not a register "
                                 f"map of model/socs.py's SOCS ({', '.join(SOCS)})")
        if self.traced_gpio and self.gpio_soc and self.traced_gpio.soc is not self.gpio_soc:
            raise ValueError(f"qemu machine {self.name!r} traces GPIO block {self.traced_gpio.soc.name!r} "
                             f"but has the registers of {self.gpio_soc.name!r}")

    @property
    def qemu(self) -> str:
        """The emulator's binary."""
        return self.arch.qemu_system

    @property
    def qemu_package(self) -> str:
        return self.arch.qemu_package

    @property
    def kernels(self) -> Mapping[str, str]:
        """Kernel flavour ("standard", "rt") -> the Debian metapackage the guest boots."""
        return self.arch.kernels

    @property
    def max_cmdline(self) -> int:
        return self.arch.max_cmdline

    @property
    def build(self) -> Build:
        return Build.cross(self.arch) if self.boots_board_root else NATIVE

    @property
    def boot_modules(self) -> tuple[str, ...]:
        """The modules the initramfs loads (those built into a kernel are skipped)."""
        return self.devices.modules(self.boots_board_root)

    @property
    def boots_board_root(self) -> bool:
        """True when the guest boots the board's own root image, not this machine's root."""
        return self.guest_root == BOARD_ROOT

    def kvm_missing(self, host: str | None = None) -> str | None:
        """Why kvm cannot run this machine on a `host` architecture (this one), None when it can."""
        host = host or host_arch()
        if "kvm" not in self.accel:
            return f"qemu machine {self.name!r} is emulated only"
        if host != self.arch.name:
            return f"qemu machine {self.name!r} has a {self.arch.name} CPU, this machine is {host}"
        return None

    def device(self, kind: str) -> str:
        """qemu's name of a virtio device on this machine's bus: device("net") -> virtio-net-pci."""
        return self.devices.device(kind)

    def dtb_path(self, tree: Path, release: str) -> Path | None:
        """The device tree file in the unpacked kernel packages, when the machine needs one."""
        return tree / "usr" / "lib" / f"linux-image-{release}" / self.dtb if self.dtb else None
