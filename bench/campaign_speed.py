"""The loop a person waits for: `jitterlab run` of the quickstart, its wall time over its measured time,
and where the rest goes.

    python bench/campaign_speed.py [--campaign examples/quickstart.toml] [--repetitions 1] [--report]
                                   [--baseline DIR] [--rounds N]

Runs `python -m jitterlab run` on a copy of the campaign (the same cells and, by default, the file's
repetitions: the campaign a person runs; --repetitions 1 a shorter look, its start-up and first load
warm-up spread over fewer runs) as a person would, with `--timings`, and prints the ratio wall
time / measured time (the sum of the runs' durations; goal <= 1.10) and the breakdown of the rest from
the phases the run timed itself: interpreter start-up and imports, preflight (targets, sysinfo, tools),
target preparation (programs built and deployed), each run's phases (load start, probe set-up, load
warm-up, the program's start and end beyond its duration, probe stop, analysis, store writes), the end
screen, and what is left between them. --report also times `jitterlab report` on the results, as
`make demo` writes it. Numbers vary with the machine's load: compare ratios taken in one run;
--baseline DIR measures the same campaign with the jitterlab of another source tree (e.g. `git archive
REV | tar -x -C DIR`; it needs `run --timings`) first, and prints both; --rounds N measures each tree N
times, the trees taking turns, and prints every ratio and their medians. It says first which programs
run as SCHED_FIFO/RR on the machine: another campaign's probe busy-polling the probe's CPU holds it
until its run ends, and this campaign's probes wait for it (a shared machine's numbers are then not
this tree's alone).

The runs' python writes and reads its bytecode cache as a user's does (PYTHONDONTWRITEBYTECODE, set
in some shells and CI, would compile every module at every start: it is left out for them).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN_PHASES = ("loads start", "benchmark prepare", "loads up", "measure", "benchmark close", "loads down",
              "analyse", "commit", "scratch removal")
NAMES = {
    "loads start": "load start (or kept: check)",
    "benchmark prepare": "probe and pin set-up",
    "loads up": "load warm-up (rest) + check",
    "measure": "program start and end, probe stop",
    "benchmark close": "probe and pin teardown",
    "loads down": "load check + read/stop",
    "analyse": "analysis",
    "commit": "store writes (commit)",
    "scratch removal": "run directory removal (or retired)",
}


def shortened(source: Path, repetitions: int, into: Path) -> Path:
    """A copy of the campaign with the same cells and `repetitions` runs each (0: as it is)."""
    text = source.read_text()
    if repetitions:
        text, n = re.subn(r"(?m)^repetitions\s*=\s*\d+", f"repetitions = {repetitions}", text)
        if n != 1:
            sys.exit(f"{source}: no single 'repetitions = N' line to shorten; give --repetitions 0")
    copy = into / source.name
    copy.write_text(text)
    return copy


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "jitterlab", *args]


def child_env(tree: Path) -> dict[str, str]:
    """The environment of a jitterlab of source tree `tree`, with the bytecode cache a user has."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "PYTHONPATH": str(tree)}


def startup_s(tree: Path, tries: int = 3) -> float:
    """The least wall time of `jitterlab --version`: the interpreter and the CLI's imports."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.monotonic()
        subprocess.run(cli("--version"), check=True, capture_output=True, cwd=tree, env=child_env(tree))
        best = min(best, time.monotonic() - t0)
    return best


def measured_s(results: Path, name: str) -> tuple[float, int, int]:
    """The sum of the runs' durations, the number of runs, and of those not ok."""
    sys.path.insert(0, str(ROOT))
    from jitterlab.store.catalog import Store

    store = Store(results, create=False)
    try:
        campaign = store.latest_campaign(name)
        assert campaign is not None, "the run committed nothing"
        runs = store.runs(campaign.id)
    finally:
        store.close()
    total = sum((r.settings.duration_ns or 0) / 1e9 for r in runs if r.settings is not None)
    return total, len(runs), sum(r.status != "ok" for r in runs)


