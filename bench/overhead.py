"""Dead time of a campaign: wall time against the time actually measured, and where the rest goes.

    python bench/overhead.py [--duration 1s] [--repetitions 2] [--loads idle,cpu]

Runs a fixed campaign on this machine (squarewave: python and c-fifo at 10 ms with the vpin probe,
under idle and cpu load, or the loads given) and prints, per load, the wall time of a run divided by
its measured duration (goal: <= 1.10 for idle cells), the whole campaign's ratio, and the time spent
in each phase of a run (load start or keeping, the rest of its warm-up, observer start, the program,
the observer's stop, loads down, analysis, commit, and the rest), per load. A load that reports as
it goes (sched) is kept up between the two impls' runs of a repetition; cpu is started every run.

What a run costs besides its duration that is not jitterlab's: the program's start and end (an
interpreter's start: ~10-50 ms for Debian's python3, ~190 ms through a pyenv shim) and for a loaded
cell `load_warmup` (300 ms). Each impl's table shows them apart from what jitterlab adds itself.
The campaign's `warmup` is part of the duration (its edges are dropped from the metrics).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import inspect
import statistics
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

from jitterlab import plugins
from jitterlab.campaign.file import load_campaign
from jitterlab.execution.loads import TargetLoads
from jitterlab.execution.preflight import open_targets
from jitterlab.execution.runner import Runner
from jitterlab.measure.benchmarks import squarewave
from jitterlab.model.units import parse_duration_ns
from jitterlab.store.catalog import Store

PHASES: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))  # "load impl" -> phase -> s
RUNS: Counter[str] = Counter()  # "load impl" -> runs
_current_key = ["?"]


def timed(owner, name: str, phase: str) -> None:
    static = isinstance(inspect.getattr_static(owner, name), staticmethod)
    original = getattr(owner, name)

    @functools.wraps(original)
    def wrapper(*args, **kwargs):
        t0 = time.monotonic()
        try:
            return original(*args, **kwargs)
        finally:
            PHASES[_current_key[0]][phase] += time.monotonic() - t0

    setattr(owner, name, staticmethod(wrapper) if static else wrapper)


def instrument() -> None:
    one_run = Runner._one_run

    @functools.wraps(one_run)
    def whole_run(self, session, campaign_id, cell, rep, *args):
        _current_key[0] = f"{cell.load} {cell.param('impl')}"
        RUNS[_current_key[0]] += 1
        t0 = time.monotonic()
        try:
            return one_run(self, session, campaign_id, cell, rep, *args)
        finally:
            PHASES[_current_key[0]]["(whole run)"] += time.monotonic() - t0

    Runner._one_run = whole_run
    vpin = plugins.PROBES.get("vpin", "bench")
    timed(TargetLoads, "start", "load start (or kept: check)")
    timed(TargetLoads, "up", "load warm-up (rest) + check")
    timed(TargetLoads, "down", "load check + read/stop")
    timed(Runner, "_commit", "commit")
    timed(vpin, "start", "probe start")
    timed(vpin, "stop", "probe stop")
    for kind in {type(entry.obj) for entry in plugins.IMPLS}:
        timed(kind, "run", "program: start and end")
    timed(plugins.PINS.get("vpin", "bench"), "setup", "pin setup")
    timed(squarewave, "_measurement", "analysis")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="1s")
    parser.add_argument("--repetitions", type=int, default=2)
    parser.add_argument("--loads", default="idle,cpu", help="the matrix's loads, comma-separated")
    args = parser.parse_args()
    loads = ", ".join(f'"{name}"' for name in args.loads.split(","))
    duration_s = parse_duration_ns(args.duration, "--duration") / 1e9
    instrument()
    with tempfile.TemporaryDirectory(prefix="jitterlab-overhead-") as tmp:
        path = Path(tmp) / "overhead.toml"
        path.write_text(
            f'[campaign]\nname = "overhead"\nrepetitions = {args.repetitions}\n'
            f'duration = "{args.duration}"\n[matrix]\nimpl = ["python", "c-fifo"]\n'
            f'period = ["10ms"]\nload = [{loads}]\nprobe = "vpin"\n')
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
        print(f"  {load:6s} run wall / measured: median {statistics.median(walls) / duration_s:.3f}, "
              f"max {max(walls) / duration_s:.3f}")
    measured = len(runs) * duration_s
    print(f"campaign: {t2 - t0:.2f} s wall (open + preflight {t1 - t0:.2f} s) for {measured:g} s measured: "
          f"ratio {(t2 - t0) / measured:.3f} (runs only {(t2 - t1) / measured:.3f})")
    nominal_s = duration_s  # the campaign's warm-up is part of the program's duration
    for key, phases in sorted(PHASES.items()):
        n = RUNS[key]
        whole = phases.pop("(whole run)")
        phases["(the rest: scratch, records, sampling)"] = whole - sum(phases.values())
        phases["program: start and end"] -= nominal_s * n
        phases["program: duration"] = nominal_s * n
        own = whole - phases["program: duration"] - phases["program: start and end"]
        print(f"{key}: time per run by phase (mean over {n} runs; whole run {whole / n * 1e3:.0f} ms; "
              f"jitterlab's own {own / n * 1e3:.0f} ms, i.e. {(nominal_s * n + own) / (nominal_s * n):.3f}x "
              "without the program's start and end):")
        for phase, seconds in sorted(phases.items(), key=lambda kv: -kv[1]):
            print(f"  {phase:40s} {seconds / n * 1e3:6.0f} ms")


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()
