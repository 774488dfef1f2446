"""A unit qemu emulates on the controller (this machine), with jitterlab's firmware as its kernel.

Its UART is the unit's line to Linux: beside a `local` target, a pty qemu makes (jitterlab holds
its other end open and raw, so qemu never drops what the unit says while no program listens); beside
an emulated board, the board's own serial port (a `pci-serial` whose socket the board listens on:
its Linux sees /dev/ttyS0), which the unit's qemu connects to when it starts. Where this machine
permits it, qemu runs at SCHED_FIFO (priority UNIT_PRIORITY: below the programs and observers of
the target, above any load), as a real unit runs beside Linux out of reach of its load: a starved
emulator loses timer ticks (a 10 ms wave came out 15-65 % slow on a 2-core machine loaded 5 times
over, and within 0.01 % at SCHED_FIFO); the run records which (unit_sched). qemu traces the levels
of the unit's GPIO controller with this machine's clock (the emulator probe reads them): the
unit's timing is host-timed emulation, functional evidence only, and every run records so
(unit_accel = "tcg").

qemu runs under a small launcher that stops it when jitterlab's end of a pipe closes: when the unit
is released, and when jitterlab dies in any way, since the kernel closes that end then too.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
import tty
from pathlib import Path

from jitterlab.model.errors import RunFailed
from jitterlab.model.socs import Soc
from jitterlab.programs.unit import Emulation, UnitSpec
from jitterlab.targets import tied
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import GpioTrace, UnitLink
from jitterlab.targets.unit import firmware

START_TIMEOUT_S = 10.0
STOP_GRACE_S = 2.0  # the unit's qemu ends at once on SIGTERM; SIGKILL after that
_PTY = re.compile(r"char device redirected to (/dev/pts/\d+)")
UNIT_PRIORITY = 10
BOARD_TTY = "/dev/ttyS0"


class EmulatedUnit:
    """One emulated unit: started by acquire(), stopped by release() (idempotent)."""

    def __init__(self, spec: UnitSpec, where: str, *, board: bool) -> None:
        assert spec.profile.emulation is not None, "an emulated unit needs a profile qemu emulates"
        self.spec, self.where, self.board = spec, where, board
        self.emulation: Emulation = spec.profile.emulation
        self.dir = Path(tempfile.mkdtemp(prefix="jl-unit-"))
        self.socket = self.dir / "uart.sock"  # the board's serial port, when there is a board
        self.trace = self.dir / "gpio-trace.log"
        self.log = self.dir / "qemu.log"
        self._qemu: tied.Tied | None = None
        self._held = -1  # our end of the pty, kept open and raw
        self._link: UnitLink | None = None
        self._start_s: float | None = None
        self._firmware = firmware.Built(spec.profile)
        self._fifo: bool | None = None  # may qemu run at SCHED_FIFO here (asked once)

    def board_devices(self) -> tuple[str, ...]:
        """qemu arguments that give an emulated board the serial port the unit connects to."""
        if not self.board:
            return ()
        path = str(self.socket).replace(",", ",,")
        return ("-chardev", f"socket,id=jlunit,path={path},server=on,wait=off",
                "-device", "pci-serial,chardev=jlunit")

    def facts(self) -> dict[str, object]:
        e = self.emulation
        facts: dict[str, object] = {
            "unit_kind": "emulated", "unit_profile": self.spec.profile.name, "unit_accel": "tcg",
            "unit_emulator": f"{e.qemu} -M {e.machine}",
            "unit_pin": f"{self.spec.profile.pin} ({e.controller} line {e.line}, traced)",
            "unit_tty": self.spec.tty or "a pty of this machine",
        }
        facts.update(self._firmware.facts())
        if self._start_s is not None:
            facts["unit_start_s"] = round(self._start_s, 3)
        facts["unit_sched"] = (f"SCHED_FIFO {UNIT_PRIORITY}" if self._may_fifo() else
                               "SCHED_OTHER (SCHED_FIFO is not permitted here: the unit's timer loses ticks "
                               "when this machine is busy)")
        return facts

    def _may_fifo(self) -> bool:
        if self._fifo is None:
            self._fifo = shutil.which("chrt") is not None and subprocess.run(
                ["chrt", "-f", str(UNIT_PRIORITY), "true"], capture_output=True,
                stdin=subprocess.DEVNULL).returncode == 0
        return self._fifo

    def checks(self, target: Target) -> list[tuple[str, str, str | None]]:
        e = self.emulation
        if shutil.which(e.qemu) is None:
            return [("unit", f"{e.qemu} is missing here", f"apt install {e.package}")]
        return [("unit", f"emulated {self.spec.profile.name} ({e.qemu} -M {e.machine}) on this machine",
                 None)]

    def acquire(self, target: Target) -> UnitLink:
        if self._link is not None:
            if self._qemu is not None and not self._qemu.alive():
                raise RunFailed(f"{self.where}: the emulated unit's qemu ended ({self._qemu_said()})")
            return self._link
        e = self.emulation
        if shutil.which(e.qemu) is None:
            raise RunFailed(f"{self.where}: {e.qemu} is missing on this machine (apt install {e.package})",
                            status="unavailable")
        if shutil.which("setpriv") is None:
            raise RunFailed(f"{self.where}: setpriv is missing on this machine (apt install util-linux)",
                            status="unavailable")
        elf = self._firmware.get().path
        started = time.monotonic()
        serial = f"unix:{self.socket}" if self.board else "pty"
        fifo = ["chrt", "-f", str(UNIT_PRIORITY)] if self._may_fifo() else []
        self._start([*fifo, e.qemu, "-M", e.machine, "-nodefaults", "-display", "none",
                     "-kernel", str(elf), "-serial", serial, "-trace", e.trace_event,
                     "-msg", "timestamp=on", "-D", str(self.trace)])
        tty_path = self._wait_started() if not self.board else self._wait_traced()
        self._start_s = time.monotonic() - started
        # its controller's lines as the unit's profile says them: no register map of model/socs.py
        block = Soc(e.controller, f"{self.spec.profile.name}'s GPIO controller", e.lines, "")
        trace = GpioTrace(self.trace, block, e.trace_event)
        self._link = UnitLink(tty_path, self.spec.baud, self.facts(), trace, e.line)
        return self._link

    def _start(self, argv: list[str]) -> None:
        self._qemu = tied.start(argv, self.log, STOP_GRACE_S)

    def _wait_started(self) -> str:
        """The pty qemu made, once it says so; held open and raw from then on."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            found = _PTY.search(self._qemu_log())
            if found:
                self._held = os.open(found[1], os.O_RDWR | os.O_NOCTTY)
                tty.setraw(self._held)  # no echo: the unit would read its own replies back
                return found[1]
            self._check_alive()
            time.sleep(0.01)
        raise RunFailed(f"{self.where}: the emulated unit's qemu made no pty within {START_TIMEOUT_S:g} s "
                        f"({self._qemu_said()})")

    def _wait_traced(self) -> str:
        """The board's serial port, once qemu runs (it opens its trace file after connecting)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            self._check_alive()
            if self.trace.exists():
                return self.spec.tty or BOARD_TTY
            time.sleep(0.01)
        raise RunFailed(f"{self.where}: the emulated unit's qemu did not start within {START_TIMEOUT_S:g} s "
                        f"({self._qemu_said()})")

    def _check_alive(self) -> None:
        if self._qemu is not None and not self._qemu.alive():
            raise RunFailed(f"{self.where}: the emulated unit's qemu ended at once: {self._qemu_said()}")

    def _qemu_log(self) -> str:
        try:
            return self.log.read_text(errors="replace")
        except OSError:
            return ""

    def _qemu_said(self) -> str:
        lines = [line.strip() for line in self._qemu_log().splitlines() if line.strip()]
        return lines[-1] if lines else "it said nothing"

    def release(self, target: Target | None) -> str | None:
        if self._qemu is not None:
            self._qemu.stop()
            self._qemu = None
        if self._held >= 0:
            with contextlib.suppress(OSError):
                os.close(self._held)
            self._held = -1
        self._link = None
        shutil.rmtree(self.dir, ignore_errors=True)
        return None