def campaign_name(path: Path) -> str:
    import tomllib

    return str(tomllib.loads(path.read_text())["campaign"]["name"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--campaign", type=Path, default=ROOT / "examples" / "quickstart.toml")
    parser.add_argument("--repetitions", type=int, default=0, help="runs per cell (0: the file's)")
    parser.add_argument("--report", action="store_true", help="also time `jitterlab report`")
    parser.add_argument("--baseline", type=Path, help="a source tree to measure first, for comparison")
    parser.add_argument("--rounds", type=int, default=1,
                        help="measure each tree this many times, the trees taking turns (a noisy machine)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    trees = [("baseline", args.baseline.resolve())] if args.baseline else []
    print(real_time_tasks())
    ratios: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        for name, tree in [*trees, ("this tree", ROOT)]:
            print(f"== {name}: {tree}")
            subprocess.run(cli("--version"), check=True, capture_output=True, cwd=tree, env=child_env(tree))
            ratios[name].append(measure(tree, args.campaign, args.repetitions, args.report))
    if trees or args.rounds > 1:
        print("ratios wall / measured, the trees taking turns: " + "; ".join(
            f"{name} {' '.join(f'{r:.3f}' for r in taken)} (median {statistics.median(taken):.3f})"
            for name, taken in ratios.items()))


def real_time_tasks() -> str:
    """The programs running as SCHED_FIFO/RR before the campaign starts: another busy-polling probe on the
    probe's CPU holds it until its run ends, and this campaign's probe waits that long to start."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, _, tail = stat.read_text().rpartition(")")
        except OSError:  # it ended meanwhile
            continue
        fields = tail.split()
        kernel = int(fields[6]) & 0x00200000 if len(fields) > 6 else 0  # PF_KTHREAD: not a program
        if len(fields) > 38 and fields[38] in ("1", "2") and not kernel:  # policy: SCHED_FIFO, SCHED_RR
            found.append(f"{head.partition('(')[2]} (pid {stat.parent.name}, CPU {fields[36]})")
    if not found:
        return "no real-time program runs on this machine before the campaign"
    return (f"{len(found)} real-time program(s) run on this machine before the campaign, e.g. "
            f"{', '.join(found[:3])}: a probe's CPU they hold makes this campaign's probe wait")


def measure(tree: Path, source: Path, repetitions: int, report: bool) -> float:
    """Run the campaign with the jitterlab of `tree`, print where its time went; its ratio."""
    with tempfile.TemporaryDirectory(prefix="jitterlab-speed-") as tmp_name:
        tmp = Path(tmp_name)
        campaign = shortened(source, repetitions, tmp)
        timings, results = tmp / "timings.jsonl", tmp / "results"
        start_s = time.time()
        done = subprocess.run(cli("run", str(campaign), "--results", str(results), "--timings", str(timings)),
                              cwd=tree, env=child_env(tree), capture_output=True, text=True)
        end_s = time.time()
        if done.returncode not in (0, 1) or not timings.exists():
            sys.exit(f"jitterlab run ended with {done.returncode}:\n{done.stdout}\n{done.stderr}")
        phases = [json.loads(line) for line in timings.read_text().splitlines()]
        measured, n_runs, failed = measured_s(results, campaign_name(campaign))
        report_s = None
        if report:
            t0 = time.monotonic()
            subprocess.run(cli("report", "--results", str(results), "-o", str(tmp / "report.html")),
                           cwd=tree, env=child_env(tree), check=True, capture_output=True)
            report_s = time.monotonic() - t0
    show(phases, start_s, end_s, measured, n_runs, failed, report_s, startup_s(tree))
    return (end_s - start_s) / measured


def show(phases: list[dict], start_s: float, end_s: float, measured: float, n_runs: int, failed: int,
         report_s: float | None, startup: float) -> None:
    wall = end_s - start_s
    total: dict[str, float] = defaultdict(float)
    for p in phases:
        total[p["phase"]] += p["end_s"] - p["start_s"]
    first = min(p["start_s"] for p in phases)
    last = max(p["end_s"] for p in phases)
    per_run = measured / n_runs if n_runs else 0.0
    print(f"{n_runs} runs of {per_run:g} s ({failed} not ok); measured {measured:.1f} s, wall {wall:.1f} s: "
          f"ratio {wall / measured:.3f} (goal <= 1.10)")
    load = Path("/proc/loadavg").read_text().split()[0]
    print(f"  (machine load at the end: {load} on {len(os.sched_getaffinity(0))} CPUs)")
    rows: list[tuple[str, float]] = [
        ("start-up: interpreter, imports, campaign file", first - start_s),
        ("  of which `jitterlab --version` alone", startup),
        ("preflight (targets, sysinfo, tools)", total["preflight (open targets)"]),
        ("store open, campaign row", total["open (store, preflight)"] - total["preflight (open targets)"]),
        ("announce", total["announce"]),
        ("target prepare (sweep, throttling, sysinfo row)",
         total["target prepare"] - total["deploy (build programs)"]),
        ("programs built and deployed", total["deploy (build programs)"]),
        ("analysis warm-up waited for", total["analysis warm (waited)"]),
    ]
    inside = 0.0
    for name in RUN_PHASES:
        seconds = total[name] - (measured if name == "measure" else 0.0)
        inside += total[name]
        rows.append((f"run: {NAMES[name]}", seconds))
    rows.append(("run: the rest (directories, records)", total["run"] - inside))
    runner_rest = (total["measure (the runner)"] - total["target prepare"] - total["analysis warm (waited)"]
                   - total["run"])
    rows.append(("runner: between runs", runner_rest))
    rows.append(("end screen (tables, summary)", total["end (tables, summary screen)"]))
    rows.append(("close", total["close"]))
    rows.append(("exit: interpreter shutdown", end_s - last))
    print(f"{'where the rest goes':50s} {'s':>7s} {'of wall':>8s} {'per run':>9s}")
    for name, seconds in rows:
        print(f"{name:50s} {seconds:7.2f} {seconds / wall:8.1%} {seconds / max(1, n_runs) * 1e3:7.0f}ms")
    print(f"{'the runs: their durations (measured)':50s} {measured:7.2f} {measured / wall:8.1%}")
    if report_s is not None:
        print(f"`jitterlab report` afterwards (make demo): {report_s:.2f} s; with it the ratio is "
              f"{(wall + report_s) / measured:.3f}")


if __name__ == "__main__":
    main()
