"""An x86 kernel as qemu takes it: the ELF inside a bzImage when it has a PVH entry, else the bzImage.

A Debian bzImage holds an xz-compressed ELF kernel; a kernel built with CONFIG_PVH boots from
that ELF directly (qemu's PVH entry), skipping the real-mode setup and the decompressor, which
under TCG emulation saves several seconds per boot.
"""

from __future__ import annotations

import lzma
import os
import struct
import zlib
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.initrd import unzstd
from jitterlab.targets.qemu.machines.profile import KernelImage


class BzImage(KernelImage):
    label = "bzImage"
    mismatch = "an x86 bzImage (no setup header)"

    def __init__(self, *, pvh: bool) -> None:
        self.pvh = pvh  # boot the ELF inside when the kernel has a PVH entry

    def release(self, path: Path) -> str | None:
        return kernel_release(path)

    def bootable(self, vmlinuz: Path, config: Path, entry: Path) -> Path:
        elf = entry / "vmlinux"
        if not self.pvh or not config.is_file():
            return vmlinuz
        if "CONFIG_PVH=y" not in config.read_text(errors="replace").splitlines():
            return vmlinuz
        return elf if elf.exists() or extract_elf(vmlinuz, elf) else vmlinuz


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
            elf = unzstd(payload, bzimage.name)
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
