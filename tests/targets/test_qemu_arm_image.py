"""ARM kernel files: the release read from an arm64 Image (plain, gzip, EFI zboot) and from a zImage's
compressed payload, on tiny synthetic files with known answers (and Debian's arm64 kernel when present)."""

from __future__ import annotations

import gzip
import lzma
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from jitterlab.targets.qemu.machines.arm_image import ArmImage

RELEASE = "6.1.0-56-armmp"
BANNER = f"Linux version {RELEASE} (debian-kernel@lists.debian.org) (gcc-12) #1 SMP Debian\n".encode()
DEBIAN_ARM64 = Path("/tmp/karm/tree/boot/vmlinuz-6.1.0-56-arm64")


def _arm64_image(body: bytes) -> bytes:
    head = bytearray(64)
    head[56:60] = b"ARMd"
    return bytes(head) + body


def _zimage(payload: bytes) -> bytes:
    """A zImage: its magic, a decompressor with bytes that look like stream starts, the payload."""
    head = bytearray(0x30)
    struct.pack_into("<I", head, 0x24, 0x016F2818)
    decompressor = b"\x00" * 100 + b"\x1f\x8b\x08 not a stream" + b"\x5d\x00\x00\x80 nor this" + b"\x00" * 100
    return bytes(head) + decompressor + payload + b"\x00" * 16  # the payload's size follows it


def _kernel_body() -> bytes:
    # a format string before the banner: "Linux version " then no release
    return b"\x00" * 5000 + b"%s Linux version \x00" + b"\x01" * 3000 + BANNER + b"\x00" * 5000


def _write(tmp_path: Path, data: bytes, name: str = "vmlinuz") -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_an_arm64_image_says_its_release_and_is_booted_as_it_is(tmp_path):
    path = _write(tmp_path, _arm64_image(_kernel_body()))
    assert ArmImage().release(path) == RELEASE
    assert ArmImage().bootable(path, tmp_path / "config", tmp_path) == path
    # the banner across the boundary of two reads
    split = _write(tmp_path, _arm64_image(b"\x00" * ((1 << 20) - 64 - 20) + BANNER), "split")
    assert ArmImage().release(split) == RELEASE
    gz = _write(tmp_path, gzip.compress(_arm64_image(_kernel_body())), "vmlinuz.gz")
    assert ArmImage().release(gz) == RELEASE
    assert ArmImage().bootable(gz, tmp_path / "config", tmp_path) == gz  # qemu unpacks gzip itself


def test_an_efi_zboot_image_is_unpacked_once_for_qemu(tmp_path):
    image = _arm64_image(_kernel_body())
    payload = gzip.compress(image)
    head = bytearray(b"MZ\0\0zimg" + struct.pack("<II", 64, len(payload)) + b"\0" * 8 + b"gzip\0")
    head += b"\0" * (64 - len(head))
    path = _write(tmp_path, bytes(head) + payload + b"\0" * 32)
    assert ArmImage().release(path) == RELEASE
    entry = tmp_path / "entry"
    entry.mkdir()
    booted = ArmImage().bootable(path, entry / "config", entry)
    assert booted == entry / "Image" and booted.read_bytes() == image


@pytest.mark.parametrize("kind", ["gzip", "xz", "lzma", "zstd", "lzo"])
def test_a_zimage_release_is_read_from_its_compressed_payload(tmp_path, kind):
    body = _kernel_body()
    if kind == "gzip":
        payload = gzip.compress(body)
    elif kind == "xz":
        payload = lzma.compress(body, format=lzma.FORMAT_XZ, check=lzma.CHECK_CRC32)
    elif kind == "lzma":
        payload = lzma.compress(body, format=lzma.FORMAT_ALONE)
    else:
        tool = {"zstd": "zstd", "lzo": "lzop"}[kind]
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")
        payload = subprocess.run([tool, "-c"], input=body, capture_output=True, check=True).stdout
    path = _write(tmp_path, _zimage(payload))
    assert ArmImage().release(path) == RELEASE
    assert ArmImage().bootable(path, tmp_path / "config", tmp_path) == path


def test_other_files_are_not_arm_kernels(tmp_path):
    bzimage = bytearray(0x400)
    bzimage[0:2] = b"MZ"
    bzimage[0x202:0x206] = b"HdrS"
    for data in (bytes(bzimage) + BANNER, b"text " + BANNER, b"", gzip.compress(b"x" * 100 + BANNER),
                 _zimage(b"no stream here " + BANNER)):
        assert ArmImage().release(_write(tmp_path, data)) is None
    assert "ARM64 Image" in ArmImage.label and "zImage" in ArmImage.label


@pytest.mark.skipif(not DEBIAN_ARM64.is_file(), reason="no Debian arm64 kernel unpacked at /tmp/karm")
def test_debians_arm64_kernel_says_its_release():
    assert ArmImage().release(DEBIAN_ARM64) == "6.1.0-56-arm64"
