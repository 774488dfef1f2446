"""What a qemu target boots besides the kernel: the initramfs, and the kernel in the fastest form.

The initramfs holds a small static init (init.c, compiled here once per source version) and
the modules a Debian kernel keeps outside itself but the boot needs (9p, virtio, overlayfs), with
everything they depend on, in load order. It is written as a newc cpio archive by this module,
so no root privilege and no cpio tool is needed.

A Debian bzImage holds an xz-compressed ELF kernel; a kernel built with CONFIG_PVH boots from
that ELF directly (qemu's PVH entry), skipping the real-mode setup and the decompressor, which
under TCG emulation saves several seconds per boot.
"""

from __future__ import annotations

import gzip
import hashlib
import lzma
import os
import shutil
import struct
import subprocess
import tempfile
import zlib
from pathlib import Path

from jitterlab.model.errors import UserError

INIT_SOURCE = Path(__file__).with_name("init.c")
# the boot needs these (and what they depend on): the 9p root, the overlay, the network
BOOT_MODULES = ("virtio_pci", "9pnet_virtio", "9p", "overlay", "virtio_net", "virtio_rng")
_CFLAGS = ["-static", "-Os", "-std=gnu11", "-Wall", "-Wextra", "-Werror"]


# --- the init program --------------------------------------------------------------------------


def init_program(cache: Path) -> Path:
    """The static init, compiled with this machine's gcc into `cache` (once per source version)."""
    source = INIT_SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join(_CFLAGS).encode()).hexdigest()[:12]
    binary = cache / f"init-{digest}"
    if binary.exists():
        return binary
    cache.mkdir(parents=True, exist_ok=True)
    gcc = shutil.which("gcc")
    if gcc is None:
        raise UserError("a qemu target needs gcc on this machine to build its guest's init (apt install gcc)")
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
                f"building the qemu guest's init with gcc -static failed: {last}; a static build needs "
                "the C library's static archive (apt install libc6-dev)"
            )
        os.replace(f"{tmp}/init", binary)
    return binary


# --- modules -----------------------------------------------------------------------------------


def module_closure(modules_dir: Path, wanted: tuple[str, ...] = BOOT_MODULES) -> list[Path]:
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
        return _zstd(data, path.name)
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


# --- the kernel image ----------------------------------------------------------------------------


def kernel_release(bzimage: Path) -> str | None:
    """The release (`uname -r`) a bzImage says it is, from its setup header; None if not one."""
    with open(bzimage, "rb") as f:
        head = f.read(0x8000)
    if len(head) < 0x210 or head[0x202:0x206] != b"HdrS":
        return None
    offset = struct.unpack_from("<H", head, 0x20E)[0] + 0x200
    version = head[offset : offset + 256].split(b"\0", 1)[0].decode(errors="replace")
    return version.split()[0] if version else None


def extract_elf(bzimage: Path, out: Path) -> bool:
    """Write the ELF kernel inside a bzImage to `out`; False when its payload cannot be unpacked."""
    data = bzimage.read_bytes()
    if len(data) < 0x250 or data[0x202:0x206] != b"HdrS":
        return False
    setup_sects = data[0x1F1] or 4
    payload_offset, payload_length = struct.unpack_from("<II", data, 0x248)
    start = (setup_sects + 1) * 512 + payload_offset
    payload = data[start : start + payload_length]
    try:
        if payload.startswith(b"\xfd7zXZ\0"):
            elf = lzma.LZMADecompressor().decompress(payload)
        elif payload.startswith(b"\x1f\x8b"):
            elf = zlib.decompressobj(wbits=31).decompress(payload)  # stops at the member's end
        elif payload.startswith(b"\x28\xb5\x2f\xfd"):
            elf = _zstd(payload, bzimage.name)
        else:
            return False
    except (lzma.LZMAError, zlib.error, UserError):
        return False
    if not elf.startswith(b"\x7fELF"):
        return False
    partial = out.with_name(out.name + ".part")
    partial.write_bytes(elf)
    os.replace(partial, out)
    return True


def _zstd(data: bytes, name: str) -> bytes:
    zstd = shutil.which("zstd")
    if zstd is None:
        raise UserError(f"{name} is zstd-compressed; install zstd on this machine (apt install zstd)")
    done = subprocess.run([zstd, "-dcq"], input=data, capture_output=True)
    if done.returncode != 0 and not done.stdout:
        raise UserError(f"{name}: zstd cannot decompress it: {done.stderr.decode(errors='replace')[-200:]}")
    return done.stdout
