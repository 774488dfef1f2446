"""The VM lab in one run: each GPIO interface and a kernel module on the virtual GPIO chip, on
Debian's standard and PREEMPT_RT kernels, and each kernel's boot time.

    python bench/vm_pins.py [--period 1ms] [--duration 2s] [--repetitions 2] [--kernels standard,rt]

Boots one qemu target per kernel (gpio = "virtual": the jl-vgpio chip, line 0 wired to line 1),
runs c-fifo on the virtual pin (the baseline: a file in /dev/shm), c-gpiod on the character
device, c-file on the sysfs value file and kmod-hrtimer through the kernel's consumer API, each
seen by the program itself (self) and, on the real pins, by the gpio-loopback probe on line 1.
Prints per kernel the boot time and accelerator, and per cell the median p99 and worst relative
period error with the ratio to c-fifo on vpin. Under TCG (an emulated CPU) the ratios show what
each interface costs in emulation, not on hardware: the script says which it was.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
from collections import defaultdict
from pathlib import Path

from jitterlab.cli.main import main as jitterlab
from jitterlab.store.catalog import Store

CELLS = [  # impl, pin, probes
    ("c-fifo", "vpin", ["self"]),
    ("c-gpiod", "gpiod", ["self", "gpio-loopback"]),
    ("c-file", "sysfs", ["self", "gpio-loopback"]),
    ("kmod-hrtimer", "gpiod", ["self", "gpio-loopback"]),
]


def campaign(path: Path, kernels: list[str], period: str, duration: str, repetitions: int) -> None:
    targets = "".join(f'[[target]]\nname = "{k}"\nkind = "qemu"\nkernel = "{k}"\ncpus = 2\n'
                      f'memory = "1G"\ngpio = "virtual"\n\n' for k in kernels)
    matrices = "".join(f'[[matrix]]\nimpl = "{impl}"\npin = "{pin}"\nprobe = {probes!r}\n'
                       f'period = "{period}"\n\n'.replace("'", '"') for impl, pin, probes in CELLS)
    path.write_text(f'[campaign]\nname = "vm-pins"\nrepetitions = {repetitions}\nduration = "{duration}"\n'
                    f'warmup = "100ms"\n\n{targets}{matrices}'
                    '[pins.gpiod]\nchip = "jl-vgpio"\nline = 0\n\n'
                    '[pins.sysfs]\nchip = "jl-vgpio"\nline = 0\n\n'
                    '[probes.gpio-loopback]\nchip = "jl-vgpio"\nline = 1\n')


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--period", default="1ms")
    parser.add_argument("--duration", default="2s")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--kernels", default="standard,rt")
    args = parser.parse_args()
    kernels = args.kernels.split(",")
    with tempfile.TemporaryDirectory(prefix="jitterlab-vm-pins-") as tmp:
        path, results = Path(tmp) / "vm-pins.toml", Path(tmp) / "results"
        campaign(path, kernels, args.period, args.duration, args.repetitions)
        rc = jitterlab(["run", str(path), "--results", str(results)])
        store = Store(results, create=False)
        runs = store.runs()
        print(f"\nvm-pins at {args.period} ({args.repetitions} x {args.duration}; jitterlab run exit {rc})")
        for kernel in kernels:
            mine = [r for r in runs if r.target == kernel and r.sysinfo_id is not None]
            facts = store.sysinfo(mine[0].sysinfo_id) if mine else None
            info = facts.as_json() if facts is not None else {}  # as stored
            boot = info.get("vm_boot_s")
            print(f"{kernel}: {info.get('kernel_release', '?')} ({info.get('preemption', '?')}), "
                  f"accel {info.get('vm_accel', '?')}, boot {boot:.1f} s" if boot else f"{kernel}: no run")
            table: dict[tuple[str, str, str], list[tuple[float, float]]] = defaultdict(list)
            failed = []
            for r in (r for r in runs if r.target == kernel):
                impl, pin = r.cell.param("impl"), r.cell.param("pin")
                probe = r.cell.param("probe")
                p99, worst = r.metric("p99_rel_period_error", probe), r.metric("max_rel_period_error", probe)
                if r.status == "ok" and p99 is not None and worst is not None:
                    table[(impl, pin, probe)].append((p99, worst))
                else:
                    failed.append(f"{impl}/{pin}/{probe}: {r.status} {r.error or ''}")
            base = table.get(("c-fifo", "vpin", "self"))
            base_p99 = statistics.median(v[0] for v in base) if base else None
            print(f"  {'impl':13} {'pin':6} {'probe':14} {'p99':>9} {'max':>9} {'p99 / c-fifo vpin':>18}")
            for (impl, pin, probe), values in sorted(table.items()):
                p99 = statistics.median(v[0] for v in values)
                worst = max(v[1] for v in values)
                ratio = f"{p99 / base_p99:.2f}" if base_p99 else "-"
                print(f"  {impl:13} {pin:6} {probe:14} {p99 * 100:8.2f}% {worst * 100:8.1f}% {ratio:>18}")
            for line in failed:
                print(f"  not measured: {line}")
            if info.get("vm_accel") == "tcg":
                print("  (TCG: an emulated CPU; the ratios are the interfaces' cost in emulation, not on "
                      "hardware)")
        store.close()


if __name__ == "__main__":
    main()
