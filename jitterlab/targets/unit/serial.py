"""An MCU on a serial line of the target (an Arduino-class board, a vendor's evaluation kit on its
USB serial port, wired to the instrument like any pin): jitterlab only talks to it. Its firmware
is flashed by the user, or by the command the [[target]]'s unit table gives (`flash`, an argv run
on the target, with {firmware} standing for the firmware jitterlab built and copied there), once,
when the first run needs the unit."""

from __future__ import annotations

from jitterlab.model.errors import RunFailed
from jitterlab.programs.unit import FIRMWARE_WORD, UnitSpec
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import UnitLink
from jitterlab.targets.unit import firmware

FLASH_TIMEOUT_S = 300.0


class SerialUnit:
    """An MCU on a serial line: acquire() flashes it when a command is given, release() does nothing
    (the MCU keeps jitterlab's firmware: it was given to jitterlab for that)."""

    def __init__(self, spec: UnitSpec, where: str) -> None:
        self.spec, self.where = spec, where
        self._link: UnitLink | None = None
        self._firmware = firmware.Built(spec.profile) if spec.flash else None

    def board_devices(self) -> tuple[str, ...]:
        return ()

    def facts(self) -> dict[str, object]:
        facts: dict[str, object] = {"unit_kind": "serial", "unit_profile": self.spec.profile.name,
                                    "unit_tty": self.spec.tty, "unit_baud": self.spec.baud,
                                    "unit_pin": self.spec.profile.pin}
        if self._firmware is not None:
            facts.update(self._firmware.facts())
            facts["unit_firmware"] = f"flashed by jitterlab with {self.spec.flash[0]}"
        else:
            facts["unit_firmware"] = "flashed by the user (not known to jitterlab)"
        return facts

    def checks(self, target: Target) -> list[tuple[str, str, str | None]]:
        there = target.run(["sh", "-c", '[ -c "$1" ] && [ -r "$1" ] && [ -w "$1" ]', "sh", self.spec.tty]).ok
        state = "is a serial line this user can use" if there else "is missing"
        return [("unit tty", f"{self.spec.tty} {state}",
                 None if there else "plug the MCU in, check unit.tty, and that this user may use it "
                                    "(the dialout group)")]

    def acquire(self, target: Target) -> UnitLink:
        if self._link is not None:
            return self._link
        if self._firmware is not None:
            built = self._firmware.get()
            staged = f"{target.workdir}/jitterlab-{self.spec.profile.name}-{built.sha256[:12]}.elf"
            target.put(built.path, staged)
            argv = [w.replace(FIRMWARE_WORD, staged) for w in self.spec.flash]
            done = target.run(argv, timeout_s=FLASH_TIMEOUT_S)
            if not done.ok:
                said = (done.stderr.strip() or done.stdout.strip() or f"status {done.rc}").splitlines()[-1]
                raise RunFailed(f"{self.where}.flash: {argv[0]} failed: {said}")
        self._link = UnitLink(self.spec.tty, self.spec.baud, self.facts())
        return self._link

    def release(self, target: Target | None) -> str | None:
        self._link = None
        return None
