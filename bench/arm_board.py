"""An emulated ARM board watched from outside, in one run: the two outside probes against the
program's own log, and what the board costs to bring up.

    python bench/arm_board.py [--machine virt-arm64] [--period 20ms] [--duration 2s]

Boots one board (its root and kernel from the cache; a first run builds them), runs c-fifo on
gpiomem (a register write) and c-gpiod on the character device, each seen by the program itself
(self), by qemu's trace of the GPIO controller (`emulator`, virt boards only) and by the level
register polled over QMP (`register-poll`). Prints the board's boot time, and per cell and probe
the edges it saw in the measured span, how many of the program's logged edges (warm-up included) it
paired and missed, its resolution, its blind share and its p50 lag spread against the program's
timestamps. Emulated CPU: the figures say how
faithfully each probe follows an emulated pin, never how the board keeps time.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from jitterlab.cli.main import main as jitterlab
from jitterlab.report.traits import observer, own, subject_of
from jitterlab.store.catalog import Store

BOARDS = {  # machine: (gpiod chip, gpiomem soc, line, outside probes)
    "virt-arm64": ("9030000.pl061", "pl061", 2, ["emulator", "register-poll"]),
    "virt-armhf": ("9030000.pl061", "pl061", 2, ["emulator", "register-poll"]),
    "sabrelite": ("209c000.gpio", "imx6", 5, ["register-poll"]),
}


def campaign(path: Path, machine: str, period: str, duration: str) -> None:
    chip, soc, line, outside = BOARDS[machine]
    probes = str(["self", *outside]).replace("'", '"')
    path.write_text(f"""[campaign]
name = "arm-board-bench"
repetitions = 1
duration = "{duration}"
warmup = "100ms"
[[target]]
name = "board"
kind = "qemu"
machine = "{machine}"
[pins.gpiod]
chip = "{chip}"
line = {line}
[pins.gpiomem]
soc = "{soc}"
line = {line}
[probes.emulator]
line = {line}
[probes.register-poll]
soc = "{soc}"
line = {line}
[[matrix]]
impl = "c-fifo"
pin = "gpiomem"
period = "{period}"
probe = {probes}
[[matrix]]
impl = "c-gpiod"
pin = "gpiod"
period = "{period}"
probe = {probes}
""")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--machine", default="virt-arm64", choices=sorted(BOARDS))
    parser.add_argument("--period", default="20ms")
    parser.add_argument("--duration", default="2s")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "c.toml"
        campaign(path, args.machine, args.period, args.duration)
        rc = jitterlab(["run", str(path), "--results", f"{tmp}/r"])
        store = Store(Path(tmp) / "r", create=False)
        runs = store.runs()
        facts = store.sysinfo(runs[0].sysinfo_id) if runs else None
        info = facts.as_json() if facts is not None else {}  # as stored
        print(f"\n{args.machine}: ready {info.get('vm_boot_s', 0):.1f} s after qemu started "
              f"({info.get('vm_accel')}; kernel {info.get('kernel_release')}); jitterlab exit {rc}")
        print(f"{'cell':<20} {'probe':<14} {'edges':>6} {'paired':>7} {'missed':>7} {'resolution':>11} "
              f"{'blind':>7} {'lag p50':>9}")
        for r in runs:
            cell = f"{r.param('impl')} @{r.param('pin')}"
            probe = subject_of(r)
            if r.status != "ok":
                print(f"{cell:<20} {probe:<14} {r.status}: {r.error}")
                continue
            edges = own(r, "n_edges") or 0
            if not observer(probe).independent:  # the program's own timestamps: nothing to pair
                print(f"{cell:<20} {probe:<14} {edges:>6.0f}")
                continue
            paired, missed = own(r, "align_matched_edges") or 0, own(r, "missed_edges") or 0
            resolution = own(r, "probe_resolution_ns") or 0
            blind = (own(r, "blind_time_ns") or 0) / max(int(args_ns(args.duration)), 1)
            lag = own(r, "self_lag_spread_p50_ns")
            watched = "" if own(r, "program_pin_watched") == 1 else "  (not the program's pin)"
            lag_us = "" if lag is None else f"{lag / 1e3:.0f}us"
            print(f"{cell:<20} {probe:<14} {edges:>6.0f} {paired:>7.0f} {missed:>7.0f} "
                  f"{resolution / 1e3:>9.1f}us {blind:>6.1%} {lag_us:>9}{watched}")
        print("emulated CPU (qemu TCG): how faithfully each probe follows an emulated pin, never "
              "timing evidence")


def args_ns(duration: str) -> int:
    from jitterlab.model.units import parse_duration_ns

    return parse_duration_ns(duration, "--duration")


if __name__ == "__main__":
    main()
