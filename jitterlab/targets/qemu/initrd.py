"""What a qemu target boots besides the kernel: the initramfs.

The initramfs holds a small static init (init.c, compiled here once per source version and
compiler) and the modules a Debian kernel keeps outside itself but the boot needs (the machine
profile's: 9p, virtio, overlayfs), with everything they depend on, in load order. It is written as
a newc cpio archive by this module, so no root privilege and no cpio tool is needed.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.machines.profile import Build

INIT_SOURCE = Path(__file__).with_name("init.c")
_CFLAGS = ["-static", "-Os", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]


# --- the init program --------------------------------------------------------------------------


def init_program(cache: Path, build: Build) -> Path:
    """The static init, compiled on this machine with the profile's init_cc into `cache` (once per
    source version and compiler)."""
    source = INIT_SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join([build.init_cc, *_CFLAGS]).encode()).hexdigest()[:12]
    binary = cache / f"init-{digest}"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    gcc = shutil.which(build.init_cc)
    if gcc is None:
        raise UserError(f"a qemu target needs {build.init_cc} on this machine to build its guest's init "
                        f"(apt install {build.init_cc_package})")
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        built = subprocess.run(
            [gcc, *_CFLAGS, "-o", f"{tmp}/init", str(INIT_SOURCE)],
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
        )
        if built.returncode != 0:
            last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(
                f"building the qemu guest's init with {build.init_cc} -static failed: {last}; a static "
                f"build needs the C library's static archive (apt install {build.libc_package})"
            )
        os.replace(f"{tmp}/init", binary)
    return binary


# --- modules -----------------------------------------------------------------------------------


def module_closure(modules_dir: Path, wanted: tuple[str, ...]) -> list[Path]:
    """The module files to load, dependencies first, for `wanted` (module names as in lsmod).

    Names built into the kernel (modules.builtin) or absent from it are skipped: a kernel built
    with 9p and virtio inside needs no modules. Reads the modules.dep depmod wrote.
    """
    dep_file = modules_dir / "modules.dep"
    if not dep_file.exists():
        return []
    deps: dict[str, list[str]] = {}
    by_name: dict[str, str] = {}
    for line in dep_file.read_text().splitlines():
        path, _, rest = line.partition(":")
        deps[path] = rest.split()
        by_name[_module_name(path)] = path
    order: list[str] = []

    def visit(path: str) -> None:
        if path in order:
            return
        for dep in deps.get(path, []):
            visit(dep)
        order.append(path)

    for name in wanted:
        path = by_name.get(name.replace("-", "_"))
        if path is not None:
            visit(path)
    return [modules_dir / path for path in order]


def _module_name(path: str) -> str:
    name = path.rsplit("/", 1)[-1]
    for suffix in (".xz", ".zst", ".gz"):
        name = name.removesuffix(suffix)
    return name.removesuffix(".ko").replace("-", "_")


def _module_bytes(path: Path) -> bytes:
    """The module's ELF: the init loads it with finit_module, which wants it uncompressed."""
    data = path.read_bytes()
    if path.name.endswith(".xz"):
        return lzma.decompress(data)
    if path.name.endswith(".gz"):
        return gzip.decompress(data)
    if path.name.endswith(".zst"):
        return unzstd(data, path.name)
    return data


# --- the archive -------------------------------------------------------------------------------


def _cpio_entry(name: str, mode: int, data: bytes = b"", rdev: tuple[int, int] = (0, 0)) -> bytes:
    name_bytes = name.encode() + b"\0"
    fields = (0, mode, 0, 0, 1, 0, len(data), 0, 0, rdev[0], rdev[1], len(name_bytes), 0)
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    pad = lambda n: b"\0" * (-n % 4)  # noqa: E731
    return header + name_bytes + pad(len(header) + len(name_bytes)) + data + pad(len(data))


def write_initrd(path: Path, init: Path, modules: list[Path]) -> None:
    """A newc cpio archive: /init, /dev/console (the init's stdio), /modules/NN-name.ko."""
    parts = [_cpio_entry(d, 0o40755) for d in ("dev", "proc", "sys", "modules")]
    parts.append(_cpio_entry("dev/console", 0o20600, rdev=(5, 1)))
    parts.append(_cpio_entry("init", 0o100755, init.read_bytes()))
    for i, module in enumerate(modules):
        name = f"modules/{i:02d}-{_module_name(module.name)}.ko"
        parts.append(_cpio_entry(name, 0o100644, _module_bytes(module)))
    parts.append(_cpio_entry("TRAILER!!!", 0))
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(b"".join(parts))
    os.replace(partial, path)


def unzstd(data: bytes, name: str) -> bytes:
    """`data` decompressed with the zstd tool (modules and kernels may be zstd-compressed)."""
    zstd = shutil.which("zstd")
    if zstd is None:
        raise UserError(f"{name} is zstd-compressed; install zstd on this machine (apt install zstd)")
    done = subprocess.run([zstd, "-dcq"], input=data, capture_output=True)
    if done.returncode != 0 and not done.stdout:
        raise UserError(f"{name}: zstd cannot decompress it: {done.stderr.decode(errors='replace')[-200:]}")
    return done.stdout


def with_files(base: Path, directory: Path, prefix: str, out: Path) -> None:
    """`out`: the initramfs `base` followed by a second archive holding the files of `directory`
    under /`prefix` (private to root). The kernel unpacks concatenated archives in order, so a
    per-boot file (an SSH key) joins the cached initramfs without rewriting it."""
    parts = [_cpio_entry(prefix, 0o40700)]
    for path in sorted(directory.iterdir()):
        if path.is_file():
            parts.append(_cpio_entry(f"{prefix}/{path.name}", 0o100600, path.read_bytes()))
    parts.append(_cpio_entry("TRAILER!!!", 0))
    out.write_bytes(base.read_bytes() + b"".join(parts))
