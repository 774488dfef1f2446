"""GPIO chips as a target shows them: name (/dev/gpiochipN), label, number of lines, and the
sysfs base number; and what a line's request or export failure means for the user."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options
from jitterlab.model.params import ParamValue
from jitterlab.targets.base import Target

# one "name<TAB>label<TAB>ngpio<TAB>base" line per chip; base is -1 without the sysfs interface
_LIST = r"""
for d in /sys/bus/gpio/devices/gpiochip*; do
  [ -e "$d" ] || continue
  n=${d##*/}; label=""; ngpio=""; base=-1
  for c in /sys/class/gpio/gpiochip*; do
    [ -e "$c/device/$n" ] || continue
    label=$(cat "$c/label"); ngpio=$(cat "$c/ngpio"); base=$(cat "$c/base")
  done
  if [ -z "$ngpio" ] && command -v gpiodetect >/dev/null 2>&1; then
    line=$(gpiodetect 2>/dev/null | grep "^$n ")
    label=$(echo "$line" | sed 's/^[^[]*\[\([^]]*\)\].*/\1/')
    ngpio=$(echo "$line" | sed 's/.*(\([0-9]*\) lines).*/\1/')
  fi
  printf '%s\t%s\t%s\t%s\n' "$n" "$label" "${ngpio:-0}" "$base"
done
exit 0
"""


_CHIPS = "gpio chips"  # their key in a run's read_once


@dataclass(frozen=True)
class LineOptions(Options):
    """A pin's options that name a line of a chip (pins.gpiod, pins.sysfs)."""

    chip: str
    line: int


@dataclass(frozen=True)
class Chip:
    name: str  # gpiochipN: /dev/gpiochipN
    label: str
    lines: int
    base: int  # the sysfs (legacy) number of line 0, -1 when the kernel has no sysfs interface

    @property
    def device(self) -> str:
        return f"/dev/{self.name}"


def parse_chips(text: str) -> list[Chip]:
    chips = []
    for row in text.splitlines():
        name, label, lines, base = [*row.split("\t"), "", "", "", ""][:4]
        if name.startswith("gpiochip"):
            chips.append(Chip(name, label, int(lines) if lines.isdigit() else 0,
                              int(base) if base.lstrip("-").isdigit() else -1))
    return chips


def find_chip(target: Target, wanted: ParamValue, line: int, option: str,
              read_once: dict[str, object] | None = None) -> Chip:
    """The chip a campaign names (gpiochipN, /dev/gpiochipN or its label) with `line` on it;
    RunFailed naming what the target has instead. `read_once` (a run's RunContext.read_once) keeps
    the target's list of chips for the other parts of the same run."""
    chips = read_once.get(_CHIPS) if read_once is not None else None
    if not isinstance(chips, list):
        chips = parse_chips(target.run(["sh", "-c", _LIST], timeout_s=30).stdout)
        if read_once is not None:
            read_once[_CHIPS] = chips
    name = str(wanted).removeprefix("/dev/")
    found = [c for c in chips if name in (c.name, c.label)]
    if not found:
        have = ", ".join(f"{c.name} [{c.label}] ({c.lines} lines)" for c in chips) or "no GPIO chip"
        raise RunFailed(f"{option}.chip: the target has no GPIO chip {wanted!r}; it has {have}",
                        status="unavailable")
    chip = found[0]
    if chip.lines and line >= chip.lines:
        raise RunFailed(f"{option}.line: {chip.name} [{chip.label}] has lines 0-{chip.lines - 1}, not {line}",
                        status="unavailable")
    return chip


def explain(errno_text: str, what: str) -> str:
    """What a failed request or export means, with the fix."""
    text = errno_text.lower()
    if "permission denied" in text or "operation not permitted" in text:
        return (f"{what}: not permitted ({errno_text.strip()}); run jitterlab as root on the target or "
                "give the user the gpio group (udev rule for /dev/gpiochip* and /sys/class/gpio)")
    if "busy" in text:
        return (f"{what}: busy ({errno_text.strip()}); another program or a driver holds the line "
                "(gpioinfo names the consumer); free it or choose another line")
    if "invalid argument" in text:
        return (f"{what}: refused ({errno_text.strip()}); the line may belong to a driver or not "
                "exist; check gpioinfo")
    return f"{what}: {errno_text.strip() or 'failed'}"
