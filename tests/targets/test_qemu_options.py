"""The qemu target's decisions that need no VM: its options, the accelerator, the boot modules' load
order, and qemu's argv (which packages make a kernel: test_qemu_foreign_kernels.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import accel as qemu_accel
from jitterlab.targets.qemu.initrd import module_closure
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.options import parse_kernel, parse_options
from jitterlab.targets.qemu.vm import BootSpec, qemu_argv


def test_defaults_and_every_kernel_form(tmp_path):
    o = parse_options({}, "t")
    assert (o.kernel.metapackage, o.cpus, o.memory_bytes, o.accel, o.boot_timeout_s) == (
        "linux-image-amd64", 2, 1 << 30, "auto", 120.0)
    rt = parse_kernel("rt", "k")
    assert rt.metapackage == "linux-image-rt-amd64" and rt.rt and rt.version is None
    v = parse_kernel("6.12-rt", "k")
    assert (v.metapackage, v.version) == ("linux-image-rt-amd64", "6.12")
    image = tmp_path / "bzImage"
    image.write_bytes(b"x")
    assert parse_kernel(str(image), "k", check_files=True).path == str(image)
    assert parse_options({"memory": "512M", "cpus": 1, "accel": "tcg"}, "t").memory_bytes == 512 << 20


@pytest.mark.parametrize(("options", "words"), [
    ({"kernle": "rt"}, ["t.kernle", "kernel"]),
    ({"kernel": "realtime"}, ["t.kernel", "'realtime'", '"rt"']),
    ({"kernel": "/no/such/bzImage"}, ["t.kernel", "no such file"]),
    ({"cpus": 0}, ["t.cpus", "1-64"]),
    ({"cpus": True}, ["t.cpus"]),
    ({"memory": "64M"}, ["t.memory", "256M"]),
    ({"memory": "lots"}, ["t.memory", '"1G"']),
    ({"accel": "hvf"}, ["t.accel", '"auto"']),
    ({"cmdline": "init=/bin/sh"}, ["t.cmdline", "init="]),
    # the kernel drops the quotes: these set rdinit= and root= all the same
    ({"cmdline": '"rdinit=/bin/sh"'}, ["t.cmdline: rdinit= is set by jitterlab", "remove 'rdinit=/bin/sh'"]),
    ({"cmdline": 'quiet root="/dev/vda 1"'}, ["t.cmdline: root= is set by jitterlab", "'root=/dev/vda 1'"]),
    ({"cmdline": "a\nb"}, ["t.cmdline", "one line"]),
    ({"boot_timeout": "1s"}, ["t.boot_timeout", '"5s"']),
    # the README's bound of every duration of a campaign: a week
    ({"boot_timeout": "200h"}, ["t.boot_timeout: duration '200h' is too long; give at most 168 h"]),
    # qemu 7.2's sabrelite (i.MX6 Quad) refuses more than 4 CPUs and 3840 MiB; virt (GICv2) 8 CPUs
    ({"machine": "sabrelite", "cpus": 5}, ["t.cpus: qemu machine 'sabrelite' takes 1-4 CPUs, got 5"]),
    ({"machine": "sabrelite", "memory": "4G"},
     ["t.memory: '4G' is more than qemu machine 'sabrelite' takes; give \"3840M\" or less"]),
    ({"machine": "virt-arm64", "cpus": 9}, ["t.cpus: qemu machine 'virt-arm64' takes 1-8 CPUs, got 9"]),
    # the parameters of jitterlab's own boot (kernel_cmdline), its init's included
    ({"cmdline": "jitterlab.shares=none"}, ["t.cmdline: jitterlab.shares= is set by jitterlab"]),
    ({"cmdline": "quiet jitterlab.root=/dev/sda"}, ["t.cmdline: jitterlab.root= is set by jitterlab"]),
    ({"cmdline": "jitterlab.other=1"}, ["t.cmdline: jitterlab.other= is set by jitterlab"]),
    ({"cmdline": "panic=5"}, ["t.cmdline: panic= is set by jitterlab"]),
    # what the machine's own parameters set (a board's programs map its GPIO block through /dev/mem)
    ({"machine": "virt-armhf", "cmdline": "iomem=strict"}, ["t.cmdline: iomem= is set by jitterlab"]),
    # a 32-bit ARM kernel reads 1023 bytes of its command line: the campaign's words come last, cut off
    ({"machine": "virt-armhf", "cmdline": "isolcpus=0 " * 90},
     ["t.cmdline: with jitterlab's own parameters the kernel command line is 1076 bytes, and the armhf "
      "kernel reads 1023; shorten it"]),
    # package names: Debian's syntax (rootfs.py's rule), a bounded length, no kernel, checked when read
    ({"machine": "virt-arm64", "packages": ["a" * 200_000]},
     ["t.packages: a package name of 200000 characters; Debian's are at most 128"]),
    ({"machine": "virt-arm64", "packages": ["Node JS"]}, ["t.packages: 'Node JS' is no Debian package name"]),
    ({"machine": "virt-arm64", "packages": ["linux-image-arm64"]},
     ["t.packages: the board's root holds no kernel"]),
    ({"machine": "virt-arm64", "packages": ["x"] * 2000}, ["t.packages: 2000 packages; give at most 1000"]),
    ({"workdir": "relative"}, ["t.workdir", "absolute"]),
])
def test_bad_options_are_one_line_naming_the_key(options, words):
    with pytest.raises(UserError) as e:
        parse_options(options, "t", check_files=True)
    message = str(e.value)
    assert "\n" not in message and all(w in message for w in words), message


def test_auto_uses_kvm_only_with_the_cpu_extension_and_its_module():
    intel, amd = {"fpu", "vmx"}, {"svm"}
    assert qemu_accel.choose("auto", intel, {"kvm", "kvm_intel"}, True, "t").name == "kvm"
    assert qemu_accel.choose("auto", amd, {"kvm_amd"}, True, "t").name == "kvm"
    # a paravirtual /dev/kvm: no vmx/svm flag, so emulation, and the reason says why
    pvm = qemu_accel.choose("auto", {"fpu", "hypervisor"}, {"kvm"}, True, "t")
    assert pvm.name == "tcg" and "vmx or svm" in pvm.why
    assert "modprobe kvm_intel" in qemu_accel.choose("auto", intel, set(), True, "t").why
    assert "group kvm" in qemu_accel.choose("auto", intel, {"kvm_intel"}, False, "t").why
    assert qemu_accel.choose("tcg", intel, {"kvm_intel"}, True, "t").name == "tcg"
    with pytest.raises(UserError, match=r"t\.accel: kvm cannot work"):
        qemu_accel.choose("kvm", {"fpu"}, set(), True, "t")


def test_cpu_flags_and_modules_are_read_from_procfs_text():
    cpuinfo = "processor\t: 0\nflags\t\t: fpu vme svm\n\nprocessor\t: 1\nflags\t\t: other\n"
    assert qemu_accel.cpu_flags(cpuinfo) == {"fpu", "vme", "svm"}
    assert qemu_accel.loaded_modules("kvm_amd 1 0 - Live 0x0\n", ["kvm"]) == {"kvm_amd", "kvm"}


def test_boot_modules_load_dependencies_first(tmp_path):
    (tmp_path / "modules.dep").write_text(
        "kernel/fs/9p/9p.ko.xz: kernel/net/9p/9pnet.ko.xz kernel/fs/netfs/netfs.ko.xz\n"
        "kernel/net/9p/9pnet_virtio.ko.xz: kernel/net/9p/9pnet.ko.xz\n"
        "kernel/net/9p/9pnet.ko.xz:\nkernel/fs/netfs/netfs.ko.xz:\nkernel/fs/overlayfs/overlay.ko.xz:\n"
    )
    order = [p.name for p in module_closure(tmp_path, ("9p", "9pnet_virtio", "overlay", "absent"))]
    assert order == ["9pnet.ko.xz", "netfs.ko.xz", "9p.ko.xz", "9pnet_virtio.ko.xz", "overlay.ko.xz"]
    # a kernel with 9p built in needs no modules
    assert module_closure(tmp_path / "none", PC.boot_modules) == []


def test_qemu_argv_shares_forwards_and_never_uses_a_shell(tmp_path):
    m = BootSpec(profile=PC, image=tmp_path / "vmlinux", initrd=tmp_path / "initrd", append="console=ttyS0",
                cpus=2, memory_bytes=1 << 30, accel="tcg", shares=(("jlroot", Path("/")),),
                ssh_port=2222, console=tmp_path / "console.log")
    argv = qemu_argv(m)
    text = " ".join(argv)
    assert argv[0].startswith("qemu-system-x86_64") or argv[0].endswith("qemu-system-x86_64")
    assert "tcg" in text and "hostfwd=tcp:127.0.0.1:2222-:22" in text
    assert "mount_tag=jlroot" in text and "readonly=on" in text
    assert argv[argv.index("-append") + 1] == "console=ttyS0"


def test_a_failed_build_of_the_virtual_chip_says_what_matters():
    from jitterlab.targets.qemu.modules import build_failure

    kbuild = ("  CC [M]  /tmp/v/jl_vgpio.o\n  BTF [M] /tmp/v/jl_vgpio.ko\n/bin/sh: 1: pahole: not found\n"
              "make[3]: *** [Makefile.modfinal:64: /tmp/v/jl_vgpio.ko] Error 127\nmake: *** [all] Error 2\n")
    assert "apt install dwarves" in build_failure(kbuild)
    compiler = "jl_vgpio.c:80:9: error: 'x' undeclared\nmake[2]: *** Error 1\nmake: *** [all] Error 2\n"
    assert build_failure(compiler) == "jl_vgpio.c:80:9: error: 'x' undeclared"


def _qemu_campaign(tmp_path: Path, target: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "t"\nduration = "1s"\nrepetitions = 1\n'
                    f'[[target]]\nname = "vm"\nkind = "qemu"\n{target}\n'
                    '[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\n')
    return path


@pytest.mark.parametrize(("target", "key"), [
    ('machine = "virt-arm64"\ncpus = 2', "cpus: 2 virtual CPUs, but this machine has 1"),
    ('machine = "virt-arm64"\nmemory = "1G"', "memory: 1024 MiB is not less than this machine's 512 MiB"),
    ('kernel = "/no/such/vmlinuz"', "kernel: no such file '/no/such/vmlinuz'"),
])
def test_what_only_booting_finds_names_the_campaign_file_and_the_target_key(tmp_path, monkeypatch, capsys,
                                                                            target, key):
    """Checked against this machine when the guest boots, not when the file is read; said the same way."""
    from jitterlab.cli.main import main
    from jitterlab.targets.qemu import target as qemu_target

    monkeypatch.setattr(qemu_target.shutil, "which", lambda tool: f"/usr/bin/{tool}")
    monkeypatch.setattr(qemu_target.os, "cpu_count", lambda: 1)
    monkeypatch.setattr(qemu_target, "_mem_total_bytes", lambda: 512 << 20)
    path = _qemu_campaign(tmp_path, target)
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {path}: target[0].{key}"), err
    assert not (tmp_path / "r").exists()
