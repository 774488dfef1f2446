"""The GPIO pins: SoC register maps (checked against a fake register file), chips as a target shows
them, and what sysfs, gpiod and gpiomem do and refuse on a target, hermetically."""

from __future__ import annotations

import struct
import subprocess
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.campaign.file import load_campaign
from jitterlab.execution.deploy import deploy
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins import chips
from jitterlab.measure.squarewave.pins.offers import (
    BoardLine,
    ChipLine,
    InstrumentInput,
    KernelLine,
    LevelPage,
    RegisterBlock,
    ValueFile,
)
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.socs import SOCS
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.local import LocalTarget

CHIPS = "gpiochip0\tpinctrl-bcm2711\t58\t512\ngpiochip1\traspberrypi-exp-gpio\t8\t570\n"


@pytest.mark.parametrize(
    ("soc", "line", "expected"),
    [  # (set, clr, lev, mask, dir_reg, dir_clear, dir_set)
        ("bcm2711", 17, (0x1C, 0x28, 0x34, 1 << 17, 0x04, 0b111 << 21, 0b001 << 21)),
        ("bcm2835", 4, (0x1C, 0x28, 0x34, 1 << 4, 0x00, 0b111 << 12, 0b001 << 12)),
        ("bcm2711", 40, (0x20, 0x2C, 0x38, 1 << 8, 0x10, 0b111, 0b001)),
        ("am335x", 60, (0x194, 0x190, 0x138, 1 << 28, 0x134, 1 << 28, 0)),  # gpio1_28, P9_12
    ],
)
def test_register_maps(soc, line, expected):
    r = SOCS[soc].registers(line)
    assert (r.set_reg, r.clr_reg, r.lev_reg, r.mask, r.dir_reg, r.dir_clear, r.dir_set) == expected
    assert r.base == (0x4804C000 if soc == "am335x" else 0)


def test_c_programs_drive_a_fake_register_file(tmp_path):
    """c-mmap and c-fifo write the direction once and the line's mask to set/clear: the bytes of a
    file standing in for the GPIO block tell exactly what they did."""
    bindir = deploy(LocalTarget(workdir=str(tmp_path / "w"))).bindir
    regs = SOCS["bcm2711"].registers(17)
    for impl in ("c-mmap", "c-fifo"):
        block = tmp_path / f"{impl}.regs"
        block.write_bytes(b"\xff" * 4 + b"\x00" * 4092)  # GPFSEL0 all ones: untouched by line 17
        flags = ["--period-ns", "2000000", "--duration-ns", "10000000", *regs.flags(str(block)),
                 "--log", str(tmp_path / f"{impl}.log"), "--allow-no-rt"]
        done = subprocess.run([f"{bindir}/c/{impl}", *flags], capture_output=True, text=True, timeout=30)
        assert done.returncode == 0, done.stderr
        words = block.read_bytes()
        fsel0, fsel1, gpset0, gpclr0 = (struct.unpack_from("<I", words, o)[0] for o in (0, 4, 0x1C, 0x28))
        assert fsel0 == 0xFFFFFFFF
        assert fsel1 == 0b001 << 21  # GPFSEL1: line 17 is an output
        assert gpset0 == gpclr0 == 1 << 17  # GPSET0 and GPCLR0 got the line's mask


