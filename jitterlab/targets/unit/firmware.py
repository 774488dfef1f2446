"""A unit's firmware, built on the controller (this machine) with Debian's gcc-arm-none-eabi, once
per source version, and what it weighs: flash = text + data, RAM = data + bss (the sections the ELF
allocates, as `size` counts them), and its SHA-256.

Built into a directory of its own that is renamed into place when done, under the per-user cache
($XDG_CACHE_HOME/jitterlab/firmware), named by a hash of the sources and the compiler's version, so
an unchanged firmware is neither rebuilt nor told apart from the one a run loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import struct
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jitterlab.cache import user_cache
from jitterlab.model.errors import RunFailed
from jitterlab.programs.unit import SOURCES, TOOLCHAIN, UnitProfile

BUILD_TIMEOUT_S = 120.0
SHF_WRITE, SHF_ALLOC, SHT_NOBITS = 0x1, 0x2, 8


@dataclass(frozen=True)
class Firmware:
    """A built firmware: the ELF on the controller and what it needs of the unit's memory."""

    path: Path
    sha256: str
    text_bytes: int  # code and constants
    data_bytes: int  # initialized variables (in flash, copied to RAM)
    bss_bytes: int  # zeroed variables

    @property
    def flash_bytes(self) -> int:
        return self.text_bytes + self.data_bytes

    @property
    def ram_bytes(self) -> int:
        return self.data_bytes + self.bss_bytes

    def facts(self) -> dict[str, object]:
        return {"unit_firmware_sha256": self.sha256, "unit_flash_bytes": self.flash_bytes,
                "unit_ram_bytes": self.ram_bytes}


class Built:
    """The firmware of a profile, built the first time it is asked for; a failure is kept (the
    sources do not change while jitterlab runs) and told again to every run that asks."""

    def __init__(self, profile: UnitProfile) -> None:
        self.profile = profile
        self._firmware: Firmware | None = None
        self._error: RunFailed | None = None

    def get(self) -> Firmware:
        if self._firmware is None and self._error is None:
            try:
                self._firmware = build(self.profile)
            except RunFailed as exc:
                self._error = exc
        if self._error is not None:
            raise RunFailed(self._error.reason, status=self._error.status)
        assert self._firmware is not None
        return self._firmware

    def facts(self) -> dict[str, object]:
        """Its hash and sizes, or why it did not build (unit_firmware_error)."""
        try:
            return self.get().facts()
        except RunFailed as exc:
            return {"unit_firmware_error": exc.reason}


def cache_dir() -> Path:
    return user_cache() / "firmware"


def build(profile: UnitProfile, cache: Path | None = None) -> Firmware:
    """The firmware of `profile`, built here unless it is in the cache; RunFailed (unavailable when
    the toolchain is missing) with the compiler's first error otherwise."""
    compiler, package = TOOLCHAIN
    if shutil.which(compiler) is None or shutil.which("make") is None:
        missing = compiler if shutil.which("make") else "make"
        raise RunFailed(f"the unit's firmware is built on this machine, which lacks {missing}: apt install "
                        f"{package if missing == compiler else 'make'}", status="unavailable")
    place = (cache or cache_dir()) / f"{profile.name}-{_sources_hash(compiler)}"
    elf = place / f"{profile.name}.elf"
    if not elf.is_file():
        place.parent.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(prefix=f".{profile.name}-", dir=place.parent))
        try:
            _make(profile, work)
            with contextlib.suppress(OSError):  # another jitterlab built it meanwhile: that one serves
                work.rename(place)
        finally:
            shutil.rmtree(work, ignore_errors=True)
    return read(elf)


def read(elf: Path) -> Firmware:
    """The sizes and hash of a 32-bit little-endian ELF (what `size` calls text, data and bss)."""
    raw = elf.read_bytes()
    if raw[:6] != b"\x7fELF\x01\x01":
        raise RunFailed(f"{elf}: not a 32-bit little-endian ELF file")
    shoff, = struct.unpack_from("<I", raw, 0x20)
    shentsize, shnum = struct.unpack_from("<HH", raw, 0x2E)
    text = data = bss = 0
    for i in range(shnum):
        _name, kind, flags, _addr, _off, size = struct.unpack_from("<IIIIII", raw, shoff + i * shentsize)
        if not flags & SHF_ALLOC:
            continue
        if kind == SHT_NOBITS:
            bss += size
        elif flags & SHF_WRITE:
            data += size
        else:
            text += size
    return Firmware(elf, hashlib.sha256(raw).hexdigest(), text, data, bss)


def _make(profile: UnitProfile, out: Path) -> None:
    try:
        done = subprocess.run(["make", "-s", "-C", str(SOURCES), f"UNIT={profile.name}", f"OUT={out}"],
                              capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise RunFailed(f"building the firmware of unit {profile.name!r} took over {BUILD_TIMEOUT_S:g} s; "
                        "check arm-none-eabi-gcc on this machine") from None
    if done.returncode != 0 or not (out / f"{profile.name}.elf").is_file():
        raise RunFailed(f"the firmware of unit {profile.name!r} does not build here: "
                        f"{first_error(done.stderr + done.stdout)} (make -C {SOURCES} UNIT={profile.name})")


def first_error(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return next((line for line in lines if ": error:" in line or "error:" in line),
                lines[-1] if lines else "no output")


def _sources_hash(compiler: str) -> str:
    digest = hashlib.sha256()
    for path in sorted(SOURCES.iterdir()):
        if path.suffix in (".c", ".h", ".ld") or path.name == "Makefile":
            digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    version = subprocess.run([compiler, "-dumpfullversion"], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL).stdout.strip()
    digest.update(b"cc\0" + version.encode())
    return digest.hexdigest()[:12]
