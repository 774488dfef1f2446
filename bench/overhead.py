"""Dead time of a campaign: wall time against the time actually measured, and where the rest goes.

    python bench/overhead.py [--duration 1s] [--repetitions 2]

Runs a fixed campaign on this machine (squarewave: python and c-fifo at 10 ms with the vpin probe,
under idle and cpu load) and prints, per load, the wall time of a run divided by its measured
duration (goal: <= 1.10 for idle cells), the whole campaign's ratio, and the time spent in each
phase of a run (load start and warm-up, observer start, the program, the observer's stop, load
stop, analysis, commit), summed over the runs.

What a run costs besides its duration, by design: the campaign's `warmup` (its edges are dropped;
50 ms here), the program's start, and for a loaded cell the load's start and `load_warmup`
(300 ms). At 1 s runs those alone are 1.05x idle and 1.35x loaded; longer runs amortize them.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import statistics
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from jitterlab import plugins
from jitterlab.benchmarks import squarewave
from jitterlab.campaign import load_campaign
from jitterlab.preflight import open_targets
from jitterlab.runner import Runner
from jitterlab.store.catalog import Store
from jitterlab.units import parse_duration_ns

PHASES: dict[str, float] = defaultdict(float)


def timed(owner, name: str, phase: str) -> None:
    static = isinstance(inspect.getattr_static(owner, name), staticmethod)
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        t0 = time.monotonic()
        try:
            return original(*args, **kwargs)
        finally:
            PHASES[phase] += time.monotonic() - t0

    setattr(owner, name, staticmethod(wrapper) if static else wrapper)


def instrument() -> None:
    vpin = plugins.PROBES.get("vpin", "bench")
    timed(Runner, "_start_loads", "load start + warm-up")
    timed(Runner, "_stop_loads", "load stop")
    timed(Runner, "_commit", "commit")
    timed(vpin, "start", "probe start")
    timed(vpin, "stop", "probe stop")
    for kind in {type(entry.obj) for entry in plugins.IMPLS}:
        timed(kind, "run", "program")
    timed(plugins.PINS.get("vpin", "bench"), "setup", "pin setup")
    timed(squarewave, "_measurement", "analysis")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="1s")
    parser.add_argument("--repetitions", type=int, default=2)
    args = parser.parse_args()
    duration_s = parse_duration_ns(args.duration, "--duration") / 1e9
    instrument()
    with tempfile.TemporaryDirectory(prefix="jitterlab-overhead-") as tmp:
        path = Path(tmp) / "overhead.toml"
        path.write_text(
            f'[campaign]\nname = "overhead"\nrepetitions = {args.repetitions}\n'
            f'duration = "{args.duration}"\n[matrix]\nimpl = ["python", "c-fifo"]\n'
            'period = ["10ms"]\nload = ["idle", "cpu"]\nprobe = "vpin"\n')
        campaign = load_campaign(path)
        store = Store(Path(tmp) / "results")
        t0 = time.monotonic()
        sessions = open_targets(campaign)
        try:
            runner = Runner(campaign, store)
            cid = runner.campaign_id()
            t1 = time.monotonic()
            runner.execute(sessions, cid)
            t2 = time.monotonic()
        finally:
            for s in sessions:
                s.target.close()
        runs = store.runs(cid)
        store.close()
    by_load: dict[str, list[float]] = defaultdict(list)
    for r in runs:
        by_load[r.load].append(r.wall_s)
    print(f"{len(runs)} runs of {duration_s:g} s; failed: {sum(r.status != 'ok' for r in runs)}")
    for load, walls in sorted(by_load.items()):
        print(f"  {load:5s} run wall / measured: median {statistics.median(walls) / duration_s:.3f}, "
              f"max {max(walls) / duration_s:.3f}")
    measured = len(runs) * duration_s
    print(f"campaign: {t2 - t0:.2f} s wall (open + preflight {t1 - t0:.2f} s) for {measured:g} s measured: "
          f"ratio {(t2 - t0) / measured:.3f} (runs only {(t2 - t1) / measured:.3f})")
    print("time per phase, summed over the runs:")
    for phase, seconds in sorted(PHASES.items(), key=lambda kv: -kv[1]):
        print(f"  {phase:22s} {seconds:7.2f} s  ({seconds / len(runs) * 1e3:6.0f} ms per run)")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
