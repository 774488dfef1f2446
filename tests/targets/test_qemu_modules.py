"""Kernel modules of a qemu guest: built in the guest once per kernel and source version, kept on
this machine, only copied in at later boots (a guest forgets its builds at every boot)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.qemu.modules import guest_module, source_digest


def sources(tmp_path: Path) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "jl_x.c").write_text("int x;\n")
    (src / "Kbuild").write_text("obj-m := jl_x.o\n")
    return src


def guest(tmp_path: Path, make_rc: int = 0) -> FakeTarget:
    target = FakeTarget(workdir=str(tmp_path / "guest"), fallback_local=True)
    target.respond(["uname", "-r"], "6.1.0-56-amd64\n")

    def make(argv):
        build = Path(argv[-1])
        if make_rc == 0:
            (build / "jl_x.ko").write_bytes(b"ELF module for " + (build / "jl_x.c").read_bytes())
            return Completed(tuple(argv), 0, "", "")
        return Completed(tuple(argv), 2, "", "jl_x.c:1:5: error: 'x' redeclared\nmake[2]: *** Error 1\n")

    target.respond(["make"], response=make)
    return target


def test_built_once_in_the_guest_then_copied_in(tmp_path):
    src, cache = sources(tmp_path), tmp_path / "kernel-cache"
    cache.mkdir()
    first = guest(tmp_path)
    path = guest_module(first, src, "jl_x", cache, "target 'vm'")
    assert Path(path).read_bytes() == b"ELF module for int x;\n"
    assert [c[0] for c in first.calls].count("make") == 1
    kept = cache / f"jl_x-{source_digest(src)}.ko"
    assert kept.read_bytes() == b"ELF module for int x;\n" and not list(cache.glob("*.part"))

    later = guest(tmp_path)  # the next boot: nothing built, the kept module copied in
    assert Path(guest_module(later, src, "jl_x", cache, "target 'vm'")).read_bytes() == kept.read_bytes()
    assert "make" not in [c[0] for c in later.calls]

    (src / "jl_x.c").write_text("int y;\n")  # new sources: built again, beside the old one
    again = guest(tmp_path)
    rebuilt = guest_module(again, src, "jl_x", cache, "target 'vm'")
    assert Path(rebuilt).read_bytes() == b"ELF module for int y;\n"
    assert len(list(cache.glob("jl_x-*.ko"))) == 2


def test_a_failed_build_names_the_kernel_and_the_compilers_complaint(tmp_path):
    src, cache = sources(tmp_path), tmp_path / "kernel-cache"
    cache.mkdir()
    with pytest.raises(UserError, match=r"^target 'vm': cannot build jl_x.ko for kernel 6.1.0-56-amd64: "
                                        r"jl_x.c:1:5: error: 'x' redeclared$"):
        guest_module(guest(tmp_path, make_rc=2), src, "jl_x", cache, "target 'vm'")
    assert list(cache.iterdir()) == []  # nothing kept of a failed build
