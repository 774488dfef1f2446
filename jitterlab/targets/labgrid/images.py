"""Unattended image A/B on a labgrid farm: the campaign names an image per label value for each
board; jitterlab powers the board off, writes the image (labgrid's USBStorageDriver, with a USB-SD
mux switched to the host and back), powers it on, times the boot on the serial console until the
login prompt, connects, measures, and moves to the next image.

    [[target]]
    name = "bbb-1"
    kind = "labgrid"
    place = "bbb-1"
    images = { "1.10" = "images/bbb-1.10.img", "1.11" = "images/bbb-1.11.img" }
    # image_label = "image"      the label whose values the images are
    # boot_prompt = "login: "    a regular expression the console shows once the image has booted
    # boot_timeout = "300s"
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jitterlab.model.errors import UserError, shown
from jitterlab.model.units import parse_duration_ns

IMAGE_KEYS = ("images", "image_label", "boot_prompt", "boot_timeout")


@dataclass(frozen=True)
class ImageOptions:
    images: tuple[tuple[str, str], ...]  # label value -> image file
    label: str = "image"
    boot_prompt: str = "login: "
    boot_timeout_s: float = 300.0

    def image(self, value: str) -> str | None:
        return dict(self.images).get(value)


def split_image_options(options: Mapping[str, object], where: str) -> tuple[dict, ImageOptions | None]:
    """The target's other options, and its image options (None when it names no images)."""
    rest = {k: v for k, v in options.items() if k not in IMAGE_KEYS}
    if "images" not in options:
        extra = [k for k in IMAGE_KEYS if k in options]
        if extra:
            raise UserError(f"{where}.{extra[0]}: goes with images = {{ \"1.10\" = \"a.img\", ... }}")
        return rest, None
    images = options["images"]
    if not isinstance(images, dict) or not images:
        raise UserError(f'{where}.images: expected a table of label value = image file, e.g. images = '
                        f'{{ "1.10" = "bbb-1.10.img" }}, got {shown(images)}')
    pairs = []
    for value, path in images.items():
        if not isinstance(path, str) or not path:
            raise UserError(f"{where}.images.{value}: expected the path of an image file, got {shown(path)}")
        full = os.path.abspath(os.path.expanduser(path))
        if not os.path.isfile(full):
            raise UserError(f"{where}.images.{value}: {full} does not exist (a relative path starts at "
                            f"{os.getcwd()})")
        pairs.append((str(value), full))
    label = options.get("image_label", "image")
    if not isinstance(label, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", label):
        raise UserError(f'{where}.image_label: expected a label key like "image", got {shown(label)}')
    prompt = options.get("boot_prompt", "login: ")
    try:
        re.compile(str(prompt))
    except re.error as exc:
        raise UserError(f"{where}.boot_prompt: not a regular expression ({exc})") from None
    timeout_ns = parse_duration_ns(options.get("boot_timeout", "300s"), f"{where}.boot_timeout")
    return rest, ImageOptions(tuple(pairs), label, str(prompt), timeout_ns / 1e9)


def _driver(board: Any, *, having: str) -> Any | None:
    """The first driver of the labgrid target that offers the method `having`."""
    for driver in board.drivers:
        if callable(getattr(driver, having, None)):
            return driver
    return None


def install(board: Any, image: str, options: ImageOptions) -> float:
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
        console.expect(options.boot_prompt, timeout=options.boot_timeout_s)
    except Exception as exc:  # pexpect's TIMEOUT or EOF: what the console said last tells why
        before = getattr(getattr(console, "_expect", None), "before", b"") or b""
        tail = before[-400:].decode(errors="replace") if isinstance(before, bytes) else str(before)[-400:]
        tail = " | ".join(line.strip() for line in tail.splitlines() if line.strip())[-300:]
        raise TimeoutError(f"no {options.boot_prompt!r} on the console within {options.boot_timeout_s:g}s "
                           f"after power-on ({type(exc).__name__}); the console said: "
                           f"{tail or '(nothing)'}") from None
    return time.monotonic() - start
