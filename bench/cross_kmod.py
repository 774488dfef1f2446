"""How long does the controller take to cross-build the project's kernel modules for a board?

    python bench/cross_kmod.py --tree DIR --release 6.1.0-56-arm64 --arch arm64 --host-kbuild DIR

--tree holds the board kernel's Debian packages unpacked (dpkg-deb -x of linux-headers-<release>,
linux-headers-<ver>-common and linux-kbuild-<x.y>); --host-kbuild this machine's own
linux-kbuild-<x.y> of the same version, unpacked (apt-get download linux-kbuild-6.1=<version>;
dpkg-deb -x). Each module is built from nothing into a fresh cache, then asked for again (kept),
and its vermagic and ELF machine are checked as a board's boot would need them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from jitterlab import programs
from jitterlab.report.format import duration
from jitterlab.targets.qemu.cross_modules import controller_module

MODULES = (("vgpio", "jl_vgpio"), ("kmod", "jl_wave"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tree", type=Path, required=True)
    parser.add_argument("--release", required=True)
    parser.add_argument("--arch", required=True, help="Debian architecture: arm64, armhf, amd64")
    parser.add_argument("--host-kbuild", type=Path)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jitterlab-cross-kmod-") as cache:
        print(f"kernel {args.release} ({args.arch}), modules built on this machine:")
        for directory, name in MODULES:
            started = time.perf_counter()
            module = controller_module(programs.SOURCES / directory, name, args.tree, args.release, args.arch,
                                       args.host_kbuild, Path(cache), "bench")
            built_s = time.perf_counter() - started
            controller_module(programs.SOURCES / directory, name, args.tree, args.release, args.arch,
                              args.host_kbuild, Path(cache), "bench")
            kept_s = time.perf_counter() - started - built_s
            print(f"  {name + '.ko':13} built in {duration(built_s * 1e9):>9}, then kept: "
                  f"{duration(kept_s * 1e9):>9} ({module.stat().st_size // 1024} KiB)")


if __name__ == "__main__":
    main()
