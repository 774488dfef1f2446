"""The gpiomem maps of real register blocks (PL061, i.MX6, BCM283x through /dev/mem): c-mmap and
c-fifo run against a sparse file standing in for /dev/mem, mapped at the block's physical address,
and the file's bytes tell exactly what they wrote and where."""

from __future__ import annotations

import fcntl
import os
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from jitterlab import plugins, programs
from jitterlab.campaign.file import load_campaign
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.offers import RegisterBlock
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.socs import SOCS, Registers
from jitterlab.targets.fake import FakeTarget

IMPLS = ("c-mmap", "c-fifo")


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> str:
    """c-mmap and c-fifo built from a copy of the programs' sources, as a target builds them."""
    top = tmp_path_factory.mktemp("bin")
    shutil.copytree(Path(programs.__file__).parent / "c", top / "c")
    subprocess.run(["make", "-s", "-C", str(top / "c"), *IMPLS], check=True, capture_output=True, timeout=120)
    return str(top)


def toggle(bindir: str, impl: str, regs: Registers, mem: Path,
           page: bytes) -> tuple[bytes, subprocess.CompletedProcess]:
    """Run `impl` on a sparse file whose page at the block's physical base is `page`; return that
    page afterwards. The file is sparse: only the block's page takes space."""
    with mem.open("wb") as f:
        f.truncate(regs.base + regs.length)
        f.seek(regs.base)
        f.write(page)
    flags = ["--period-ns", "2000000", "--duration-ns", "10000000", *regs.flags(str(mem)),
             "--log", f"{mem}.log", "--allow-no-rt"]
    done = subprocess.run([f"{bindir}/c/{impl}", *flags], capture_output=True, text=True, timeout=30)
    with mem.open("rb") as f:
        f.seek(regs.base)
        return f.read(regs.length), done


def word(page: bytes, offset: int) -> int:
    return struct.unpack_from("<I", page, offset)[0]


def changed(before: bytes, after: bytes) -> dict[int, int]:
    """The 32-bit words that differ: offset -> new value."""
    return {o: word(after, o) for o in range(0, len(before), 4) if word(before, o) != word(after, o)}


@pytest.mark.parametrize("impl", IMPLS)
def test_pl061_writes_only_at_the_masked_address(bindir, tmp_path, impl):
    """PL061 line 2: GPIODIR (0x400) gets bit 2, GPIODATA is written only at 0x000 + (0x04 << 2),
    the address whose bits [9:2] mask line 2 alone; the wave ends low (0 written there)."""
    regs = SOCS["pl061"].registers(2)
    assert (regs.device, regs.base, regs.set_reg, regs.clr_reg, regs.write) == (
        "/dev/mem", 0x09030000, 0x010, 0x010, "masked")
    before = b"\xaa" * 4096
    after, done = toggle(bindir, impl, regs, tmp_path / "mem", before)
    assert done.returncode == 0, done.stderr
    assert changed(before, after) == {0x010: 0, 0x400: 0xAAAAAAAA | 0x04}


@pytest.mark.parametrize("impl", IMPLS)
def test_imx6_sets_gdir_and_toggles_the_dr_bit_only(bindir, tmp_path, impl):
    """GPIO2_IO02 (line 34): bank 2 at 0x020A0000; GDIR (0x04) gets bit 2, DR (0x00) is
    read-modify-written (the other bits kept, bit 2 ends cleared), PSR (0x08) untouched."""
    regs = SOCS["imx6"].registers(34)
    assert (regs.base, regs.set_reg, regs.lev_reg, regs.dir_reg, regs.mask, regs.write) == (
        0x020A0000, 0x00, 0x00, 0x04, 1 << 2, "rmw")
    before = struct.pack("<III", 0x55555555, 0x00000000, 0x12345678) + b"\x00" * 4084
    after, done = toggle(bindir, impl, regs, tmp_path / "mem", before)
    assert done.returncode == 0, done.stderr
    assert changed(before, after) == {0x00: 0x55555551, 0x04: 0x00000004}


@pytest.mark.parametrize(("soc", "line", "base"), [("imx6", 0, 0x0209C000), ("imx6", 223, 0x020B4000),
                                                   ("pl061", 7, 0x09030000)])