def test_chips_as_the_target_lists_them():
    parsed = chips.parse_chips(CHIPS + "junk\n")
    assert [(c.name, c.label, c.lines, c.base, c.device) for c in parsed] == [
        ("gpiochip0", "pinctrl-bcm2711", 58, 512, "/dev/gpiochip0"),
        ("gpiochip1", "raspberrypi-exp-gpio", 8, 570, "/dev/gpiochip1")]
    target = FakeTarget()
    target.respond(["sh", "-c"], CHIPS)
    assert chips.find_chip(target, "pinctrl-bcm2711", 17, "pins.gpiod").name == "gpiochip0"
    assert chips.find_chip(target, "/dev/gpiochip1", 7, "pins.gpiod").label == "raspberrypi-exp-gpio"
    with pytest.raises(RunFailed, match=r"^pins.gpiod.chip: the target has no GPIO chip 'gpiochip9'; it has "
                                        r"gpiochip0 \[pinctrl-bcm2711\] \(58 lines\)"):
        chips.find_chip(target, "gpiochip9", 1, "pins.gpiod")
    with pytest.raises(RunFailed, match=r"^pins.gpiod.line: gpiochip1 \[raspberrypi-exp-gpio\] has "
                                        r"lines 0-7"):
        chips.find_chip(target, "gpiochip1", 8, "pins.gpiod")


def test_the_parts_of_one_run_read_the_chips_once_and_the_next_run_again():
    target = FakeTarget()
    target.respond(["sh", "-c"], CHIPS)
    run: dict[str, object] = {}
    assert chips.find_chip(target, "pinctrl-bcm2711", 17, "pins.gpiod", run).name == "gpiochip0"
    assert chips.find_chip(target, "gpiochip1", 7, "probes.gpio-loopback", run).lines == 8  # the probe
    assert chips.find_chip(target, "gpiochip1", 7, "pins.gpiod", {}).base == 570  # the next run
    assert len([c for c in target.calls if c[:2] == ("sh", "-c")]) == 2


def context(target, pin: str, options: dict, tmp_path: Path) -> RunContext:
    settings = RunSettings(options={"pins": {pin: options}})
    return RunContext(target, settings, squarewave_cell("c-file", pin=pin, probe="self"), 0, "/s",
                      tmp_path, "/b", Placement(None, None), True)


def test_sysfs_exports_the_chip_base_plus_line_and_unexports(tmp_path):
    from jitterlab.measure.squarewave.pins.sysfs import _EXPORT

    target = FakeTarget()
    target.respond(["sh", "-c"], CHIPS)
    exported = "/sys/class/gpio/gpio529/value\n"
    target.respond(["sh", "-c", _EXPORT], exported)
    pin = plugins.PINS.get("sysfs", "t")(context(target, "sysfs", {"chip": "pinctrl-bcm2711", "line": 17},
                                                  tmp_path))
    handle = pin.setup()
    assert handle.get(ValueFile).program_args == ("--pin", "/sys/class/gpio/gpio529/value")
    assert handle.get(KernelLine) is None, "the export holds the line: no kernel module may request it"
    assert handle.get(BoardLine) == BoardLine("pinctrl-bcm2711", 17)
    assert handle.get(LevelPage) is None and handle.get(InstrumentInput) is not None
    assert {type(o) for o in handle.offers} == set(type(pin).offers), "what the kind declares"
    assert target.calls[-1][-1] == "529"  # base 512 + line 17
    pin.teardown()
    assert target.calls[-1][-1] == "529" and "unexport" in target.calls[-1][2]
    pin.teardown()


@pytest.mark.parametrize(
    ("stderr", "expected"),
    [
        ("sh: 1: cannot create /sys/class/gpio/export: Permission denied", "not permitted .*gpio group"),
        ("gpio529 is already exported: Device or resource busy", "busy .*gpioinfo"),
        ("echo: write error: Invalid argument", "refused .*belong to a driver"),
    ],
)
def test_sysfs_refusals_say_the_fix(tmp_path, stderr, expected):
    from jitterlab.measure.squarewave.pins.sysfs import _EXPORT, _UNEXPORT

    target = FakeTarget()
    target.respond(["sh", "-c"], CHIPS)
    target.respond(["sh", "-c", _EXPORT], response=Completed((), 5, "", stderr))
    pin = plugins.PINS.get("sysfs", "t")(context(target, "sysfs", {"line": 17}, tmp_path))
    with pytest.raises(RunFailed, match=f"^pins.sysfs: exporting gpio529 .*{expected}") as err:
        pin.setup()
    assert err.value.status == "unavailable"
    pin.teardown()  # nothing was left exported (the script unexports a refused line): nothing to undo
    assert not any(_UNEXPORT in c for c in target.calls)


