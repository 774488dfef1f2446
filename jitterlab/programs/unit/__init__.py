"""The firmware of the real-time units beside Linux (a Cortex-M core of the SoC, or an MCU on a
serial line): one portable core (core.c: the protocol, the wave made by a timer interrupt, the edge
count), the start every Cortex-M unit shares (cortex_m.c: reset, the SysTick as the wave's timer,
the system exceptions' vectors) and a small layer per unit (its GPIO, transport and interrupts),
built on the controller with Debian's gcc-arm-none-eabi (Makefile).

A `UnitProfile` says what jitterlab must know of a unit before anything is built: its timer (to
refuse a period it cannot make when the campaign is read), how its firmware gets onto it, how
Linux talks to it, and, for a unit qemu emulates, how to start it and where its pin is traced. A
`UnitSpec` is the `unit` table of a [[target]], validated.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError, shown
from jitterlab.model.registry import Registry, did_you_mean

SOURCES = Path(__file__).parent
TOOLCHAIN = ("arm-none-eabi-gcc", "gcc-arm-none-eabi")  # (the compiler, its Debian package)
LOADERS = ("emulated", "serial", "remoteproc")
BAUDS = (9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600)
FIRMWARE_WORD = "{firmware}"  # in a flash command: the path of the built firmware
_TTY = re.compile(r"^/dev/[A-Za-z0-9_./:-]+$")
_CORE = re.compile(r"^[A-Za-z0-9_.:@-]{1,64}$")
_FLASH_WORD = re.compile(r"^[^\x00-\x1f]{1,512}$")


@dataclass(frozen=True)
class Emulation:
    """How qemu emulates the unit on the controller, and where it traces the wave's pin."""

    qemu: str  # the emulator's binary
    package: str  # the Debian package that has it
    machine: str  # qemu's -M
    trace_event: str  # the level changes of the GPIO controller
    controller: str  # the GPIO controller qemu traces ("pl061")
    lines: int  # its output lines
    line: int  # the one the firmware toggles


@dataclass(frozen=True)
class UnitProfile:
    """One unit jitterlab has firmware for: the numbers are its layer's header (<name>.h)."""

    name: str
    cpu: str  # in words, for people
    pin: str  # the line the wave is on, in the unit's own names
    timer_hz: int  # the clock the wave's timer counts
    min_reload: int  # fewest timer ticks between two interrupts the unit keeps up with
    max_reload: int  # most ticks the timer counts between two interrupts
    loaders: tuple[str, ...]  # how its firmware can get onto it (LOADERS)
    transport: str  # how Linux talks to it, in words
    tty: str = ""  # where Linux finds it when that is known (remoteproc: its rpmsg tty)
    core: str = ""  # remoteproc: the name the kernel gives the core (/sys/class/remoteproc/*/name)
    emulation: Emulation | None = None

    @property
    def tick_ns(self) -> float:
        return 1e9 / self.timer_hz


MAX_DIVIDER = 65536
MAX_PERIOD_NS = 1_000_000_000_000


