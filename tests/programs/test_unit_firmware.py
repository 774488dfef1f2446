"""The unit firmware: its portable core's protocol, built for this machine with a stand-in unit
(host.c: commands on stdin, replies on stdout, the timer's interrupts when the test says so), the
profile's timer rule equal to the firmware's, and every unit's ELF built with -Werror, its size and
its symbols (no unit runs here but the emulated one)."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.programs.unit import PROFILES, SOURCES, TOOLCHAIN, UnitProfile, period_step_ns, timing
from jitterlab.targets.unit import firmware

NO_ARM = pytest.mark.skipif(shutil.which(TOOLCHAIN[0]) is None,
                            reason=f"{TOOLCHAIN[0]} is missing (apt install {TOOLCHAIN[1]})")
# (flash, RAM) bytes each unit has: the LM3S6965's flash and SRAM; the STM32MP15x M4's RETRAM and
# MCU SRAM1 for code, SRAM2 for data
CAPACITY = {"lm3s6965evb": (256 << 10, 64 << 10), "stm32mp1-m4": ((64 + 128) << 10, 128 << 10)}


def host_core(tmp: Path, header: str = "") -> Path:
    done = subprocess.run(["make", "-s", "-C", str(SOURCES), f"OUT={tmp}", "host-core",
                           *([f"UNIT_HEADER={header}"] if header else [])], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return tmp / "host-core"


def talk(core: Path, *lines: str) -> list[str]:
    """What the core answered to `lines` (its replies and the stand-in's '#' lines), line by line."""
    done = subprocess.run([str(core)], input="".join(f"{line}\n" for line in lines), capture_output=True,
                          text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> Path:
    return host_core(tmp_path_factory.mktemp("core"))


def test_ping_period_start_stop_and_the_edge_count(core):
    # the stand-in's defaults: a 12.5 MHz timer, at least 625 ticks between interrupts
    assert talk(core, "ping", "P 10000000", "start", "!tick 2", "stop", "ping", "!tick 1") == [
        "pong", "OK P 10000000", "# timer start reload=62500", "OK start", "# pin level=1 changes=3",
        "pong", "# timer stop", "# pin level=0 changes=4", "OK stop 4"], \
        "start is the first edge; stop ends the wave at its next fall, on its grid, and counts it"
    assert talk(core, "P 100000000", "start", "!tick 1", "stop", "!tick 1", "!tick 5") == [
        "OK P 100000000", "# timer start reload=625000", "OK start", "# pin level=0 changes=2",
        "# timer stop", "# pin level=0 changes=2", "OK stop 2", "# pin level=0 changes=2"], \
        "asked while low: the wave ends at the next boundary without an edge, and nothing after"


def test_the_timer_divides_a_half_period_longer_than_it_counts(core):
    # 10 s: 62,500,000 ticks a half period, over the 24-bit counter: 4 interrupts of 15,625,000
    assert talk(core, "P 10000000000", "start", "!tick 3", "!tick 1", "stop", "!tick 4") == [
        "OK P 10000000000", "# timer start reload=15625000", "OK start", "# pin level=1 changes=1",
        "# pin level=0 changes=2", "# timer stop", "# pin level=0 changes=2", "OK stop 2"]


def test_refusals_name_what_is_wrong(core):
    assert talk(core, "start", "P 1000", "P 1000000000170", "P 10000040", "P abc", "P 10000000", "start",
                "P 20000000", "start", "stop", "P 20000000", "!tick 1") == [
        "ERR start no period (send P first)",
        "ERR P 1000 shorter than the unit keeps up with",
        "ERR P 1000000000170 out of range (1 ns to 1000 s)",
        "ERR P 10000040 not a whole number of timer ticks",
        "ERR P expects a period in ns",
        "OK P 10000000", "# timer start reload=62500", "OK start",
        "ERR P running (stop first)", "ERR start running", "ERR P running (stop first)", "# timer stop",
        "# pin level=0 changes=2", "OK stop 2"]


def test_echo_unknown_commands_long_lines_and_resync(core):
    assert talk(core, "C 42", "C", "bogus", "x" * 80, "", "\rping\r") == [
        "C 42", "C", "ERR unknown command: bogus", "ERR line too long", "pong"], \
        "an empty line is a resync: no answer; a '\\r' is ignored"
    assert talk(core, "stop") == ["OK stop 0"], "stop with no wave going answers its (empty) count"


@pytest.mark.parametrize("profile", [e.obj for e in PROFILES], ids=PROFILES.names())
def test_the_profile_states_the_firmware_s_timer_and_its_rule(profile: UnitProfile, tmp_path):
    core = host_core(tmp_path, f"{profile.name}.h")
    info = talk(core, "info")[0]
    assert info == (f"OK info host timer_hz={profile.timer_hz} min_reload={profile.min_reload} "
                    f"max_reload={profile.max_reload}")
    step = period_step_ns(profile)
    periods = [1, 999, step - 1, step, step + 1, 2 * step, 10_000, 100_000, 999_999, 1_000_000, 10_000_000,
               100_000_000, 2_000_000_000, 123_456_789_000, 10**12, 10**12 + 1]
    answers = talk(core, *(f"!timing {p}" for p in periods))
    for period, answer in zip(periods, answers, strict=True):
        python = timing(profile, period)
        want = f"# timing ERR {python}" if isinstance(python, str) else f"# timing {python[0]} {python[1]}"
        assert answer == want, f"{profile.name} {period} ns"
    shortest = 2 * profile.min_reload * 10**9 // profile.timer_hz  # what a refusal says to use
    assert not isinstance(timing(profile, max(shortest, step)), str)


def _sections(elf: Path) -> dict[str, tuple[int, int, int]]:
    """name -> (type, flags, address) of a 32-bit ELF's sections."""
    raw = elf.read_bytes()
    shoff, = struct.unpack_from("<I", raw, 0x20)
    size, count, names = struct.unpack_from("<HHH", raw, 0x2E)
    table = struct.unpack_from("<IIIIII", raw, shoff + names * size)
    strings = raw[table[4]:table[4] + table[5]]
    out = {}
    for i in range(count):
        name, kind, flags, address, _, _ = struct.unpack_from("<IIIIII", raw, shoff + i * size)
        out[strings[name:strings.index(b"\0", name)].decode()] = (kind, flags, address)
    return out


@NO_ARM
@pytest.mark.parametrize("profile", [e.obj for e in PROFILES], ids=PROFILES.names())
def test_every_unit_builds_fits_and_has_what_its_loader_needs(profile: UnitProfile, tmp_path):
    built = firmware.build(profile, cache=tmp_path)
    size = subprocess.run([TOOLCHAIN[0].replace("gcc", "size"), str(built.path)], capture_output=True,
                          text=True, check=True).stdout.splitlines()[1].split()
    assert (built.text_bytes, built.data_bytes, built.bss_bytes) == tuple(int(x) for x in size[:3])
    flash, ram = CAPACITY[profile.name]
    assert 0 < built.flash_bytes < flash and 0 < built.ram_bytes < ram
    symbols = subprocess.run([TOOLCHAIN[0].replace("gcc", "nm"), str(built.path)], capture_output=True,
                             text=True, check=True).stdout
    assert not re.search(r"^\s+U ", symbols, re.M), "a bare-metal firmware links nothing undefined"
    for name in ("jl_reset", "jl_core_tick", "jl_core_poll", "jl_unit"):
        assert re.search(rf" {name}$", symbols, re.M), name
    sections = _sections(built.path)
    assert sections[".isr_vector"][2] == 0, "the vector table is where the core reads it at reset"
    if "remoteproc" in profile.loaders:  # Linux's remoteproc finds the resource table by its section
        assert ".resource_table" in sections and re.search(r" jl_resource_table$", symbols, re.M)
    assert firmware.build(profile, cache=tmp_path) == built, "built once, then taken from the cache"


def _section_words(elf: Path, wanted: str) -> list[int]:
    """The 32-bit little-endian words of one section of a 32-bit ELF."""
    raw = elf.read_bytes()
    shoff, = struct.unpack_from("<I", raw, 0x20)
    size, count, names = struct.unpack_from("<HHH", raw, 0x2E)
    table = struct.unpack_from("<IIIIII", raw, shoff + names * size)
    for i in range(count):
        name, _, _, _, offset, length = struct.unpack_from("<IIIIII", raw, shoff + i * size)
        if raw[table[4] + name:].split(b"\0", 1)[0].decode() == wanted:
            return list(struct.unpack_from(f"<{length // 4}I", raw, offset))
    raise AssertionError(f"no section {wanted}")


@NO_ARM
@pytest.mark.parametrize("profile", [e.obj for e in PROFILES], ids=PROFILES.names())
def test_every_unit_s_vector_table_is_the_shared_start_then_its_interrupts(profile: UnitProfile, tmp_path):
    built = firmware.build(profile, cache=tmp_path)
    nm = subprocess.run([TOOLCHAIN[0].replace("gcc", "nm"), str(built.path)], capture_output=True,
                        text=True, check=True).stdout
    address = {name: int(value, 16) for value, _, name in (line.split() for line in nm.splitlines())}
    handler = {address[name] | 1: name for name in address}  # Thumb code: bit 0 set
    vectors = _section_words(built.path, ".isr_vector")
    assert vectors[0] == address["_estack"]
    assert [handler.get(v) for v in vectors[1:16]] == [
        "jl_reset", *["halt"] * 5, None, None, None, None, "halt", None, None, "halt", "systick_isr"]
    # the unit's interrupts (cortex_m.h: JL_IRQ_VECTORS) follow at 16 + their number, its last one last
    theirs = [handler.get(v, hex(v)) for v in vectors[16:] if v]
    assert len(theirs) >= 1 and all(name.endswith("_isr") for name in theirs), theirs
    assert vectors[-1] != 0


@NO_ARM
def test_firmware_that_does_not_build_is_one_line_naming_the_error(tmp_path, monkeypatch):
    broken = tmp_path / "src"
    shutil.copytree(SOURCES, broken, ignore=shutil.ignore_patterns("__pycache__"))
    (broken / "core.c").write_text((broken / "core.c").read_text().replace("edges++;", "edges++"))
    monkeypatch.setattr(firmware, "SOURCES", broken)
    with pytest.raises(RunFailed) as failed:
        firmware.build(PROFILES.get("lm3s6965evb", "test"), cache=tmp_path / "cache")
    message = str(failed.value)
    assert "does not build here" in message and "error:" in message and "\n" not in message


def test_a_missing_toolchain_names_its_package(monkeypatch, tmp_path):
    monkeypatch.setattr(firmware.shutil, "which", lambda name: None if name == TOOLCHAIN[0] else "/bin/x")
    with pytest.raises(RunFailed) as failed:
        firmware.build(PROFILES.get("lm3s6965evb", "test"), cache=tmp_path)
    assert str(failed.value) == ("the unit's firmware is built on this machine, which lacks "
                                 "arm-none-eabi-gcc: apt install gcc-arm-none-eabi")
    assert failed.value.status == "unavailable"
