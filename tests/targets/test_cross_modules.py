"""Kernel modules built on the controller for a board's kernel (cross-compiled for an ARM board),
against Debian's headers unpacked in a kernel tree, kept per kernel and source version. make and
the compilers are fakes on PATH: the fake make records what kbuild would have been given."""

from __future__ import annotations

import json
import os
import struct
import sys
from pathlib import Path

import pytest

from jitterlab.model.arch import ARCHES
from jitterlab.model.errors import UserError
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.qemu import cross_modules
from jitterlab.targets.qemu.cross_modules import check_module, controller_module, make_args
from jitterlab.targets.qemu.modules import put_module, source_digest

RELEASE = "6.1.0-56-arm64"
WHERE = "target 'board'"
AARCH64, ARM, X86_64 = 183, 40, 62

FAKE_MAKE = """#!{python}
import json, os, shutil, sys
from pathlib import Path
args = sys.argv[1:]
objtree = Path(args[args.index("-C") + 1])
build = Path(next(a[2:] for a in args if a.startswith("M=")))
with open(os.environ["FAKE_MAKE_LOG"], "a") as log:
    log.write(json.dumps({{"argv": args, "makefile": (objtree / "Makefile").read_text(),
                          "scripts": os.readlink(objtree / "scripts"),
                          "config": (objtree / ".config").read_text(),
                          "makeflags": "MAKEFLAGS" in os.environ}}) + "\\n")
if os.environ.get("FAKE_MAKE_SAYS"):
    sys.stderr.write(os.environ["FAKE_MAKE_SAYS"])
    sys.exit(2)
obj = (build / "Kbuild").read_text().split(":=")[1].strip()[:-2]
shutil.copyfile(os.environ["FAKE_KO"], build / (obj + ".ko"))
"""


