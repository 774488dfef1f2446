"""Out-of-tree kernel modules built on this machine for a board's kernel, cross-compiled when the
board is another architecture: a board's root has no compiler, and kbuild under emulation is slow.

The kernel's Debian packages are unpacked into `tree` (nothing installed): usr/src/linux-headers-
<release> (the per-flavour objtree: .config, Module.symvers, generated headers), usr/src/linux-
headers-<ver>-common (the srctree) and usr/lib/linux-kbuild-<x.y> (kbuild's scripts and its
compiled helpers). Debian wires them with absolute paths — the flavour's Makefile is `include
/usr/src/linux-headers-<ver>-common/Makefile`, lib/modules/<release>/build points at /usr/src — and
the tree's kbuild helpers (fixdep, modpost, genksyms) are programs of the board's architecture.

Each build runs kbuild in its own objtree: a directory of links to the flavour directory's entries
(a copy of its 6,000 files would take seconds), whose Makefile names the common directory inside
`tree` instead of /usr/src and whose `scripts`/`tools` lead to a kbuild whose programs run here
(`host_kbuild`, this machine's linux-kbuild-<x.y> of the same version; the tree's own when the
board is this machine's architecture). kbuild takes the srctree from the Makefile it includes and
the objtree from the directory it runs in, and an external module's build (M=) writes only into
its own directory, so the tree is only read and the 75 MB common directory is used in place (it
holds headers and make files, no programs). Nothing on this machine changes, and no privilege is
needed: a private mount namespace with bind mounts over /usr/src and /usr/lib would need root (or
user namespaces) and mount points this machine does not have, and make variables can redirect
neither the literal `include` nor kbuild's `scripts/basic/fixdep`, run relative to the objtree.

The compiler is the one the kernel was built with (CONFIG_CC_VERSION_TEXT: gcc-12 for Debian 12),
prefixed by the board's GNU triplet (aarch64-linux-gnu-gcc-12). A fresh .ko is checked before it
is kept: an ELF object of the board's CPU whose vermagic names the release.
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import tempfile
from pathlib import Path

from jitterlab.model.arch import ARCHES, Arch, host_arch, of_elf
from jitterlab.model.errors import UserError
from jitterlab.model.units import format_duration_s
from jitterlab.targets.qemu.modules import build_failure, source_digest

BUILD_TIMEOUT_S = 600.0  # one module file: about a second here


def board_arch(arch: str, where: str) -> Arch:
    if arch not in ARCHES:
        raise UserError(f"{where}: no kernel module builds for Debian architecture {arch!r} "
                        f"(known: {', '.join(ARCHES.names())})")
    return ARCHES.get(arch, where)


def make_args(arch: str, where: str) -> list[str]:
    """kbuild's ARCH= and, for a board that is not this machine's architecture, CROSS_COMPILE=."""
    board = board_arch(arch, where)
    cross = [] if arch == host_arch() else [f"CROSS_COMPILE={board.triplet}-"]
    return [f"ARCH={board.kernel_arch}", *cross]


def controller_module(sources: Path, name: str, tree: Path, release: str, arch: str,
                      host_kbuild: Path | None, cache_dir: Path, where: str) -> Path:
    """`name`.ko of the kbuild sources in `sources` for kernel `release` of Debian architecture
    `arch`, built on this machine against the headers unpacked in `tree` once per kernel and source
    version and kept in `cache_dir` (the file returned). UserError naming the kernel and the fix
    when it cannot be built."""
    cached = cache_dir / f"{name}-{source_digest(sources)}.ko"
    if cached.is_file():
        return cached
    what = f"{where}: cannot build {name}.ko for kernel {release}"
    board = board_arch(arch, where)
    headers = tree / "usr" / "src" / f"linux-headers-{release}"
    if not (headers / ".config").is_file():
        raise UserError(f"{what}: no headers in {headers} (the kernel's linux-headers-{release} "
                        "package is not unpacked there)")
    built_for = re.search(r"^override ARCH = (\S+)", _text(headers / ".kernelvariables"), re.M)
    if built_for and built_for.group(1) != board.kernel_arch:
        raise UserError(f"{what}: the headers in {headers} are for ARCH={built_for.group(1)}, "
                        f"not {arch} (ARCH={board.kernel_arch}): the kernel and the machine disagree")
    args = make_args(arch, where)
    compiler = _compiler(headers, args)
    if shutil.which(compiler) is None:
        raise UserError(f"{what}: this machine has no {compiler}, the kernel's compiler "
                        f"({_compiler_package(compiler, board, arch)})")
    if shutil.which("make") is None:
        raise UserError(f"{what}: this machine has no make (apt install make)")
    kbuild = _kbuild(headers, host_kbuild, arch, what)
    cache_dir.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix=f".{name}-build-", dir=cache_dir)).absolute()
    try:
        objtree = _objtree(headers, tree, kbuild, scratch / "headers")
        build = scratch / name
        shutil.copytree(sources, build, ignore=shutil.ignore_patterns(".*", "*.o", "*.ko", "*.mod*"))
        built = _make(["make", "-s", "-C", str(objtree), f"M={build}", *args, "modules"], what)
        if built.returncode != 0:
            raise UserError(f"{what}: {build_failure(built.stdout + built.stderr)}")
        module = build / f"{name}.ko"
        if not module.is_file():
            raise UserError(f"{what}: kbuild made no {name}.ko (is obj-m := {name}.o in its Kbuild?)")
        check_module(module.read_bytes(), release, board, f"{where}: {name}.ko built for kernel {release}")
        partial = cached.with_name(cached.name + f".{os.getpid()}.part")
        shutil.copyfile(module, partial)
        os.replace(partial, cached)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return cached


def _text(path: Path) -> str:
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""


def _compiler(headers: Path, args: list[str]) -> str:
    """The kernel's compiler (CONFIG_CC_VERSION_TEXT's first word: "gcc-12") with the cross prefix."""
    text = re.search(r'^CONFIG_CC_VERSION_TEXT="(\S+)', (headers / ".config").read_text(), re.M)
    prefix = next((a.split("=", 1)[1] for a in args if a.startswith("CROSS_COMPILE=")), "")
    return prefix + (text.group(1) if text else "gcc")


def _compiler_package(compiler: str, board: Arch, arch: str) -> str:
    if arch == host_arch():
        return f"apt install {compiler}"
    version = compiler.rsplit("-gcc-", 1)[1] if "-gcc-" in compiler else ""
    if not version:
        return f"apt install gcc-{board.triplet}"
    return (f"apt install gcc-{board.triplet} where its gcc is {version}, "
            f"else gcc-{version}-{board.triplet}")


def _kbuild(headers: Path, host_kbuild: Path | None, arch: str, what: str) -> Path:
    """The linux-kbuild-<x.y> directory whose programs run here."""
    link = headers / "scripts"
    kbuild_name = next((p for p in Path(os.readlink(link)).parts if p.startswith("linux-kbuild-")), None) \
        if link.is_symlink() else None
    if kbuild_name is None:
        raise UserError(f"{what}: {link} does not lead to a linux-kbuild-<version> directory")
    if host_kbuild is None:
        if arch == host_arch():
            return link.resolve().parent
        raise UserError(f"{what}: the kernel's {kbuild_name} has {arch} programs; building on this "
                        f"{host_arch()} machine needs its own {kbuild_name} of the same version")
    kbuild = host_kbuild / "usr" / "lib" / kbuild_name
    if not (kbuild / "scripts" / "basic" / "fixdep").is_file():
        raise UserError(f"{what}: no {kbuild_name} in {host_kbuild} (unpack this machine's "
                        f"{host_arch()} {kbuild_name} package there)")
    return kbuild


def _objtree(headers: Path, tree: Path, kbuild: Path, into: Path) -> Path:
    """kbuild's objtree for one build: links to the flavour's headers, its Makefile naming `tree`'s
    common headers, `scripts` and `tools` leading to `kbuild`'s programs."""
    into.mkdir()
    for entry in headers.iterdir():
        if entry.name not in ("Makefile", "scripts", "tools"):
            (into / entry.name).symlink_to(entry.absolute())
    for name in ("scripts", "tools"):
        (into / name).symlink_to(kbuild.absolute() / name)
    lines = [f"include {tree.absolute() / line.split(None, 1)[1].strip().lstrip('/')}"
             if re.match(r"include\s+/", line) else line
             for line in (headers / "Makefile").read_text().splitlines()]
    (into / "Makefile").write_text("\n".join(lines) + "\n")
    return into


