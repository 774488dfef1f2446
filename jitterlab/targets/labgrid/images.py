"""Flashing a labgrid board: jitterlab powers the board off, writes the image (labgrid's
USBStorageDriver, with a USB-SD mux switched to the host and back), powers it on and times the
boot on the serial console until the boot prompt. The options that name the images are any
flashable board's (targets/images.py); LabgridTarget offers this as capabilities.FlashesImages.
"""

from __future__ import annotations

import time
from typing import Any

from jitterlab.model.errors import UserError


def _driver(board: Any, *, having: str) -> Any | None:
    """The first driver of the labgrid target that offers the method `having` (labgrid's image
    writers and SD muxes share no protocol class to ask for)."""
    for driver in board.drivers:
        if callable(getattr(driver, having, None)):
            return driver
    return None


def install(board: Any, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
    """Write `image` to the board and boot it; the seconds from power-on to the boot prompt.
    UserError naming what the board lacks; TimeoutError with the console's last words."""
    from labgrid.protocol import ConsoleProtocol, PowerProtocol

    power = board.get_driver(PowerProtocol, activate=False)
    console = board.get_driver(ConsoleProtocol, activate=False)
    writer = _driver(board, having="write_image")
    if writer is None:
        raise UserError("the board has no driver that writes an image (labgrid's USBStorageDriver, on a "
                        "USBSDMux/SDWire or a USB mass storage resource); add one to its place or env")
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
    board.activate(console)
    start = time.monotonic()
    power.on()
    try:
        console.expect(boot_prompt, timeout=boot_timeout_s)
    except Exception as exc:  # pexpect's TIMEOUT or EOF: what the console said last tells why
        before = getattr(getattr(console, "_expect", None), "before", b"") or b""
        tail = before[-400:].decode(errors="replace") if isinstance(before, bytes) else str(before)[-400:]
        tail = " | ".join(line.strip() for line in tail.splitlines() if line.strip())[-300:]
        raise TimeoutError(f"no {boot_prompt!r} on the console within {boot_timeout_s:g}s "
                           f"after power-on ({type(exc).__name__}); the console said: "
                           f"{tail or '(nothing)'}") from None
    return time.monotonic() - start
