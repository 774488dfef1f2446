"""Out-of-tree kernel modules for a qemu guest's kernel: built once, kept here, loaded each boot.

A guest's root is a read-only view of this machine's with a tmpfs laid over it, so what a boot
builds is gone at the next one, and kbuild in an emulated guest takes a minute or more per module.
A module is therefore built in the guest with kbuild against the guest's own kernel (where
Debian's headers resolve their absolute paths) once per kernel and source version, and the .ko is
kept in the kernel's cache directory on this machine: later boots only copy it in. The virtual
GPIO chip (qemu_vgpio) and the kmod impls' jl_wave are built this way. A board's root has no
compiler: its modules are built on this machine (cross_modules.controller_module) and put in
(put_module).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from jitterlab.model.errors import UserError

BUILD_TIMEOUT_S = 900.0  # kbuild in an emulated guest: about a minute here, more for 6.12


def source_digest(sources: Path) -> str:
    """A version of the module's sources: its C files, Kbuild and Makefile."""
    digest = hashlib.sha256()
    for path in sorted(sources.iterdir()):
        if path.is_file() and path.suffix in (".c", ".h", "") and not path.name.startswith("."):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def guest_module(target, sources: Path, name: str, cache_dir: Path, where: str) -> str:
    """`name`.ko of the kbuild sources in `sources` for the running guest kernel, in the guest
    (its path there): taken from `cache_dir` or built in the guest and kept there. UserError
    naming the kernel and the cause when it cannot be built."""
    cached = cache_dir / f"{name}-{source_digest(sources)}.ko"
    remote = f"{target.workdir}/modules/{name}"
    target.run(["rm", "-rf", "--", remote])
    if cached.is_file():
        target.run(["mkdir", "-p", "--", remote])
        target.put(cached, f"{remote}/{name}.ko")
        return f"{remote}/{name}.ko"
    target.run(["mkdir", "-p", "--", remote.rsplit("/", 1)[0]])
    target.put(sources, remote)
    built = target.run(["make", "-s", "-C", remote], timeout_s=BUILD_TIMEOUT_S)
    if not built.ok:
        release = target.run(["uname", "-r"]).stdout.strip()
        raise UserError(f"{where}: cannot build {name}.ko for kernel {release}: "
                        f"{build_failure(built.stdout + built.stderr)}")
    partial = cached.with_name(cached.name + f".{os.getpid()}.part")
    target.get(f"{remote}/{name}.ko", partial)
    os.replace(partial, cached)
    return f"{remote}/{name}.ko"


def put_module(target, module: Path, name: str) -> str:
    """`module`, a .ko built on this machine, as `name`.ko in the guest's work directory: its path
    there (the guest forgets it at every boot)."""
    remote = f"{target.workdir}/modules/{name}"
    target.run(["rm", "-rf", "--", remote])
    target.run(["mkdir", "-p", "--", remote])
    target.put(module, f"{remote}/{name}.ko")
    return f"{remote}/{name}.ko"


def build_failure(output: str) -> str:
    """What a failed kbuild says that matters: the compiler's or shell's complaint, not make's
    trailer, with the fix when it is known."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any("pahole: not found" in line for line in lines):
        return "the kernel builds BTF for its modules and needs pahole (apt install dwarves on this machine)"
    telling = [line for line in lines if ("error" in line.lower() or "not found" in line)
               and not line.startswith(("make:", "make["))]
    return " | ".join((telling or lines)[-3:])[-400:] or "no output"
