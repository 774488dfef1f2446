"""Flashing a labgrid board: jitterlab powers the board off, puts the image in place, powers it on
and times the boot on the serial console until the boot prompt. The image goes in place either by
writing it (labgrid's USBStorageDriver, with a USB-SD mux switched to the host and back) or, on a
board labgrid emulates with its QEMUDriver, by pointing the images key the driver boots from
(its `disk`) at it. The options that name the images are any flashable board's
(targets/images.py); LabgridTarget offers this as capabilities.FlashesImages.
"""

from __future__ import annotations

import contextlib
import os
import time
from typing import Any

from jitterlab.model.errors import TargetLost, UserError

BOOT_SLICE_S = 2.0  # how often the wait for the boot prompt looks whether an emulator ended
DRAIN_S = 1.0  # once it ended: how long its console is read for what it said last


def _driver(board: Any, *, having: str) -> Any | None:
    """The first driver of the labgrid target that offers the method `having` (labgrid's image
    writers and SD muxes share no protocol class to ask for)."""
    for driver in board.drivers:
        if callable(getattr(driver, having, None)):
            return driver
    return None


def _protocol(board: Any, protocol: Any, what: str, examples: str) -> Any:
    from labgrid.exceptions import NoDriverFoundError

    try:
        return board.get_driver(protocol, activate=False)
    except NoDriverFoundError:
        raise UserError(f"the board has no {what} driver ({protocol.__name__}); add one to its env or "
                        f"place ({examples})") from None


def _qemu(board: Any) -> Any | None:
    from labgrid.driver import QEMUDriver

    return next((d for d in board.drivers if isinstance(d, QEMUDriver)), None)


def _point_qemu_at(board: Any, qemu: Any, image: str) -> None:
    """Make the QEMUDriver boot `image` as its disk; every image its keys name must exist."""
    if qemu.disk is None:
        raise UserError("its QEMUDriver has no disk key, so an image campaign has nothing to flash; add "
                        "disk: NAME to the QEMUDriver and NAME: FILE under images: (each image of the "
                        "campaign replaces FILE in turn)")
    from labgrid.binding import BindingState

    config = board.env.config
    if qemu.state == BindingState.active:  # it reads the image paths when activated
        board.deactivate(qemu)  # powers it off
    config.data.setdefault("images", {})[qemu.disk] = image
    for key in ("kernel", "dtb", "bios", "flash"):
        name = getattr(qemu, key)
        if name is None:
            continue
        try:
            path = config.get_image_path(name)
        except KeyError:
            raise UserError(f"its QEMUDriver's {key} names the image {name!r}, which images: lacks; add "
                            f"{name}: FILE under images:") from None
        if not os.path.isfile(path):
            raise UserError(f"images.{name}: {path} does not exist (its QEMUDriver's {key}); fix the path "
                            "in the env file")


def install(board: Any, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
    """Put `image` on the board and boot it; the seconds from power-on to the boot prompt.
    UserError naming what the board lacks; TimeoutError with the console's last words."""
    import pexpect
    from labgrid.protocol import ConsoleProtocol, PowerProtocol

    power = _protocol(board, PowerProtocol, "power", "QEMUDriver, ExternalPowerDriver, NetworkPowerDriver")
    console = _protocol(board, ConsoleProtocol, "console", "QEMUDriver, SerialDriver on a "
                        "NetworkSerialPort")
    qemu = _qemu(board)
    if qemu is not None:
        _point_qemu_at(board, qemu, image)  # off while it is pointed at the image
        board.activate(power)
    else:
        _write(board, power, image)  # powers off first
    board.activate(console)
    start = time.monotonic()
    try:
        power.on()
    except Exception as exc:  # the board (an emulator that will not start) is lost, not the campaign
        raise TargetLost(f"the board did not power on: {type(exc).__name__}: {exc}") from None
    deadline = start + boot_timeout_s
    said = b""
    while True:  # in slices: an emulated board that powered itself off says so at once
        slice_s = min(BOOT_SLICE_S, max(deadline - time.monotonic(), 0.1))
        # labgrid's ConsoleProtocol: with TIMEOUT and EOF among the patterns, expect returns what the
        # console said so far instead of raising
        index, before, _, _ = console.expect([boot_prompt, pexpect.TIMEOUT, pexpect.EOF], timeout=slice_s)
        if index == 0:
            return time.monotonic() - start
        state = _emulator_state(qemu) if qemu is not None else ""
        ended = index == 2 or state != RUNNING
        said = _heard(said, before)
        if not ended and time.monotonic() < deadline:
            continue
        if ended and index != 2:  # what it said last may still be on its way: read until it is quiet
            with contextlib.suppress(Exception):
                said = _heard(said, console.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=DRAIN_S)[1])
        tail = said[-400:].decode(errors="replace")
        tail = " | ".join(line.strip() for line in tail.splitlines() if line.strip())[-300:]
        if state == GONE:  # labgrid would ask the ended emulator to quit: it is off already
            qemu.status = 0
        elif state == STOPPED:
            qemu.off()
        if state in (GONE, STOPPED):
            when = f"before the emulator ended, {time.monotonic() - start:.0f} s after power-on"
        elif index == 2:
            when = f"before the console closed, {time.monotonic() - start:.0f} s after power-on"
        else:
            when = f"within {boot_timeout_s:g}s after power-on (TIMEOUT)"
        raise TimeoutError(f"no {boot_prompt!r} on the console {when}; the console said: "
                           f"{tail or '(nothing)'}")


def _heard(said: bytes, before: object) -> bytes:
    """What the console said so far, with `before` from one more expect: pexpect's text since the
    last match, which holds `said` again, or only what came since (a console read anew)."""
    if not isinstance(before, bytes) or not before:
        return said
    return before if before.startswith(said) else said + before


RUNNING, STOPPED, GONE = "", "stopped", "gone"


def _emulator_state(qemu: Any) -> str:
    """Whether the QEMUDriver's emulator runs its guest, STOPPED it (a kernel panic, a poweroff, the
    emulator still there) or is GONE, asked through the driver's public QMP monitor."""
    try:
        state = qemu.monitor_command("query-status")
    except Exception:  # the monitor's pipe is closed: QEMU ended
        return GONE
    status = state.get("status") if isinstance(state, dict) else None
    return STOPPED if status in ("shutdown", "guest-panicked", "internal-error") else RUNNING


def _write(board: Any, power: Any, image: str) -> None:
    writer = _driver(board, having="write_image")
    if writer is None:
        raise UserError("the board has no driver that writes an image (labgrid's USBStorageDriver, on a "
                        "USBSDMux/SDWire or a USB mass storage resource) and no QEMUDriver whose disk "
                        "it could boot; add one to its place or env")
    mux = _driver(board, having="set_mode")
    board.activate(power)
    power.off()
    if mux is not None:
        board.activate(mux)
        mux.set_mode("host")
    board.activate(writer)
    writer.write_image(image)
    if mux is not None:
        mux.set_mode("dut")
