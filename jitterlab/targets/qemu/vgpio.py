"""The virtual GPIO chip of a qemu target (gpio = "virtual"): jl_vgpio.ko, loaded at boot.

Debian's kernels have neither gpio-sim nor gpio-mockup, so the guest would have no GPIO chip at
all. jl_vgpio (jitterlab/programs/vgpio/jl_vgpio.c) is a chip "jl-vgpio" of loopback pairs: line
2k drives line 2k+1, whose edge interrupts go through gpiolib like a real input's. It is built in
the guest once per kernel and source version and kept here (qemu_modules), so later boots only
copy and load it.
"""

from __future__ import annotations

from pathlib import Path

from jitterlab import programs
from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.modules import guest_module

SOURCES = programs.SOURCES / "vgpio"
CHIP_LABEL = "jl-vgpio"
LINES = 4


def load(target, cache_dir: Path, where: str) -> None:
    """Build (or take from `cache_dir`) jl_vgpio.ko for the running guest kernel and insmod it;
    UserError naming the kernel and the cause when it cannot be."""
    module = guest_module(target, SOURCES, "jl_vgpio", cache_dir, f"{where}: the virtual GPIO chip")
    loaded = target.run(["insmod", module, f"lines={LINES}"])
    if not loaded.ok:
        release = target.run(["uname", "-r"]).stdout.strip()
        kernel = target.run(["sh", "-c", "dmesg | tail -n 2"]).stdout.strip().replace("\n", " | ")
        raise UserError(f"{where}: kernel {release} refused the virtual GPIO chip: "
                        f"{loaded.stderr.strip()} (kernel: {kernel})")
