"""How finely the vpin observer sees on this machine: poll interval, blind time, sched class.

Builds programs/ into a temporary copy (as the runner does on a target), runs the
observer on an idle virtual pin for a few seconds, and prints what it measured.

    python bench/probe_resolution.py [--seconds 5] [--cpu N]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import jitterlab.programs
from jitterlab.measure.squarewave.probes.logs import read_observer


def build(dst: Path) -> Path:
    src = Path(jitterlab.programs.__file__).parent / "c"
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns("observer", "c-*", "*.o"))
    subprocess.run(["make", "-C", str(dst), "observer"], check=True, capture_output=True)
    return dst / "observer"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seconds", type=float, default=5.0)
    p.add_argument(
        "--cpu",
        type=int,
        default=max(os.sched_getaffinity(0)),
        help="CPU to pin the observer to (default: the last one)",
    )
    args = p.parse_args()

    shm = Path("/dev/shm") if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory() as work, tempfile.TemporaryDirectory(dir=shm) as pins:
        observer = build(Path(work) / "c")
        pin = Path(pins) / "pin"
        pin.write_bytes(b"0\n")
        out, stats = Path(work) / "obs.bin", Path(work) / "obs.json"
        argv = [
            str(observer),
            "--pin",
            str(pin),
            "--out",
            str(out),
            "--stats",
            str(stats),
            "--ready",
            str(Path(work) / "ready"),
            "--cpu",
            str(args.cpu),
            "--max-duration-ns",
            str(int(args.seconds * 1e9)),
            "--max-edges",
            "1024",
        ]
        subprocess.run(argv, check=True, timeout=args.seconds + 60)
        s = read_observer(out, stats).stats

    span_ns = max(s["end_ns"] - s["start_ns"], 1)
    print(
        f"observer on cpu {s['cpu']}, sched {s['sched']} prio {s['prio']}, "
        f"mlock {s['mlock']}, {span_ns / 1e9:.2f} s"
    )
    print(
        f"poll interval  p50 {s['poll_ns_p50']} ns   p99.9 {s['poll_ns_p999']} ns   "
        f"max gap {s['poll_ns_max']} ns"
    )
    print(f"polls/s        {s['polls'] / (span_ns / 1e9):,.0f}")
    print(
        f"blind          {s['blind_intervals']} intervals > {s['blind_threshold_ns']} ns, "
        f"{s['blind_ns'] / span_ns:.3%} of the time"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