def elf_module(machine: int = AARCH64, elf_class: int = 2,
               vermagic: str = f"{RELEASE} SMP mod_unload modversions aarch64") -> bytes:
    """A little-endian ELF relocatable with a .modinfo section, as kbuild leaves a .ko."""
    modinfo = f"license=GPL\0vermagic={vermagic}\0name=jl_x\0".encode()
    names = b"\0.modinfo\0.shstrtab\0"
    header_size, entry_size = (64, 64) if elf_class == 2 else (52, 40)
    at_modinfo = header_size
    at_names = at_modinfo + len(modinfo)
    at_sections = at_names + len(names)
    word = "Q" if elf_class == 2 else "I"
    ident = b"\x7fELF" + bytes([elf_class, 1, 1]) + bytes(9)
    header = ident + struct.pack(f"<HHI{word}{word}{word}IHHHHHH", 1, machine, 1, 0, 0, at_sections, 0,
                                 header_size, 0, 0, entry_size, 3, 2)
    section = f"<II{word}{word}{word}{word}II{word}{word}"
    sections = (struct.pack(section, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
                + struct.pack(section, 1, 1, 2, 0, at_modinfo, len(modinfo), 0, 0, 1, 0)
                + struct.pack(section, 10, 3, 0, 0, at_names, len(names), 0, 0, 1, 0))
    return header + modinfo + names + sections


def kernel_tree(tmp_path: Path, release: str = RELEASE) -> Path:
    """Debian's kernel packages unpacked: the flavour's headers, the common headers, kbuild."""
    tree = tmp_path / "tree"
    kbuild = tree / "usr/lib/linux-kbuild-6.1"
    (kbuild / "scripts/basic").mkdir(parents=True)
    (kbuild / "tools").mkdir()
    (kbuild / "scripts/basic/fixdep").write_text("a program of the board's architecture\n")
    common = tree / "usr/src/linux-headers-6.1.0-56-common"
    common.mkdir(parents=True)
    (common / "Makefile").write_text("# the srctree\n")
    headers = tree / "usr/src" / f"linux-headers-{release}"
    (headers / "include").mkdir(parents=True)
    (headers / ".config").write_text('CONFIG_CC_VERSION_TEXT="gcc-12 (Debian 12.2.0-14) 12.2.0"\n')
    (headers / "Module.symvers").write_text("")
    kernel_arch = {"arm64": "arm64", "armmp": "arm", "amd64": "x86"}[release.rsplit("-", 1)[1]]
    (headers / ".kernelvariables").write_text(f"override ARCH = {kernel_arch}\n")
    (headers / "Makefile").write_text("include /usr/src/linux-headers-6.1.0-56-common/Makefile\n")
    (headers / "scripts").symlink_to("../../lib/linux-kbuild-6.1/scripts")
    (headers / "tools").symlink_to("../../lib/linux-kbuild-6.1/tools")
    return tree


def sources(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "jl_x.c").write_text("int x;\n")
    (src / "Kbuild").write_text("obj-m := jl_x.o\n")
    return src


class Controller:
    """This machine as the tests see it: an amd64 host whose PATH holds only the fakes."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        self.log = tmp_path / "make.log"
        self.ko = tmp_path / "module.ko"
        self.ko.write_bytes(elf_module())
        self.host_kbuild = tmp_path / "host-kbuild"
        (self.host_kbuild / "usr/lib/linux-kbuild-6.1/scripts/basic").mkdir(parents=True)
        (self.host_kbuild / "usr/lib/linux-kbuild-6.1/scripts/basic/fixdep").write_text("amd64\n")
        self.cache = tmp_path / "kernel-cache"
        self.tool("make", FAKE_MAKE.format(python=sys.executable))
        self.tool("aarch64-linux-gnu-gcc-12")
        monkeypatch.setenv("PATH", str(self.bin))
        monkeypatch.setenv("FAKE_MAKE_LOG", str(self.log))
        monkeypatch.setenv("FAKE_KO", str(self.ko))
        monkeypatch.setattr(cross_modules, "host_arch", lambda: "amd64")

    def tool(self, name: str, text: str = "#!/bin/sh\nexit 0\n") -> None:
        (self.bin / name).write_text(text)
        (self.bin / name).chmod(0o755)

    def makes(self) -> list[dict]:
        return [json.loads(line) for line in self.log.read_text().splitlines()] if self.log.exists() else []


@pytest.fixture
def here(tmp_path, monkeypatch) -> Controller:
    return Controller(tmp_path, monkeypatch)


@pytest.mark.parametrize(("arch", "host", "expected"), [
    ("arm64", "amd64", ["ARCH=arm64", "CROSS_COMPILE=aarch64-linux-gnu-"]),
    ("armhf", "amd64", ["ARCH=arm", "CROSS_COMPILE=arm-linux-gnueabihf-"]),
    ("amd64", "amd64", ["ARCH=x86"]),
    ("arm64", "arm64", ["ARCH=arm64"]),
    ("amd64", "arm64", ["ARCH=x86", "CROSS_COMPILE=x86_64-linux-gnu-"]),
])  # fmt: skip
def test_kbuild_is_told_the_boards_architecture_and_cross_prefix(monkeypatch, arch, host, expected):
    monkeypatch.setattr(cross_modules, "host_arch", lambda: host)
    assert make_args(arch, WHERE) == expected


def test_an_unknown_architecture_is_refused(monkeypatch):
    with pytest.raises(UserError, match=r"^target 'board': no kernel module builds for Debian architecture "
                                        r"'sparc64' \(known: amd64, arm64, armel, armhf, i386, mips64el, "
                                        r"ppc64el, riscv64, s390x\)$"):
        make_args("sparc64", WHERE)


def test_built_once_on_this_machine_against_the_trees_headers_then_kept(tmp_path, here, monkeypatch):
    tree, src = kernel_tree(tmp_path), sources(tmp_path)
    monkeypatch.setenv("MAKEFLAGS", "-j8 --jobserver-auth=3,4")  # a make above must not steer kbuild
    ko = controller_module(src, "jl_x", tree, RELEASE, "arm64", here.host_kbuild, here.cache, WHERE)
    assert ko == here.cache / f"jl_x-{source_digest(src)}.ko"
    assert ko.read_bytes() == elf_module()
    [made] = here.makes()
    assert made["argv"][:2] == ["-s", "-C"]
    assert made["argv"][3:] == [f"M={Path(made['argv'][2]).parent / 'jl_x'}", "ARCH=arm64",
                                "CROSS_COMPILE=aarch64-linux-gnu-", "modules"]
    # the absolute include names the tree's common headers; kbuild's programs are this machine's
    assert made["makefile"] == f"include {tree}/usr/src/linux-headers-6.1.0-56-common/Makefile\n"
    assert made["scripts"] == str(here.host_kbuild / "usr/lib/linux-kbuild-6.1/scripts")
    assert made["config"].startswith("CONFIG_CC_VERSION_TEXT=") and not made["makeflags"]
    assert [p.name for p in here.cache.iterdir()] == [ko.name]  # the build directory is gone
    headers = tree / "usr/src" / f"linux-headers-{RELEASE}"
    assert (headers / "Makefile").read_text().startswith("include /usr/src/")  # the tree is only read

    again = controller_module(src, "jl_x", tree, RELEASE, "arm64", here.host_kbuild, here.cache, WHERE)
    assert again == ko and len(here.makes()) == 1  # kept: make does not run

    (src / "jl_x.c").write_text("int y;\n")  # new sources: built again, beside the old one
    controller_module(src, "jl_x", tree, RELEASE, "arm64", here.host_kbuild, here.cache, WHERE)
    assert len(here.makes()) == 2 and len(list(here.cache.glob("jl_x-*.ko"))) == 2


def test_a_board_of_this_machines_architecture_uses_the_trees_own_kbuild(tmp_path, here):
    tree, src = kernel_tree(tmp_path, "6.1.0-56-amd64"), sources(tmp_path)
    here.tool("gcc-12")
    here.ko.write_bytes(elf_module(X86_64, vermagic="6.1.0-56-amd64 SMP preempt mod_unload modversions"))
    controller_module(src, "jl_x", tree, "6.1.0-56-amd64", "amd64", None, here.cache, WHERE)
    [made] = here.makes()
    assert made["argv"][4:] == ["ARCH=x86", "modules"]
    assert made["scripts"] == str((tree / "usr/lib/linux-kbuild-6.1/scripts").resolve())


@pytest.mark.parametrize(("arch", "release", "message"), [
    ("arm64", RELEASE, "this machine has no aarch64-linux-gnu-gcc-12, the kernel's compiler "
                       "(apt install gcc-aarch64-linux-gnu where its gcc is 12, "
                       "else gcc-12-aarch64-linux-gnu)"),
    ("armhf", "6.1.0-56-armmp", "this machine has no arm-linux-gnueabihf-gcc-12, the kernel's compiler "
                                "(apt install gcc-arm-linux-gnueabihf where its gcc is 12, "
                                "else gcc-12-arm-linux-gnueabihf)"),
])  # fmt: skip
def test_a_missing_cross_compiler_is_one_line_naming_the_package(tmp_path, here, arch, release, message):
    (here.bin / "aarch64-linux-gnu-gcc-12").unlink()
    with pytest.raises(UserError) as refused:
        controller_module(sources(tmp_path), "jl_x", kernel_tree(tmp_path, release), release, arch,
                          here.host_kbuild, here.cache, WHERE)
    assert str(refused.value) == f"{WHERE}: cannot build jl_x.ko for kernel {release}: {message}"
    assert here.makes() == []


def test_a_cross_build_needs_this_machines_kbuild(tmp_path, here):
    tree, src = kernel_tree(tmp_path), sources(tmp_path)
    with pytest.raises(UserError, match=r"^target 'board': cannot build jl_x.ko for kernel 6.1.0-56-arm64: "
                                        r"the kernel's linux-kbuild-6.1 has arm64 programs; building on this "
                                        r"amd64 machine needs its own linux-kbuild-6.1 of the same version$"):
        controller_module(src, "jl_x", tree, RELEASE, "arm64", None, here.cache, WHERE)
    with pytest.raises(UserError, match=r": no linux-kbuild-6.1 in .*empty \(unpack this machine's amd64 "
                                        r"linux-kbuild-6.1 package there\)$"):
        controller_module(src, "jl_x", tree, RELEASE, "arm64", tmp_path / "empty", here.cache, WHERE)
    assert here.makes() == []


def test_missing_headers_are_named(tmp_path, here):
    with pytest.raises(UserError, match=r"for kernel 6.1.0-57-arm64: no headers in .*/tree/usr/src/"
                                        r"linux-headers-6.1.0-57-arm64 \(the kernel's linux-headers-"
                                        r"6.1.0-57-arm64 package is not unpacked there\)$"):
        controller_module(sources(tmp_path), "jl_x", kernel_tree(tmp_path), "6.1.0-57-arm64", "arm64",
                          here.host_kbuild, here.cache, WHERE)


def test_headers_of_another_architecture_are_refused_before_make(tmp_path, here):
    tree = kernel_tree(tmp_path, "6.1.0-56-amd64")
    with pytest.raises(UserError, match=r"for kernel 6.1.0-56-amd64: the headers in .*/linux-headers-6.1.0-56"
                                        r"-amd64 are for ARCH=x86, not arm64 \(ARCH=arm64\): the kernel and "
                                        r"the machine disagree$"):
        controller_module(sources(tmp_path), "jl_x", tree, "6.1.0-56-amd64", "arm64", here.host_kbuild,
                          here.cache, WHERE)
    assert here.makes() == []


def test_a_failed_build_names_the_kernel_and_the_compilers_complaint(tmp_path, here, monkeypatch):
    monkeypatch.setenv("FAKE_MAKE_SAYS", "jl_x.c:1:5: error: 'x' redeclared\nmake[2]: *** Error 1\n")
    with pytest.raises(UserError, match=r"^target 'board': cannot build jl_x.ko for kernel 6.1.0-56-arm64: "
                                        r"jl_x.c:1:5: error: 'x' redeclared$"):
        controller_module(sources(tmp_path), "jl_x", kernel_tree(tmp_path), RELEASE, "arm64",
                          here.host_kbuild, here.cache, WHERE)
    assert list(here.cache.iterdir()) == []  # nothing kept, no build directory left


@pytest.mark.parametrize(("module", "message"), [
    (elf_module(X86_64), "is a 64-bit x86-64 object, not a 64-bit AArch64 one: the compiler make ran is "
                         "not aarch64-linux-gnu's"),
    (elf_module(ARM, elf_class=1), "is a 32-bit ARM object, not a 64-bit AArch64 one: the compiler make "
                                   "ran is not aarch64-linux-gnu's"),
    (elf_module(vermagic="6.1.0-55-arm64 SMP mod_unload aarch64"),
     "says vermagic '6.1.0-55-arm64 SMP mod_unload aarch64', not kernel 6.1.0-56-arm64: the headers are "
     "another kernel's"),
    (elf_module(vermagic="6.1.0-56-arm64-extra SMP"), "says vermagic '6.1.0-56-arm64-extra SMP', not kernel "
                                                      "6.1.0-56-arm64: the headers are another kernel's"),
    (b"!<arch>\nnot an ELF file at all, but long enough to have a header" * 2, "is not an ELF object"),
])  # fmt: skip
def test_a_module_of_another_cpu_or_kernel_is_refused_and_not_kept(tmp_path, here, module, message):
    here.ko.write_bytes(module)
    with pytest.raises(UserError) as refused:
        controller_module(sources(tmp_path), "jl_x", kernel_tree(tmp_path), RELEASE, "arm64",
                          here.host_kbuild, here.cache, WHERE)
    assert str(refused.value) == f"{WHERE}: jl_x.ko built for kernel {RELEASE} {message}"
    assert list(here.cache.iterdir()) == []


@pytest.mark.parametrize(("arch", "module", "release"), [
    ("armhf", elf_module(ARM, elf_class=1, vermagic="6.1.0-56-armmp SMP mod_unload ARMv7 p2v8"),
     "6.1.0-56-armmp"),
    ("arm64", elf_module(), RELEASE),
])  # fmt: skip
def test_a_module_of_the_boards_cpu_and_kernel_passes(arch, module, release):
    assert check_module(module, release, ARCHES.get(arch, "test"), "jl_x.ko") is None
    # it passed on what it read: the same module is another kernel's to a check that expects one
    with pytest.raises(UserError, match=f"^jl_x.ko says vermagic '{release} .*', not kernel {release}-other"):
        check_module(module, f"{release}-other", ARCHES.get(arch, "test"), "jl_x.ko")


def test_a_module_built_here_is_put_into_the_guest(tmp_path):
    module = tmp_path / "jl_x-0123456789ab.ko"
    module.write_bytes(elf_module())
    guest = FakeTarget(workdir=str(tmp_path / "guest"), fallback_local=True)
    (tmp_path / "guest/modules/jl_x").mkdir(parents=True)
    (tmp_path / "guest/modules/jl_x/stale.ko").write_bytes(b"from the last boot")
    path = put_module(guest, module, "jl_x")
    assert path == f"{tmp_path}/guest/modules/jl_x/jl_x.ko"
    assert Path(path).read_bytes() == elf_module()
    assert os.listdir(tmp_path / "guest/modules/jl_x") == ["jl_x.ko"]