def timing(profile: UnitProfile, period_ns: int) -> tuple[int, int] | str:
    """(timer ticks between interrupts, interrupts per half period) with which the unit's firmware
    makes `period_ns` exactly, or why it cannot: the same rule as core.c's jl_core_timing."""
    if not 0 < period_ns <= MAX_PERIOD_NS:
        return "out of range (1 ns to 1000 s)"
    ticks, rest = divmod(period_ns * profile.timer_hz, 1_000_000_000)
    if ticks // 2 < profile.min_reload:
        return "shorter than the unit keeps up with"
    if rest:
        return "not a whole number of timer ticks"
    if ticks % 2:
        return "an odd number of timer ticks (a half period is not whole)"
    half = ticks // 2
    for divider in range(-(-half // profile.max_reload), MAX_DIVIDER + 1):
        if half % divider == 0 and profile.min_reload <= half // divider <= profile.max_reload:
            return half // divider, divider
    return "longer than the timer can count in whole steps"


def period_step_ns(profile: UnitProfile) -> int:
    """The smallest period step (ns) that is a whole, even number of the timer's ticks."""
    g = math.gcd(profile.timer_hz, 1_000_000_000)
    per_tick = 1_000_000_000 // g  # ns that make `timer_hz // g` ticks
    return per_tick * (2 // math.gcd(2, profile.timer_hz // g))


PROFILES: Registry[UnitProfile] = Registry("unit profile")

LM3S6965EVB = PROFILES.add(
    "lm3s6965evb",
    "TI Stellaris LM3S6965 (Cortex-M3), as qemu emulates it on the controller, or a real EK-LM3S6965 "
    "board on a serial line: SysTick at 12.5 MHz, the wave on PF0, commands on UART0 (115200 8N1)",
    UnitProfile(
        name="lm3s6965evb", cpu="Cortex-M3 (TI LM3S6965)", pin="PF0", timer_hz=12_500_000, min_reload=625,
        max_reload=0xFFFFFF, loaders=("emulated", "serial"), transport="UART0, 115200 8N1",
        emulation=Emulation(qemu="qemu-system-arm", package="qemu-system-arm", machine="lm3s6965evb",
                            trace_event="pl061_set_output", controller="pl061", lines=8, line=0),
    ),
)
STM32MP1_M4 = PROFILES.add(
    "stm32mp1-m4",
    "the Cortex-M4 of an STM32MP15x (e.g. STM32MP157 Discovery kits), started by Linux's remoteproc: "
    "SysTick at 209 MHz, the wave on PA14, commands over RPMsg (/dev/ttyRPMSG0, rpmsg-tty)",
    UnitProfile(
        name="stm32mp1-m4", cpu="Cortex-M4 (STM32MP15x)", pin="PA14", timer_hz=209_000_000, min_reload=418,
        max_reload=0xFFFFFF, loaders=("remoteproc",), transport="RPMsg (rpmsg-tty)", tty="/dev/ttyRPMSG0",
        core="m4",
    ),
)


@dataclass(frozen=True)
class UnitSpec:
    """The `unit` table of a [[target]]: which unit, how its firmware gets onto it, where Linux
    reaches it."""

    loader: str  # "emulated" | "serial" | "remoteproc"
    profile: UnitProfile
    tty: str = ""  # on the target; "" where jitterlab makes it (an emulated unit beside this machine)
    baud: int = 115200
    core: str = ""  # remoteproc: the core's name
    replace: bool = False  # remoteproc: it may stop a core running another firmware (put back after)
    flash: tuple[str, ...] = ()  # serial: a command (argv, on the target) that writes the firmware

    @property
    def emulated(self) -> bool:
        return self.loader == "emulated"


_KEYS = {
    "kind": '"emulated" (qemu runs the unit on this machine), "serial" (an MCU on a serial line) or '
            '"remoteproc" (a core of the board\'s SoC that Linux starts)',
    "profile": "the unit: " + ", ".join(PROFILES.names()),
    "tty": 'where Linux reaches the unit, e.g. "/dev/ttyACM0" (serial), "/dev/ttyRPMSG0" (remoteproc)',
    "baud": "serial: the line's speed, e.g. 115200 (the default)",
    "flash": 'serial: a command that writes the firmware onto the MCU, on the target, e.g. '
             '["lm4flash", "{firmware}"]; without it the firmware is the user\'s to flash',
    "core": 'remoteproc: the core\'s name in /sys/class/remoteproc/*/name, e.g. "m4"',
    "replace": "remoteproc: true lets jitterlab stop a core that runs another firmware (it is put back "
               "after the campaign); false (the default) refuses",
}
UNIT_HELP = ('a real-time unit beside its Linux, for impl "unit": a table, e.g. {kind = "emulated", '
             'profile = "lm3s6965evb"}; its keys: ' + "; ".join(f"{k} = {v}" for k, v in _KEYS.items()))
_KEYS_OF = {
    "emulated": ("kind", "profile", "tty"),
    "serial": ("kind", "profile", "tty", "baud", "flash"),
    "remoteproc": ("kind", "profile", "tty", "core", "replace"),
}
def parse_unit(value: object, where: str, *, on_controller: bool) -> UnitSpec | None:
    """The `unit` table of a [[target]] (None when there is none); `on_controller`: the target is
    the machine jitterlab runs on, where an emulated unit's line is a pty jitterlab makes; `where`
    is e.g. "campaign.toml: target[0].unit". UserError naming the key and the fix. Which kinds of
    target can reach which unit is the targets' to say (targets/unit/target.py)."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise UserError(f'{where}: expected a table, e.g. unit = {{kind = "emulated", profile = '
                        f'"lm3s6965evb"}}, got {shown(value)}')
    loader = value.get("kind")
    if loader not in LOADERS:
        hint = did_you_mean(loader, LOADERS) if isinstance(loader, str) else ""
        raise UserError(f"{where}.kind: expected {_KEYS['kind']}; {hint}got {shown(loader)}")
    for key in value:
        if key not in _KEYS_OF[loader]:
            hint = did_you_mean(str(key), _KEYS_OF[loader])
            raise UserError(f"{where}.{shown(key)[1:-1]}: not a key of a {loader} unit; {hint}known: "
                            f"{', '.join(_KEYS_OF[loader])}")
    if "profile" not in value:
        raise UserError(f'{where}.profile: missing; name the unit, e.g. profile = "{LM3S6965EVB.name}" '
                        f"(known: {', '.join(PROFILES.names())})")
    profile = PROFILES.get(value["profile"], f"{where}.profile")
    if loader not in profile.loaders:
        ways = " or ".join(f'"{w}"' for w in profile.loaders)
        raise UserError(f"{where}.kind: unit {profile.name!r} is loaded as {ways}, not {loader!r}")
    tty = _tty(value, where, loader, on_controller, profile)
    baud = value.get("baud", 115200)
    if baud not in BAUDS or isinstance(baud, bool):
        raise UserError(f"{where}.baud: expected one of {', '.join(map(str, BAUDS))}, got {shown(baud)}")
    core = value.get("core", profile.core)
    if loader == "remoteproc" and not (isinstance(core, str) and _CORE.match(core)):
        raise UserError(f'{where}.core: expected the core\'s name as /sys/class/remoteproc/*/name gives it, '
                        f'e.g. core = "m4", got {shown(core)}')
    replace = value.get("replace", False)
    if not isinstance(replace, bool):
        raise UserError(f"{where}.replace: expected true or false, got {shown(replace)}")
    return UnitSpec(loader, profile, tty, int(baud), core if loader == "remoteproc" else "", replace,
                    _flash(value.get("flash"), where))


def _tty(value: Mapping[str, object], where: str, loader: str, on_controller: bool,
         profile: UnitProfile) -> str:
    tty = value.get("tty")
    if loader == "emulated" and on_controller:
        if tty is not None:
            raise UserError(f"{where}.tty: the emulated unit's line on this machine is a pty jitterlab "
                            "makes; remove tty")
        return ""
    if tty is None:
        tty = "/dev/ttyS0" if loader == "emulated" else profile.tty
    if not tty and loader == "serial":
        raise UserError(f'{where}.tty: missing; give the MCU\'s serial line, e.g. tty = "/dev/ttyACM0"')
    if not isinstance(tty, str) or not _TTY.match(tty) or ".." in tty:
        raise UserError(f'{where}.tty: expected a device under /dev, e.g. "/dev/ttyACM0", got {shown(tty)}')
    return tty


def _flash(value: object, where: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if (not isinstance(value, list) or not value or len(value) > 64
            or not all(isinstance(w, str) and _FLASH_WORD.match(w) for w in value)):
        raise UserError(f'{where}.flash: expected a command as a list of words, e.g. ["lm4flash", '
                        f'"{FIRMWARE_WORD}"], got {shown(value)}')
    if not any(FIRMWARE_WORD in w for w in value):
        raise UserError(f"{where}.flash: no word names the firmware; write {FIRMWARE_WORD} where its path "
                        "goes")
    return tuple(value)


def describe_timer(profile: UnitProfile) -> str:
    """"its 12.5 MHz timer (80 ns ticks)", for messages."""
    mhz = profile.timer_hz / 1e6
    return f"its {mhz:g} MHz timer ({profile.tick_ns:.4g} ns ticks)"
