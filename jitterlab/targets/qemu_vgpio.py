"""The virtual GPIO chip of a qemu target (gpio = "virtual"): jl_vgpio.ko, loaded at boot.

Debian's kernels have neither gpio-sim nor gpio-mockup, so the guest would have no GPIO chip at
all. jl_vgpio (jitterlab/programs/vgpio/jl_vgpio.c) is a chip "jl-vgpio" of loopback pairs: line
2k drives line 2k+1, whose edge interrupts go through gpiolib like a real input's. It is built in
the guest with kbuild against the guest's own kernel (where Debian's headers resolve their
absolute paths) once per kernel and source version; the module is kept in the kernel's cache
directory here, so later boots only copy and load it.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from jitterlab.errors import UserError

SOURCES = Path(__file__).parent.parent / "programs" / "vgpio"
CHIP_LABEL = "jl-vgpio"
LINES = 4
BUILD_TIMEOUT_S = 900.0  # kbuild in an emulated guest: about a minute here


def source_digest() -> str:
    digest = hashlib.sha256()
    for path in sorted(SOURCES.iterdir()):
        if path.is_file() and path.suffix in (".c", "") and not path.name.startswith("."):
            digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def load(target, cache_dir: Path, where: str) -> None:
    """Build (or take from `cache_dir`) jl_vgpio.ko for the running guest kernel and insmod it;
    UserError naming the kernel and the cause when it cannot be."""
    release = target.run(["uname", "-r"]).stdout.strip()
    cached = cache_dir / f"jl_vgpio-{source_digest()}.ko"
    remote = f"{target.workdir}/vgpio"
    target.run(["rm", "-rf", "--", remote])
    if cached.is_file():
        target.run(["mkdir", "-p", "--", remote])
        target.put(cached, f"{remote}/jl_vgpio.ko")
    else:
        target.put(SOURCES, remote)
        built = target.run(["make", "-s", "-C", remote], timeout_s=BUILD_TIMEOUT_S)
        if not built.ok:
            raise UserError(f"{where}: cannot build the virtual GPIO chip for kernel {release}: "
                            f"{build_failure(built.stdout + built.stderr)}")
        partial = cached.with_name(cached.name + f".{os.getpid()}.part")
        target.get(f"{remote}/jl_vgpio.ko", partial)
        os.replace(partial, cached)
    loaded = target.run(["insmod", f"{remote}/jl_vgpio.ko", f"lines={LINES}"])
    if not loaded.ok:
        kernel = target.run(["sh", "-c", "dmesg | tail -n 2"]).stdout.strip().replace("\n", " | ")
        raise UserError(f"{where}: kernel {release} refused the virtual GPIO chip: "
                        f"{loaded.stderr.strip()} (kernel: {kernel})")


def build_failure(output: str) -> str:
    """What a failed kbuild says that matters: the compiler's or shell's complaint, not make's
    trailer, with the fix when it is known."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if any("pahole: not found" in line for line in lines):
        return "the kernel builds BTF for its modules and needs pahole (apt install dwarves on this machine)"
    telling = [line for line in lines if ("error" in line.lower() or "not found" in line)
               and not line.startswith(("make:", "make["))]
    return " | ".join((telling or lines)[-3:])[-400:] or "no output"