def test_gpiod_hands_the_program_chip_and_line_and_refuses_a_used_line(tmp_path):
    from jitterlab.measure.squarewave.pins.gpiod import _CHECK

    target = FakeTarget()
    target.respond(["sh", "-c"], CHIPS)
    target.respond(["sh", "-c", _CHECK], "")
    options = {"chip": "gpiochip0", "line": 17}
    pin = plugins.PINS.get("gpiod", "t")(context(target, "gpiod", options, tmp_path))
    handle = pin.setup()
    assert handle.get(ChipLine).program_args == ("--chip", "/dev/gpiochip0", "--line", "17")
    assert handle.get(ValueFile) is None and handle.get(KernelLine).line == 17
    # before setup its options say the line, not yet the chip's label
    assert type(pin).declare(pin.ctx.settings).offers == (BoardLine(line=17),)
    assert handle.get(BoardLine) == BoardLine("pinctrl-bcm2711", 17)
    assert {type(o) for o in handle.offers} == set(type(pin).offers), "what the kind declares"
    target.respond(["sh", "-c", _CHECK], response=Completed(
        (), 4, "", 'line 17: "GPIO17" "sysfs" output active-high [used]: Device or resource busy'))
    with pytest.raises(RunFailed, match=r"pins.gpiod: /dev/gpiochip0 line 17: busy"):
        pin.setup()


def test_gpiomem_passes_the_register_layout(tmp_path):
    target = FakeTarget()
    target.respond(["sh", "-c"], "")
    options = {"soc": "am335x", "line": 60}
    pin = plugins.PINS.get("gpiomem", "t")(context(target, "gpiomem", options, tmp_path))
    handle = pin.setup()
    assert {type(o) for o in handle.offers} == set(type(pin).offers), "what the kind declares"
    # the line as the register map numbers it; its chip and offset are not known to this pin
    assert handle.get(BoardLine) == BoardLine(soc=SOCS["am335x"], soc_line=60)
    assert handle.get(KernelLine) is None
    assert handle == type(pin).declare(pin.ctx.settings), "what the options declare, before any setup"
    args = handle.get(RegisterBlock).program_args
    assert args[:4] == ("--gpiomem", "/dev/mem", "--map-base", "0x4804c000")
    assert args[args.index("--mask") + 1] == hex(1 << 28)


CAMPAIGN = """
[campaign]
name = "gpio"
[matrix]
impl = "{impl}"
period = "10ms"
probe = "self"
pin = "{pin}"
"""


@pytest.mark.parametrize(
    ("impl", "pin", "tables", "expected"),
    [
        ("c-mmap", "gpiomem", "", r"c.toml: pins.gpiomem.soc: missing; this pin needs it"),
        ("c-mmap", "gpiomem", '[pins.gpiomem]\nsoc = "bcm2835"\nline = 60\n',
         r"c.toml: pins.gpiomem.line: bcm2835 has lines 0-53, not 60"),
        ("c-fifo", "gpiod", "[pins.gpiod]\nline = 3\n",
         r"c.toml: matrix.pin: impl 'c-fifo' cannot drive pin 'gpiod'"),
        ("c-gpiod", "vpin", "", r"c.toml: matrix.pin: impl 'c-gpiod' cannot drive pin 'vpin'"),
        ("python", "sysfs", "[pins.sysfs]\nline = -1\n", r"c.toml: pins.sysfs.line: -1 is out of range"),
        ("python", "gpiod", "", r"c.toml: pins.gpiod.line: missing"),
    ],
)
def test_pin_configuration_errors(tmp_path, impl, pin, tables, expected):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(impl=impl, pin=pin) + tables)
    with pytest.raises(UserError, match=f"^{tmp_path}/{expected}"):
        load_campaign(path)