def test_bank_bases(soc, line, base):
    assert SOCS[soc].registers(line).base == base


@pytest.mark.parametrize(("soc", "base"), [("bcm2835", 0x20200000), ("bcm2837", 0x3F200000),
                                           ("bcm2711", 0xFE200000)])
def test_bcm_maps_offset_0_of_gpiomem_and_the_physical_base_of_dev_mem(soc, base):
    assert SOCS[soc].registers(17).base == 0  # the SoC's default device is /dev/gpiomem
    assert SOCS[soc].registers(17, "/dev/gpiomem").base == 0
    assert SOCS[soc].registers(17, "/dev/mem").base == base


def test_bcm_through_dev_mem_toggles_at_the_physical_base(bindir, tmp_path):
    regs = SOCS["bcm2837"].registers(17, "/dev/mem")
    before = b"\x00" * 4096
    after, done = toggle(bindir, "c-mmap", regs, tmp_path / "mem", before)
    assert done.returncode == 0, done.stderr
    assert changed(before, after) == {0x04: 0b001 << 21, 0x1C: 1 << 17, 0x28: 1 << 17}


def context(target, options: dict, tmp_path: Path) -> RunContext:
    settings = RunSettings(options={"pins": {"gpiomem": options}})
    return RunContext(target, settings, squarewave_cell("c-mmap", pin="gpiomem", probe="self"), 0, "/s",
                      tmp_path, "/b", Placement(None, None), True)


def test_the_pin_passes_dev_mem_physical_base_for_bcm(tmp_path):
    target = FakeTarget()
    target.respond(["sh", "-c"], "")
    for device, base in (("/dev/mem", "0x3f200000"), ("", "0x0")):
        options = {"soc": "bcm2837", "line": 17, "device": device}
        pin = plugins.PINS.get("gpiomem", "t")(context(target, options, tmp_path))
        args = pin.setup().get(RegisterBlock).program_args
        assert args[args.index("--map-base") + 1] == base
        assert args[args.index("--gpiomem") + 1] == (device or "/dev/gpiomem")


CAMPAIGN = """
[campaign]
name = "gpio"
[matrix]
impl = "c-mmap"
period = "10ms"
probe = "self"
pin = "gpiomem"
[pins.gpiomem]
soc = "{soc}"
line = {line}
"""


def test_pl061_line_3_is_refused(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(soc="pl061", line=3))
    expected = (r"pins.gpiomem.line: pl061 line 3 belongs to gpio-keys \(qemu virt's power button\); "
                r"choose another line \(0, 1, 2, 4, 5, 6, 7\)$")
    with pytest.raises(UserError, match=rf"^{tmp_path}/c.toml: {expected}"):
        load_campaign(path)
    path.write_text(CAMPAIGN.format(soc="imx6", line=224))
    with pytest.raises(UserError, match=r"pins.gpiomem.line: 224 is out of range|imx6 has lines 0-223"):
        load_campaign(path)
    path.write_text(CAMPAIGN.format(soc="pl061", line=2))
    load_campaign(path)


@pytest.mark.parametrize("impl", IMPLS)
def test_a_refused_dev_mem_mapping_names_iomem_relaxed(bindir, impl):
    """A write-sealed memfd refuses a writable shared mapping with EPERM, as a STRICT_DEVMEM
    kernel's /dev/mem does for a driver's registers."""
    fd = os.memfd_create("regs", os.MFD_ALLOW_SEALING)
    try:
        os.ftruncate(fd, 4096)
        fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_WRITE | fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW)
        regs = SOCS["pl061"].registers(2)
        flags = [*regs.flags(f"/proc/{os.getpid()}/fd/{fd}"), "--map-base", "0"]
        argv = [f"{bindir}/c/{impl}", "--period-ns", "2000000", "--duration-ns", "0", *flags,
                "--log", "/dev/null", "--allow-no-rt"]
        done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    finally:
        os.close(fd)
    assert done.returncode == 69, done.stderr
    assert done.stderr.splitlines()[-1].endswith(
        "at 0x0: Operation not permitted; the kernel restricts /dev/mem (STRICT_DEVMEM): "
        "boot it with iomem=relaxed on its command line")
