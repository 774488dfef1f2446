"""ARM kernels as qemu takes them: an arm64 Image (also gzip-compressed or in an EFI zboot file)
or a 32-bit ARM zImage.

The release is the banner "Linux version <release> (...)" the kernel prints first. An arm64 Image
holds it as it is; a gzip file or an EFI zboot file (a PE file with "zimg" at offset 4) holds a
compressed Image; a zImage holds a small decompressor and, somewhere after it, the compressed
kernel (gzip, xz, lzma, lzo, lz4 or zstd, as the kernel was configured), whose start is found by
its magic bytes and which is decompressed only as far as the banner.
"""

from __future__ import annotations

import lzma
import os
import re
import shutil
import struct
import subprocess
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.initrd import unzstd
from jitterlab.targets.qemu.machines.profile import KernelImage

ARM64_MAGIC = b"ARMd"  # at offset 56 of an arm64 Image
ZIMAGE_MAGIC = 0x016F2818  # at offset 0x24 of a zImage, little-endian
_BANNER = re.compile(rb"Linux version (\d[!-~]{0,100}) \(")
_BANNER_MAX = 128
CHUNK = 1 << 16
# where a compressed stream may start in a zImage: magic bytes -> format
STREAMS = {
    b"\x1f\x8b\x08": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"\x5d\x00\x00": "lzma",  # lzma-alone: properties 0x5d, then a little-endian dictionary size
    b"\x89LZO\x00\r\n\x1a\n": "lzo",
    b"\x02\x21\x4c\x18": "lz4",  # the kernel's legacy lz4 frame
    b"\x28\xb5\x2f\xfd": "zstd",
}
_TOOLS = {"lzo": ("lzop", "lzop"), "lz4": ("lz4", "lz4"), "zstd": ("zstd", "zstd")}


class ArmImage(KernelImage):
    label = "an ARM64 Image or ARM zImage"
    mismatch = "an ARM64 Image or ARM zImage (no \"ARMd\" or zImage magic)"

    def release(self, path: Path) -> str | None:
        return kernel_release(path)

    def bootable(self, vmlinuz: Path, config: Path, entry: Path) -> Path:
        # qemu takes an Image, a gzip-compressed Image and a zImage; an EFI zboot file only from
        # qemu 8, so its Image is unpacked once into the cache
        with open(vmlinuz, "rb") as f:
            head = f.read(64)
        if not _is_zboot(head):
            return vmlinuz
        image = entry / "Image"
        if not image.exists():
            data = _zboot_payload(vmlinuz.read_bytes())
            if data is None:
                raise UserError(f"{vmlinuz}: an EFI zboot kernel whose Image cannot be unpacked here")
            partial = image.with_name(image.name + ".part")
            partial.write_bytes(data)
            os.replace(partial, image)
        return image


def kernel_release(path: Path) -> str | None:
    """The release (`uname -r`) an ARM kernel file says it is; None if it is no ARM kernel."""
    with open(path, "rb") as f:
        head = f.read(64)
    if head[56:60] == ARM64_MAGIC:
        return _banner_release(_chunks_of_file(path))
    if len(head) >= 0x28 and struct.unpack_from("<I", head, 0x24)[0] == ZIMAGE_MAGIC:
        return _zimage_release(path.read_bytes())
    if head.startswith(b"\x1f\x8b"):
        chunks = _decompressed(path.read_bytes(), "gzip")
        first = next(chunks, b"")
        if first[56:60] != ARM64_MAGIC:
            return None
        return _banner_release(_prepend(first, chunks))
    if _is_zboot(head):
        image = _zboot_payload(path.read_bytes())
        return _banner_release(iter([image])) if image and image[56:60] == ARM64_MAGIC else None
    return None


def _is_zboot(head: bytes) -> bool:
    return head[:2] == b"MZ" and head[4:8] == b"zimg"


def _zboot_payload(data: bytes) -> bytes | None:
    """The Image inside an EFI zboot file (header: "zimg", payload offset and size, the compression)."""
    offset, size = struct.unpack_from("<II", data, 8)
    kind = data[24:32].split(b"\0", 1)[0].decode(errors="replace")
    payload = data[offset : offset + size]
    if kind not in ("gzip", "xz", "lzma", "lzo", "lz4", "zstd"):
        return None
    try:
        return b"".join(_decompressed(payload, kind))
    except (OSError, EOFError, lzma.LZMAError, zlib.error):
        return None


def _zimage_release(data: bytes) -> str | None:
    """Try every place a compressed stream may start, in file order, until one holds the banner."""
    starts = sorted((i, kind) for magic, kind in STREAMS.items() for i in _find_all(data, magic))
    view = memoryview(data)  # no copy of the file per place tried
    for start, kind in starts:
        try:
            release = _banner_release(_decompressed(view[start:], kind))
        except (OSError, EOFError, lzma.LZMAError, zlib.error, UserError):
            continue
        if release is not None:
            return release
    return None


def _find_all(data: bytes, magic: bytes) -> Iterator[int]:
    i = data.find(magic)
    while i >= 0:
        yield i
        i = data.find(magic, i + 1)


def _decompressed(payload: bytes | memoryview, kind: str) -> Iterator[bytes]:
    """The decompressed bytes of the stream at the start of `payload`, a chunk at a time."""
    if kind in ("gzip", "xz", "lzma"):
        new: Callable[[], object] = {
            "gzip": lambda: zlib.decompressobj(wbits=31),
            "xz": lambda: lzma.LZMADecompressor(lzma.FORMAT_XZ),
            "lzma": lambda: lzma.LZMADecompressor(lzma.FORMAT_ALONE),
        }[kind]
        d = new()
        for i in range(0, len(payload), CHUNK):
            out = d.decompress(payload[i : i + CHUNK])  # type: ignore[attr-defined]
            if out:
                yield out
            if getattr(d, "eof", False):
                return
        return
    if kind == "zstd":
        yield unzstd(bytes(payload), "the kernel")
        return
    tool, package = _TOOLS[kind]
    program = shutil.which(tool)
    if program is None:
        raise UserError(f"the kernel is {kind}-compressed; install {tool} here (apt install {package})")
    # what follows the stream in a zImage makes the tool exit non-zero after writing it all
    done = subprocess.run([program, "-dc"], input=bytes(payload), capture_output=True)
    yield done.stdout


def _chunks_of_file(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            yield chunk


def _prepend(first: bytes, rest: Iterator[bytes]) -> Iterator[bytes]:
    yield first
    yield from rest


def _banner_release(chunks: Iterator[bytes]) -> str | None:
    """The release in the first "Linux version <release> (" (not a format string), across chunks."""
    tail = b""
    for chunk in chunks:
        window = tail + chunk
        found = _BANNER.search(window)
        if found:
            return found[1].decode()
        tail = window[-_BANNER_MAX:]
    return None
