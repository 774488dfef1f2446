"""One record per CPU architecture (model/arch.py): every name of it is read from there."""

from __future__ import annotations

import pytest

from jitterlab.model import arch as arch_module
from jitterlab.model.arch import ARCHES, ARM64, ARMHF, host_arch, of_elf, of_triplet, of_uname


def test_no_two_architectures_share_a_uname_or_a_triplet():
    unames = [u for e in ARCHES for u in e.obj.uname]
    triplets = [e.obj.triplet for e in ARCHES]
    assert len(unames) == len(set(unames)) and len(triplets) == len(set(triplets))
    assert all(e.name == e.obj.name for e in ARCHES)


@pytest.mark.parametrize(("uname_m", "debian"), [
    ("x86_64", "amd64"), ("aarch64", "arm64"), ("arm64", "arm64"), ("armv7l", "armhf"), ("armv8l", "armhf"),
    ("i686", "i386"), ("ppc64le", "ppc64el"), ("riscv64", "riscv64"),
])  # fmt: skip
def test_uname_names_lead_to_the_debian_architecture(uname_m, debian):
    assert of_uname(uname_m).name == debian


def test_what_is_unknown_is_none_and_this_machine_falls_back_to_its_uname(monkeypatch):
    assert of_uname("sparc64") is None and of_uname(None) is None and of_triplet("gcc") is None
    monkeypatch.setattr(arch_module, "host_uname", lambda: "sparc64")
    assert host_arch() == "sparc64"
    monkeypatch.setattr(arch_module, "host_uname", lambda: "aarch64")
    assert host_arch() == "arm64"


def test_the_toolchain_elf_and_kernel_names_of_one_record():
    assert of_triplet("arm-linux-gnueabihf") is ARMHF and of_triplet("arm-linux-gnueabi").name == "armel"
    assert (ARM64.cross_cc, ARM64.cross_cc_package, ARM64.cross_libc_package) == (
        "aarch64-linux-gnu-gcc", "gcc-aarch64-linux-gnu", "libc6-dev-arm64-cross")
    assert of_elf(183, 2) is ARM64 and of_elf(40, 1).cpu == "ARM" and of_elf(183, 1) is None
    assert ARMHF.rt_package == "linux-image-rt-armmp" and of_uname("riscv64").rt_package is None
    assert (ARMHF.max_cmdline, ARM64.max_cmdline) == (1024, 2048)
