"""The unit table of a [[target]] and the cells that use it, checked when the campaign is read: each
mistake is one line naming the key and the fix (exit 2), before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.campaign.file import parse_campaign
from jitterlab.model.errors import UserError
from jitterlab.targets.unit.target import read_unit

EMULATED = {"kind": "emulated", "profile": "lm3s6965evb"}
REMOTEPROC = {"kind": "remoteproc", "profile": "stm32mp1-m4"}


def campaign(unit: object = EMULATED, kind: str = "local", **matrix: object):
    target: dict[str, object] = {"name": "t", "kind": kind}
    if kind == "ssh":
        target["host"] = "board.example"
    if unit is not None:
        target["unit"] = unit
    return parse_campaign({
        "campaign": {"name": "u", "duration": "2s"},
        "target": [target],
        "matrix": {"benchmark": "squarewave", "impl": "unit", "pin": "unit", "probe": "emulator",
                   "period": "10ms", **matrix},
    }, Path("c.toml"))


def refused(**kwargs: object) -> str:
    with pytest.raises(UserError) as caught:
        campaign(**kwargs)
    message = str(caught.value)
    assert "\n" not in message and message.startswith("c.toml: ")
    return message


def test_a_unit_and_its_cells_are_accepted():
    c = campaign()
    assert [cell.param("impl") for cell in c.cells] == ["unit"]
    assert campaign(REMOTEPROC, kind="ssh", probe="sigrok").targets[0].options["unit"] == REMOTEPROC
    spec = read_unit({**REMOTEPROC, "replace": True}, "w", "ssh")
    assert spec is not None and (spec.core, spec.tty, spec.replace) == ("m4", "/dev/ttyRPMSG0", True)
    assert read_unit(None, "w", "local") is None


@pytest.mark.parametrize(("unit", "kind", "expected"), [
    ("mcu", "local", "c.toml: target[0].unit: expected a table, e.g. unit = {kind = \"emulated\", profile = "
                     "\"lm3s6965evb\"}, got 'mcu'"),
    ({"kind": "emulatd", "profile": "lm3s6965evb"}, "local", "target[0].unit.kind: expected "),
    ({"kind": "emulated", "profile": "lm3s6965"}, "local",
     "c.toml: target[0].unit.profile: unknown unit profile 'lm3s6965'; did you mean 'lm3s6965evb'? known: "
     "lm3s6965evb, stm32mp1-m4"),
    ({"kind": "emulated"}, "local", "target[0].unit.profile: missing; name the unit"),
    ({"kind": "serial", "profile": "stm32mp1-m4", "tty": "/dev/ttyACM0"}, "local",
     "c.toml: target[0].unit.kind: unit 'stm32mp1-m4' is loaded as \"remoteproc\", not 'serial'"),
    (REMOTEPROC, "local", None),
    ({"kind": "emulated", "profile": "lm3s6965evb", "core": "m4"}, "local",
     "c.toml: target[0].unit.core: not a key of a emulated unit; known: kind, profile, tty"),
    ({**EMULATED, "tty": "/dev/ttyS0"}, "local", "target[0].unit.tty: the emulated unit's line on this "
                                                 "machine is a pty jitterlab makes; remove tty"),
    (EMULATED, "ssh", "target[0].unit.kind: a emulated unit is reached from a target of kind \"local\" or "
                      "\"qemu\", not 'ssh'"),
    ({"kind": "serial", "profile": "lm3s6965evb"}, "local", "target[0].unit.tty: missing; give the MCU's "
                                                             "serial line"),
    ({"kind": "serial", "profile": "lm3s6965evb", "tty": "/tmp/x"}, "local",
     "target[0].unit.tty: expected a device under /dev"),
    ({"kind": "serial", "profile": "lm3s6965evb", "tty": "/dev/ttyACM0", "baud": 1234}, "local",
     "target[0].unit.baud: expected one of 9600"),
    ({"kind": "serial", "profile": "lm3s6965evb", "tty": "/dev/ttyACM0", "flash": ["lm4flash", "fw.elf"]},
     "local", "target[0].unit.flash: no word names the firmware; write {firmware} where its path goes"),
    ({**REMOTEPROC, "replace": "yes"}, "ssh", "target[0].unit.replace: expected true or false, got 'yes'"),
    ({**REMOTEPROC, "core": "m4; reboot"}, "ssh", "target[0].unit.core: expected the core's name"),
])
def test_a_bad_unit_table_is_one_line_naming_its_key(unit, kind, expected):
    if expected is None:  # a board's own core may be reached from jitterlab running on the board
        assert campaign(unit, kind=kind, probe="sigrok")
        return
    assert expected in refused(unit=unit, kind=kind)


@pytest.mark.parametrize(("matrix", "unit", "expected"), [
    ({"period": "10000040ns"}, EMULATED,
     "c.toml: matrix.period: unit 'lm3s6965evb' of target 't' cannot make a period of 10000040ns with its "
     "12.5 MHz timer (80 ns ticks): not a whole number of timer ticks; use a multiple of 160ns from "
     "100us on"),
    ({"period": "50us"}, EMULATED, "matrix.period: unit 'lm3s6965evb' of target 't' cannot make a period of "
                                   "50us with its 12.5 MHz timer (80 ns ticks): shorter than the unit keeps "
                                   "up with; use a multiple of 160ns from 100us on"),
    ({}, None, "c.toml: matrix.pin: pin 'unit' is a real-time unit's, and target 't' has none; give its "
               "[[target]] one, e.g. unit = {kind = \"emulated\", profile = \"lm3s6965evb\"}"),
    ({"probe": "sigrok"}, EMULATED, "c.toml: matrix.probe: probe 'sigrok' needs a signal an instrument's "
                                    "input is wired to, and the emulated unit of target 't' offers an output "
                                    "line whose levels an emulator traces; use probe = \"emulator\""),
    ({"probe": "emulator"}, REMOTEPROC, "matrix.probe: probe 'emulator' needs a board line that another GPIO "
                                        "input can be wired to or an output line whose levels an emulator "
                                        "traces, and the remoteproc unit of target 't' offers a signal an "
                                        "instrument's input is wired to; use probe = \"scpi\" or \"sigrok\""),
    ({"probe": "self"}, EMULATED, "c.toml: matrix.probe: probe 'self' cannot observe pin 'unit' for impl "
                                  "'unit': it reads the program's own timestamps"),
    ({"probe": "vpin"}, EMULATED, "c.toml: matrix.probe: probe 'vpin' cannot observe pin 'unit'"),
    ({"impl": "c-fifo"}, EMULATED, "c.toml: matrix.pin: impl 'c-fifo' cannot drive pin 'unit'"),
    ({"pin": "vpin", "probe": "vpin"}, EMULATED, "c.toml: matrix.pin: impl 'unit' cannot drive pin 'vpin'"),
])
def test_a_cell_its_unit_cannot_serve_is_refused_naming_the_key(matrix, unit, expected):
    kind = "ssh" if unit is REMOTEPROC else "local"
    assert expected in refused(unit=unit, kind=kind, **matrix)


def test_chatter_is_off_or_a_millisecond_or_more():
    def chatter(value: object):
        return parse_campaign({
            "campaign": {"name": "u", "duration": "2s"},
            "target": [{"name": "t", "kind": "local", "unit": EMULATED}],
            "matrix": {"benchmark": "squarewave", "impl": "unit", "pin": "unit", "probe": "emulator",
                       "period": "10ms"},
            "pins": {"unit": {"chatter": value}},
        }, Path("c.toml"))

    assert chatter("10ms").settings.options_of("pins", "unit") == {"chatter": 10_000_000}
    assert chatter("off").settings.options_of("pins", "unit") == {"chatter": 0}
    with pytest.raises(UserError, match=r"^c\.toml: pins\.unit\.chatter: 100us is out of range; give a "
                                        r"value >= 1ms$"):
        chatter("100us")
