"""How fast and how lean is reading a kernel trace, and attributing late periods from it? Events/s.

    python bench/trace_read.py [--seconds 2] [--dat FILE ...]

Without --dat it records traces on this machine (root; tracefs is set back as it was) while
`stress-ng --switch 2` makes scheduler events, for a quarter of the seconds and for all of them, so
that memory can be seen growing with the events, and writes them as .dat files (tracing/datfile.py).
Each file is read in a fresh subprocess by tracing/reader.py (libtracecmd through the C helper,
built beforehand, not timed), the first also by tracing/report_text.py (`trace-cmd report` text).
Printed per file and reader: events, wall and CPU seconds (the process and its children: the helper
or trace-cmd), events per CPU second, the peak of Python's heap (tracemalloc: numpy's arrays) and of
the child process's resident memory, each per event. Then the attribution of 100 late periods of the
busiest task of the larger trace (analysis/attribution.py), parse + attribution in events/s.
The machine is shared and noisy: CPU seconds say more than wall seconds; the goal is 10^6 events
in <= 1 s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import json, resource, sys, time, tracemalloc
from pathlib import Path
from jitterlab.tracing import reader, report_text
which, dat = sys.argv[1], Path(sys.argv[2])
tracemalloc.start()
wall, cpu = time.perf_counter(), time.process_time()
kids = resource.getrusage(resource.RUSAGE_CHILDREN)
events = reader.read(dat) if which == "libtracecmd" else report_text.read_report(dat)
done = resource.getrusage(resource.RUSAGE_CHILDREN)
kid_cpu = done.ru_utime + done.ru_stime - kids.ru_utime - kids.ru_stime
wall, cpu = time.perf_counter() - wall, time.process_time() - cpu + kid_cpu
_, heap = tracemalloc.get_traced_memory()
print(json.dumps({"events": len(events), "wall": wall, "cpu": cpu, "heap": heap,
                  "rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
                  "child_rss": done.ru_maxrss * 1024}))
"""
_ATTRIBUTE = r"""
import json, sys, time
from pathlib import Path
import numpy as np
from jitterlab.analysis.attribution import LatePeriod, attribute
from jitterlab.model.trace import Kind
from jitterlab.tracing import reader
dat = Path(sys.argv[1])
wall, cpu = time.perf_counter(), time.process_time()
events = reader.read(dat)
rows = events.rows
woken = rows[rows["kind"] == Kind.WAKING]
pids, counts = np.unique(woken["pid"], return_counts=True)
pid = int(pids[np.argmax(counts)])  # the busiest task: its wake-ups are the "due times"
mine = woken[woken["pid"] == pid]
picks = mine[np.linspace(0, len(mine) - 2, 100).astype(int)]
periods = [LatePeriod(int(r["time_ns"]), int(r["time_ns"]) + 200_000, frozenset({pid}), int(r["number"]))
           for r in picks]
parsed = time.process_time()
out = attribute(events, periods, idle_exit_ns=None)
cpu_all, wall = time.process_time() - cpu, time.perf_counter() - wall
assert all(sum(p.duration_ns for p in a.parts) + a.remainder_ns == a.lateness_ns for a in out)
print(json.dumps({"events": len(events), "periods": len(out), "cpu": cpu_all, "wall": wall,
                  "attribution_cpu": time.process_time() - parsed}))
"""


def record(seconds: float, out: Path) -> Path:
    from jitterlab.targets.local import LocalTarget
    from jitterlab.tracing import datfile
    from jitterlab.tracing.recorder import Recorder

    target = LocalTarget(workdir=str(out.parent / "wd"))
    try:
        with Recorder(target, str(out.parent / "wd"), duration_ns=int(seconds * 1e9),
                      buffer_kb=int(40_000 * seconds + 4096)) as rec:
            subprocess.run(["stress-ng", "--switch", "2", "--timeout", f"{seconds:g}", "--quiet"], check=True)
            raw = rec.stop(out.parent / out.stem)
    finally:
        target.close()
    if raw.lost:
        print(f"  ({out.name}: the kernel dropped {raw.lost} events)")
    return datfile.build(raw, out)


def child(code: str, *args: str) -> dict:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of the longer recording")
    parser.add_argument("--dat", type=Path, nargs="*", help="read these trace files instead of recording")
    args = parser.parse_args()
    from jitterlab.tracing import reader

    reader.helper()  # built once, outside the timings
    with tempfile.TemporaryDirectory() as tmp:
        if args.dat:
            files = args.dat
        else:
            if os.geteuid() != 0:
                print("recording needs root: run as root, or give --dat FILE")
                return 2
            print(f"recording {args.seconds / 4:g} s and {args.seconds:g} s of stress-ng --switch 2 ...")
            files = [record(s, Path(tmp) / f"switch-{s:g}s.dat") for s in (args.seconds / 4, args.seconds)]
        print(f"{'file':<22} {'reader':<16} {'events':>9} {'wall s':>7} {'cpu s':>6} {'events/cpu s':>13} "
              f"{'heap B/ev':>9} {'child rss B/ev':>14}")
        for n, dat in enumerate(files):
            # the text reader is for small windows: on the smaller file only (minutes on the larger)
            for which in ("libtracecmd", "trace-cmd-report")[:2 if n == 0 else 1]:
                got = child(_CHILD, which, str(dat))
                n = max(got["events"], 1)
                print(f"{dat.name:<22} {which:<16} {got['events']:>9} {got['wall']:>7.2f} {got['cpu']:>6.2f} "
                      f"{got['events'] / got['cpu']:>13,.0f} {got['heap'] / n:>9.0f} "
                      f"{got['child_rss'] / n:>14.0f}")
        got = child(_ATTRIBUTE, str(files[-1]))
        print(f"parse + attribution of {got['periods']} late periods: {got['events']} events in "
              f"{got['cpu']:.2f} CPU s ({got['wall']:.2f} s wall) = {got['events'] / got['cpu']:,.0f} "
              f"events/s; the attribution alone {got['attribution_cpu']:.3f} CPU s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
