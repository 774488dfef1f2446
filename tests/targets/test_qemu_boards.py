"""The emulated ARM boards (qemu `virt`, arm64 and armhf): what the profiles make of qemu's command
line and the kernel's, what the target says of itself — all without booting (test_arm_board.py
boots one)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.socs import SOCS
from jitterlab.targets.capabilities import CrossBuilt, ExaminesMemory, RecordsGpioOutputs, has
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.machines.registry import MACHINES
from jitterlab.targets.qemu.machines.virt import VIRT_ARM64, VIRT_ARMHF
from jitterlab.targets.qemu.options import parse_options
from jitterlab.targets.qemu.rootfs import BoardRoot
from jitterlab.targets.qemu.target import QemuTarget, kernel_cmdline
from jitterlab.targets.qemu.vm import BootSpec, qemu_argv


def _argv(profile, tmp_path: Path, *, disk: bool = True, trace: bool = True) -> list[str]:
    return qemu_argv(BootSpec(
        profile=profile, image=tmp_path / "Image", initrd=tmp_path / "initrd.cpio",
        append=kernel_cmdline(profile, ""), cpus=1, memory_bytes=1 << 30, accel="tcg",
        shares=(("jlkernel", tmp_path / "tree"), ("jlboot", tmp_path / "boot")), ssh_port=2222,
        console=tmp_path / "console.log", disk=tmp_path / "root.ext4" if disk else None,
        trace=tmp_path / "gpio-trace.log" if trace else None))


@pytest.mark.parametrize(("profile", "qemu", "cpu"), [(VIRT_ARM64, "qemu-system-aarch64", "cortex-a53"),
                                                      (VIRT_ARMHF, "qemu-system-arm", "cortex-a15")])
def test_a_virt_board_boots_its_own_root_from_a_read_only_disk_and_traces_its_pl061(
    profile, qemu, cpu, tmp_path
):
    argv = _argv(profile, tmp_path)
    assert argv[0] == qemu and argv[argv.index("-machine") + 1] == "virt"
    assert argv[argv.index("-cpu") + 1] == cpu and argv[argv.index("-smp") + 1] == "1"
    drive = argv[argv.index("-drive") + 1]
    assert drive == f"file={tmp_path}/root.ext4,if=none,format=raw,readonly=on,id=root"
    assert "virtio-blk-device,drive=root" in argv and "virtio-net-device,netdev=net0" in argv
    assert argv[argv.index("-trace") + 1] == "pl061_set_output"
    assert argv[argv.index("-D") + 1] == f"{tmp_path}/gpio-trace.log"
    assert argv[argv.index("-msg") + 1] == "timestamp=on"  # host-stamped lines
    tags = [a.rsplit("mount_tag=", 1)[1] for a in argv if "mount_tag=" in a]
    assert tags == ["jlkernel", "jlboot"]  # nothing of this machine's root is shared


def test_the_board_kernel_is_told_its_root_disk_and_iomem_relaxed_before_the_campaigns_words():
    line = kernel_cmdline(VIRT_ARM64, "isolcpus=0")
    assert line == ("console=ttyAMA0 loglevel=4 panic=-1 rdinit=/init jitterlab.root=/dev/vda "
                    "iomem=relaxed isolcpus=0")
    assert kernel_cmdline(PC, "") == "console=ttyS0 loglevel=4 panic=-1 rdinit=/init"


def test_the_board_initramfs_loads_the_disk_and_ext4_before_9p():
    modules = VIRT_ARM64.boot_modules
    assert modules[0] == "virtio_mmio"
    assert modules.index("virtio_blk") < modules.index("ext4") < modules.index("9p")
    assert "ext4" not in PC.boot_modules


def test_a_campaign_may_not_name_the_root_disk_itself():
    with pytest.raises(UserError, match=r"t\.cmdline: jitterlab\.root= is set by jitterlab"):
        parse_options({"machine": "virt-arm64", "cmdline": "jitterlab.root=/dev/vdb"}, "t")


def test_boards_default_to_one_cpu_and_emulation_only():
    opts = parse_options({"machine": "virt-arm64"}, "t")
    assert opts.cpus == 1 and opts.profile is VIRT_ARM64
    with pytest.raises(UserError, match="emulated only"):
        parse_options({"machine": "virt-armhf", "accel": "kvm"}, "t")
    assert {"virt-arm64", "virt-armhf"} <= set(MACHINES.names())


def test_armhf_kernels_are_debians_armmp_packages():
    assert parse_options({"machine": "virt-armhf", "kernel": "rt"}, "t").kernel.metapackage == \
        "linux-image-rt-armmp"
    assert parse_options({"machine": "virt-arm64"}, "t").kernel.metapackage == "linux-image-arm64"


def test_only_a_board_with_a_traced_controller_records_its_gpio_outputs(tmp_path):
    board = QemuTarget("board", parse_options({"machine": "virt-arm64"}, "t"))
    pc = QemuTarget("pc", parse_options({}, "t"))
    try:
        trace = has(board, RecordsGpioOutputs).gpio_trace()
        assert (trace.block, trace.event) == (SOCS["pl061"], "pl061_set_output")
        assert trace.path.parent == board.dir
        assert has(pc, RecordsGpioOutputs) is None
        # a board's GPIO block can be read over the monitor; the pc guest has none to read
        assert has(board, ExaminesMemory) is not None and has(pc, ExaminesMemory) is None
    finally:
        board.close()
        pc.close()


def test_a_board_cross_builds_against_its_own_root_and_records_it(tmp_path):
    board = QemuTarget("board", parse_options({"machine": "virt-arm64"}, "t"))
    try:
        assert has(board, CrossBuilt).cross_cc == "aarch64-linux-gnu-gcc"
        board.board_root = BoardRoot(tmp_path / "root.ext4", tmp_path / "sysroot",
                                     "Debian bookworm arm64 root", None)
        assert board.cross_cc == f"aarch64-linux-gnu-gcc --sysroot={tmp_path}/sysroot"
        facts = board.vm_facts()
        assert facts["vm_machine"] == "virt-arm64" and facts["vm_root"] == "Debian bookworm arm64 root"
        assert facts["vm_machine_cmdline"] == "iomem=relaxed"
    finally:
        board.close()


def test_a_board_root_takes_more_packages_and_a_pc_guest_refuses_them():
    opts = parse_options({"machine": "virt-arm64", "packages": ["nodejs", "nodejs"]}, "t")
    assert opts.packages == ("nodejs",)
    with pytest.raises(UserError, match=r"^t\.packages: qemu machine 'pc' runs this machine's own root"):
        parse_options({"packages": ["nodejs"]}, "t")
    for bad in ("nodejs", [3]):
        with pytest.raises(UserError, match=r"^t\.packages: expected a list of Debian package names"):
            parse_options({"machine": "virt-arm64", "packages": bad}, "t")
    with pytest.raises(UserError, match=r"^t\.packages: 'Node JS' is no Debian package name"):
        parse_options({"machine": "virt-arm64", "packages": ["Node JS"]}, "t")


def test_the_sabrelite_has_no_virtio_its_root_on_an_sd_card_and_its_console_on_uart2(tmp_path):
    from jitterlab.targets.qemu.machines.sabrelite import SABRELITE

    argv = qemu_argv(BootSpec(
        profile=SABRELITE, image=tmp_path / "zImage", initrd=tmp_path / "initrd.cpio",
        append=kernel_cmdline(SABRELITE, ""), cpus=1, memory_bytes=1 << 30, accel="tcg", shares=(),
        ssh_port=2222, console=tmp_path / "console.log", disk=tmp_path / "root.ext4"))
    assert not any("virtio" in a for a in argv) and "-fsdev" not in argv and "-cpu" not in argv
    serial = [argv[i + 1] for i, a in enumerate(argv) if a == "-serial"]
    assert serial == ["null", "chardev:console"]  # the device tree's stdout-path is UART2
    assert argv[argv.index("-nic") + 1] == "user,model=imx.enet,restrict=on,hostfwd=tcp:127.0.0.1:2222-:22"
    # an SD card cannot be read-only: qemu keeps the guest's writes in a scratch copy
    drive = argv[argv.index("-drive") + 1]
    assert drive == f"file={tmp_path}/root.ext4,if=none,format=raw,snapshot=on,id=root"
    assert "sd-card,drive=root" in argv
    assert kernel_cmdline(SABRELITE, "") == (
        "console=ttymxc1 loglevel=4 panic=-1 rdinit=/init jitterlab.root=/dev/mmcblk3 jitterlab.shares=none "
        "iomem=relaxed")
    modules = SABRELITE.boot_modules
    assert modules.index("sdhci_esdhc_imx") < modules.index("ext4") and "9p" not in modules
    assert "fec" in modules and "gpio_mxc" in modules
    edits = [(e.node, e.prop, e.value) for e in SABRELITE.dt_edits]
    assert edits == [("/soc/timer@a00600", "status", "disabled")]


def test_per_boot_files_ride_in_a_second_initramfs_archive(tmp_path):
    from jitterlab.targets.qemu.initrd import with_files

    base = tmp_path / "base.cpio"
    base.write_bytes(b"BASE")
    files = tmp_path / "boot"
    files.mkdir()
    (files / "host_key").write_text("secret")
    with_files(base, files, "jlboot", tmp_path / "out.cpio")
    data = (tmp_path / "out.cpio").read_bytes()
    assert data.startswith(b"BASE070701") and b"jlboot/host_key\0" in data and b"secret" in data
    assert data.rstrip(b"\0").endswith(b"TRAILER!!!")


def test_a_profile_names_its_gpio_block_by_a_register_map_users_can_name():
    """A machine's GPIO block is a record of model/socs.py, checked when the profile is made: one that
    [pins.gpiomem] soc or [probes.register-poll] soc could not name, or a traced controller that is
    not the block whose registers the machine has, is a bug of the profile."""
    from dataclasses import replace

    from jitterlab.model.socs import Pl061

    assert VIRT_ARM64.gpio_soc is SOCS["pl061"] and VIRT_ARM64.traced_gpio.soc is SOCS["pl061"]
    look_alike = Pl061("pl061", "a PL061 elsewhere", 8, "/dev/mem")
    with pytest.raises(ValueError, match=r"^qemu machine 'virt-arm64': GPIO block 'pl061' is not a register "
                                         r"map of model/socs.py's SOCS \(bcm2835, .*\)$"):
        replace(VIRT_ARM64, gpio_soc=look_alike)
    with pytest.raises(ValueError, match=r"^qemu machine 'virt-arm64' traces GPIO block 'pl061' but has the "
                                         r"registers of 'imx6'$"):
        replace(VIRT_ARM64, gpio_soc=SOCS["imx6"])
    declared = parse_options({"machine": "sabrelite", "cpus": 2}, "t").declared()
    assert (declared.machine, declared.cpus, declared.gpio_soc, declared.traced) == (
        "sabrelite", 2, SOCS["imx6"], None)
