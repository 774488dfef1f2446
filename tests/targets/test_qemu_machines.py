"""qemu machine profiles: chosen by a target's `machine` key, "pc" by default, and the pc profile
boots exactly the guest it always did (the qemu argv, the kernel packages, the initramfs modules)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from jitterlab.model.arch import ARM64
from jitterlab.model.errors import UserError
from jitterlab.model.registry import Registry
from jitterlab.targets.capabilities import CrossBuilt, KeepsKernelModules, VirtualMachine, has
from jitterlab.targets.qemu import accel as qemu_accel
from jitterlab.targets.qemu import kernels as qemu_kernels
from jitterlab.targets.qemu import options as qemu_options
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.machines.profile import VIRTIO_MMIO, MachineProfile
from jitterlab.targets.qemu.machines.registry import DEFAULT, MACHINES
from jitterlab.targets.qemu.options import parse_kernel, parse_options
from jitterlab.targets.qemu.target import QemuTarget, kernel_cmdline
from jitterlab.targets.qemu.vm import BootSpec, qemu_argv


def test_profiles_are_looked_up_by_name_and_pc_is_the_default():
    assert DEFAULT == "pc" and MACHINES.get("pc", "t.machine") is PC
    assert "pc" in MACHINES.names()
    assert parse_options({}, "t").profile is PC
    assert parse_options({"machine": "pc"}, "t").profile is PC
    with pytest.raises(ValueError, match="registered twice"):
        MACHINES.add("pc", "again", PC)


@pytest.mark.parametrize("value", ["arm", "virt", "Pc", 3])
def test_an_unknown_machine_is_one_line_naming_the_key_and_the_profiles(value):
    with pytest.raises(UserError) as e:
        parse_options({"machine": value}, "campaign.toml: target[1]")
    message = str(e.value)
    assert message.startswith("campaign.toml: target[1].machine: ") and "\n" not in message, message
    assert "pc" in message and (repr(value) in message or str(value) in message), message
    if isinstance(value, str):
        assert message.endswith("known: " + ", ".join(MACHINES.names())), message


def test_the_pc_argv_is_the_x86_guest_of_before(tmp_path):
    def argv(accel: str) -> list[str]:
        return qemu_argv(BootSpec(
            profile=PC, image=tmp_path / "vmlinux", initrd=tmp_path / "initrd.cpio",
            append=kernel_cmdline(PC, "isolcpus=1"), cpus=2, memory_bytes=1 << 30, accel=accel,
            shares=(("jlroot", Path("/")), ("jlkernel", tmp_path / "tree")), ssh_port=2222,
            console=tmp_path / "console,log"))

    fsdev = "security_model=none,readonly=on,multidevs=remap"
    common = [
        "-smp", "2", "-m", "1024M",
        "-kernel", f"{tmp_path}/vmlinux", "-initrd", f"{tmp_path}/initrd.cpio",
        "-append", "console=ttyS0 loglevel=4 panic=-1 rdinit=/init isolcpus=1",
        "-display", "none", "-no-reboot",
        "-chardev", f"file,id=console,path={tmp_path}/console,,log", "-serial", "chardev:console",
        "-netdev", "user,id=net0,restrict=on,hostfwd=tcp:127.0.0.1:2222-:22",
        "-device", "virtio-net-pci,netdev=net0",
        "-device", "virtio-rng-pci",
        "-fsdev", f"local,id=fs0,path=/,{fsdev}", "-device", "virtio-9p-pci,fsdev=fs0,mount_tag=jlroot",
        "-fsdev", f"local,id=fs1,path={tmp_path}/tree,{fsdev}",
        "-device", "virtio-9p-pci,fsdev=fs1,mount_tag=jlkernel",
    ]
    head = ["qemu-system-x86_64", "-nodefaults", "-no-user-config", "-machine", "q35"]
    assert argv("tcg") == [*head, "-accel", "tcg,thread=multi", "-cpu", "max", *common]
    assert argv("kvm") == [*head, "-accel", "kvm", "-cpu", "host", *common]
    assert kernel_cmdline(PC, "") == "console=ttyS0 loglevel=4 panic=-1 rdinit=/init"


def test_the_pc_profile_keeps_todays_packages_modules_and_builds():
    assert PC.kernels == {"standard": "linux-image-amd64", "rt": "linux-image-rt-amd64"}
    assert PC.boot_modules == ("virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_net", "virtio_rng")
    assert (PC.build.cc, PC.build.init_cc, PC.qemu_package) == ("cc", "gcc", "qemu-system-x86")
    assert PC.kvm_missing("amd64") is None and "arm64" in PC.kvm_missing("arm64")
    o = parse_options({}, "t")
    assert (o.cpus, o.memory_bytes, o.boot_timeout_s, o.gpio) == (2, 1 << 30, 120.0, "none")
    assert parse_kernel("6.12-rt", "k").metapackage == "linux-image-rt-amd64"


def _emulated_board() -> MachineProfile:
    """A profile of another architecture, shaped like the ARM boards to come (not registered), whose
    Debian has no PREEMPT_RT kernel."""
    return MachineProfile(
        name="board", arch=dataclasses.replace(ARM64, kernels={"standard": "linux-image-arm64"}),
        machine_args=("-machine", "virt"), accel={"tcg": ("-accel", "tcg", "-cpu", "cortex-a53")},
        console="ttyAMA0", image=PC.image, devices=VIRTIO_MMIO, dtb="board.dtb", cpus=1,
        memory_bytes=512 << 20, boot_timeout_s=300.0,
    )


def test_a_profile_decides_the_argv_kernels_defaults_and_accelerator(tmp_path, monkeypatch):
    board = _emulated_board()
    m = BootSpec(profile=board, image=tmp_path / "Image", initrd=tmp_path / "initrd", append="x",
                cpus=1, memory_bytes=512 << 20, accel="tcg", shares=(("jlroot", Path("/")),),
                ssh_port=2222, console=tmp_path / "console.log", dtb=tmp_path / "board.dtb")
    argv = qemu_argv(m)
    assert argv[:5] == ["qemu-system-aarch64", "-nodefaults", "-no-user-config", "-machine", "virt"]
    assert argv[argv.index("-dtb") + 1] == f"{tmp_path}/board.dtb"
    assert "virtio-net-device,netdev=net0" in argv and "virtio-9p-device,fsdev=fs0,mount_tag=jlroot" in argv
    assert board.boot_modules[0] == "virtio_mmio"
    assert kernel_cmdline(board, "").startswith("console=ttyAMA0 ")
    dtb = board.dtb_path(tmp_path, "6.1.0-56-arm64")
    assert dtb == tmp_path / "usr/lib/linux-image-6.1.0-56-arm64/board.dtb"

    machines: Registry[MachineProfile] = Registry("qemu machine")
    machines.add("pc", "", PC)
    machines.add("board", "", board)
    monkeypatch.setattr(qemu_options, "MACHINES", machines)
    o = parse_options({"machine": "board"}, "t")
    assert (o.profile, o.cpus, o.memory_bytes, o.boot_timeout_s) == (board, 1, 512 << 20, 300.0)
    assert o.kernel.metapackage == "linux-image-arm64"
    for options, words in [({"kernel": "rt"}, ["t.kernel", "no rt kernel", "'board'", '"standard"']),
                           ({"accel": "kvm"}, ["t.accel", "emulated only"]),
                           ({"gpio": "virtual"}, ["t.gpio", '"none"'])]:
        with pytest.raises(UserError) as e:
            parse_options({"machine": "board", **options}, "t")
        assert all(w in str(e.value) for w in words), str(e.value)
    # kvm is never tried for a CPU this machine does not have, whatever /dev/kvm says
    chosen = qemu_accel.choose("auto", {"vmx"}, {"kvm_intel"}, True, "t", board.kvm_missing("amd64"))
    assert chosen.name == "tcg" and "emulated only" in chosen.why


def test_a_qemu_target_declares_its_capabilities(tmp_path):
    target = QemuTarget("vm", parse_options({}, "t"))
    try:
        assert has(target, VirtualMachine) is target and has(target, KeepsKernelModules) is target
        assert has(target, CrossBuilt) is target and target.cross_cc == "cc"
        assert (target.vm_accel, target.boot_s) == ("", None)  # known once booted
        assert target.where() == "target 'vm' (qemu, kernel standard)"
    finally:
        target.close()


def test_a_kernel_is_prepared_in_the_machines_form(tmp_path, monkeypatch):
    entry, tree = tmp_path / "entry", tmp_path / "entry" / "tree"
    (tree / "boot").mkdir(parents=True)
    vmlinuz = tree / "boot" / "vmlinuz-6.1.0-56-arm64"
    vmlinuz.write_bytes(b"not a bzImage")
    modules = tree / "lib" / "modules" / "6.1.0-56-arm64"
    modules.mkdir(parents=True)
    (modules / "modules.dep").write_text("kernel/virtio_mmio.ko:\nkernel/virtio_pci.ko:\nkernel/9p.ko:\n")
    for name in ("virtio_mmio", "virtio_pci", "9p"):
        (modules / "kernel").mkdir(exist_ok=True)
        (modules / "kernel" / f"{name}.ko").write_bytes(name.encode())
    init = tmp_path / "init-x"
    init.write_bytes(b"init")
    monkeypatch.setattr(qemu_kernels.qemu_initrd, "init_program", lambda cache, build: init)
    board = _emulated_board()

    def prepare():
        return qemu_kernels._bootable(board, entry, tree, "6.1.0-56-arm64", "k", vmlinuz, tmp_path, "t")

    with pytest.raises(UserError, match=r"^t: the kernel 6.1.0-56-arm64 has no device tree board.dtb for "
                                        r"qemu machine 'board'; delete "):
        prepare()
    dtb = tree / "usr" / "lib" / "linux-image-6.1.0-56-arm64" / "board.dtb"
    dtb.parent.mkdir(parents=True)
    dtb.write_bytes(b"dtb")
    kernel = prepare()
    assert (kernel.image, kernel.dtb, kernel.tree) == (vmlinuz, dtb, tree)  # no PVH config: as it is
    # beside another machine's initrd, and another module list's
    assert kernel.initrd.parent == entry and kernel.initrd.name.startswith("initrd-init-x-board-")
    archive = kernel.initrd.read_bytes()
    assert b"virtio_mmio" in archive and b"modules/01-9p.ko" in archive and b"virtio_pci" not in archive
