"""What a new architecture costs, made here: one Arch record (model/arch.py) and one machine profile
of it (targets/qemu/machines/, with a KernelImage when its kernel comes in a form of its own, and a
line in machines/registry.py). Nothing else is told, and everything that differs between
architectures follows: `jitterlab list`, the qemu options, qemu's argv, the kernels, the compilers,
the kernel modules built here, the board's root, deploy, doctor, and the tuning checks, which give
no advice its record does not hold (never x86's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import deploy
from jitterlab.model.arch import ARCHES, Arch
from jitterlab.model.errors import UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.registry import Entry
from jitterlab.system import doctor, sysinfo, tuning
from jitterlab.targets.capabilities import CrossBuilt, RecordsGpioOutputs
from jitterlab.targets.qemu import cross_modules, rootfs
from jitterlab.targets.qemu.machines.profile import BOARD_ROOT, VIRTIO_PCI, KernelImage, MachineProfile
from jitterlab.targets.qemu.machines.registry import MACHINES
from jitterlab.targets.qemu.machines.virt import BOARD_ROOT_PACKAGES, PL061
from jitterlab.targets.qemu.options import option_help, parse_options
from jitterlab.targets.qemu.vm import BootSpec, qemu_argv
from jitterlab.targets.registry import declare, offered_by
from tests.targets.test_cross_modules import elf_module
from tests.test_tuning import X86_ADVICE, advice, bare_metal, untuned

# the record (in model/arch.py it would be one more `_add(Arch(...), help)`)
LOONG64 = Arch(
    name="loong64", cpu="LoongArch", uname=("loongarch64",), triplet="loongarch64-linux-gnu",
    kernel_arch="loongarch", elf_class=2, elf_machine=258, qemu_system="qemu-system-loongarch64",
    qemu_package="qemu-system-misc", qemu_user="loongarch64", kernels={"standard": "linux-image-loong64"},
)


class LoongImage(KernelImage):
    label = "LoongArch vmlinuz"
    mismatch = "a LoongArch kernel"

    def release(self, path: Path) -> str | None:
        return None


# the machine profile (its module in targets/qemu/machines/)
VIRT_LOONG64 = MachineProfile(
    name="virt-loong64", arch=LOONG64, machine_args=("-machine", "virt"),
    accel={"tcg": ("-accel", "tcg", "-cpu", "la464")}, console="ttyS0", image=LoongImage(),
    devices=VIRTIO_PCI, guest_root=BOARD_ROOT, board_root_packages=BOARD_ROOT_PACKAGES, traced_gpio=PL061,
    cpus=1, boot_timeout_s=300.0,
)


@pytest.fixture(autouse=True)
def registered(monkeypatch):
    monkeypatch.setitem(ARCHES._entries, "loong64", Entry("loong64", "64-bit LoongArch", LOONG64))
    monkeypatch.setitem(MACHINES._entries, "virt-loong64",
                        Entry("virt-loong64", "qemu's LoongArch virt board", VIRT_LOONG64))


def test_list_and_the_qemu_options_show_it(capsys):
    assert main(["list"]) == 0
    lines = [" ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    at = lines.index("virt-loong64 qemu's LoongArch virt board")
    assert lines[at + 1:at + 3] == ["arch — loong64 (LoongArch; qemu-system-loongarch64)",
                                    "kernel — standard = linux-image-loong64"]
    assert '"virt-loong64"' in option_help()["machine"]
    assert "linux-image-loong64 on virt-loong64" in option_help()["kernel"]


def test_its_options_kernels_compilers_and_argv(tmp_path):
    options = parse_options({"machine": "virt-loong64"}, "t")
    assert options.profile is VIRT_LOONG64 and options.kernel.metapackage == "linux-image-loong64"
    with pytest.raises(UserError, match=r"^t.kernel: Debian has no rt kernel for qemu machine 'virt-loong64' "
                                        r"\(loong64\); write \"standard\"$"):
        parse_options({"machine": "virt-loong64", "kernel": "rt"}, "t")
    build = VIRT_LOONG64.build
    assert (build.cc, build.init_cc_package, build.libc_package) == (
        "loongarch64-linux-gnu-gcc", "gcc-loongarch64-linux-gnu", "libc6-dev-loong64-cross")
    assert VIRT_LOONG64.kvm_missing("loong64") == "qemu machine 'virt-loong64' is emulated only"
    argv = qemu_argv(BootSpec(profile=VIRT_LOONG64, image=tmp_path / "vmlinuz", initrd=tmp_path / "initrd",
                              append="x", cpus=1, memory_bytes=1 << 30, accel="tcg", shares=(), ssh_port=2222,
                              console=tmp_path / "console.log"))
    assert argv[:7] == ["qemu-system-loongarch64", "-nodefaults", "-no-user-config", "-machine", "virt",
                        "-accel", "tcg"]
    declared = declare("board", "qemu", {"machine": "virt-loong64"}, "t")
    assert CrossBuilt in declared.offered and declared.traced_gpio is PL061.soc
    assert '"virt-loong64"' in offered_by(RecordsGpioOutputs)


def test_modules_roots_deploy_and_doctor_know_it(monkeypatch, tmp_path):
    monkeypatch.setattr(cross_modules, "host_arch", lambda: "amd64")
    made = cross_modules.make_args("loong64", "t")
    assert made == ["ARCH=loongarch", "CROSS_COMPILE=loongarch64-linux-gnu-"]
    release = "6.12.0-1-loong64"
    module = elf_module(258, vermagic=f"{release} SMP mod_unload")
    assert cross_modules.check_module(module, release, LOONG64, "jl_x.ko") is None
    with pytest.raises(UserError, match="is a 64-bit AArch64 object, not a 64-bit LoongArch one"):
        cross_modules.check_module(elf_module(183, vermagic=release), release, LOONG64, "jl_x.ko")

    monkeypatch.setattr(rootfs, "host_arch", lambda: "amd64")
    monkeypatch.setattr(rootfs, "_is_superuser", lambda: False)
    monkeypatch.setattr(rootfs, "BINFMT_DIR", tmp_path)
    with pytest.raises(UserError, match="binfmt_misc handler qemu-loongarch64 is not enabled"):
        rootfs._ensure_foreign_arch("loong64", "t")

    assert deploy.cross_arch("loongarch64-linux-gnu-gcc-14 -O2") == "loong64"
    assert doctor.rt_kernel_hint("loongarch64").startswith("Debian has no PREEMPT_RT kernel package for")


def test_its_checks_and_doctor_give_no_other_architectures_advice(monkeypatch):
    # its record says nothing of idle states, SMT, SMIs or KVM: the checks say nothing of them either
    stored = untuned("loongarch64")
    said = advice(monkeypatch, stored) + advice(monkeypatch, bare_metal(stored))
    assert not [word for word in (*X86_ADVICE, "cpuidle.off", "/online", "ARM") if word in said], said
    info = SystemFacts.from_json(untuned("loongarch64"))
    assert info.arch is LOONG64
    assert tuning.check_cstates(info).remedy.startswith("hold /dev/cpu_dma_latency at 0")
    assert tuning.check_smt(info).remedy.startswith("isolate whole cores")
    assert "KVM cannot run an loongarch64 board on this x86_64 controller" in said
    on_its_own = SystemFacts.from_json(untuned("loongarch64", host="loongarch64"))
    [tcg] = [w for w in sysinfo.checks(on_its_own) if "TCG" in w.message]
    assert tcg.remedy == "for timing, measure on real hardware; keep this one for what works"