def _make(argv: list[str], what: str) -> subprocess.CompletedProcess:
    # a make above jitterlab (MAKEFLAGS) or a KBUILD_OUTPUT in the environment would steer kbuild
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "ARCH", "CROSS_COMPILE")
           and not k.startswith("KBUILD_")}
    try:
        return subprocess.run(argv, capture_output=True, text=True, errors="replace", env=env,
                              timeout=BUILD_TIMEOUT_S, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise UserError(f"{what}: kbuild did not finish in {format_duration_s(BUILD_TIMEOUT_S)}") from None


def check_module(data: bytes, release: str, board: Arch, what: str) -> None:
    """Refuse a .ko that is not an ELF object of `board`'s CPU or whose vermagic is not `release`'s."""
    if data[:4] != b"\x7fELF" or len(data) < 52 or data[4] not in (1, 2) or data[5] not in (1, 2):
        raise UserError(f"{what} is not an ELF object")
    order = "<" if data[5] == 1 else ">"
    machine = struct.unpack_from(order + "H", data, 18)[0]
    if machine != board.elf_machine or data[4] != board.elf_class:
        found = of_elf(machine, data[4])
        cpu = found.cpu if found is not None else f"ELF machine {machine}"
        raise UserError(f"{what} is a {32 * data[4]}-bit {cpu} object, not a {32 * board.elf_class}-bit "
                        f"{board.cpu} one: the compiler make ran is not {board.triplet}'s")
    vermagic = _modinfo(data, order).get("vermagic", "")
    if vermagic.split()[:1] != [release]:
        raise UserError(f"{what} says vermagic {vermagic!r}, not kernel {release}: the headers "
                        "are another kernel's")


def _modinfo(data: bytes, order: str) -> dict[str, str]:
    """The .modinfo section's key=value strings (what `modinfo` prints)."""
    try:
        if data[4] == 2:
            shoff, = struct.unpack_from(order + "Q", data, 0x28)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x3A)
            header = order + "IIQQQQ"  # name, type, flags, address, offset, size
        else:
            shoff, = struct.unpack_from(order + "I", data, 0x20)
            shentsize, shnum, shstrndx = struct.unpack_from(order + "HHH", data, 0x2E)
            header = order + "IIIIII"
        sections = [struct.unpack_from(header, data, shoff + i * shentsize) for i in range(shnum)]
        names_at = sections[shstrndx][4]
        for name, _type, _flags, _address, offset, size in sections:
            start = names_at + name
            if data[start:data.index(b"\0", start)] == b".modinfo":
                pairs = (item.decode(errors="replace").partition("=")
                         for item in data[offset:offset + size].split(b"\0") if item)
                return {key: value for key, _, value in pairs}
    except (struct.error, IndexError, ValueError):
        pass
    return {}
