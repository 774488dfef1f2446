"""Does jitterlab's switch-latency see what rt-tests' ptsematest sees? Both in one run.

Both measure how long a SCHED_FIFO thread takes to run once another thread on the same CPU makes
it runnable (switch-latency: a semaphore post to a higher-priority thread; ptsematest: a mutex
unlock to a waiting thread), every `--interval`, on one CPU, through `jitterlab run`, alternately,
`--rounds` times each. Printed: each one's mean latency (the median over the rounds) and its
maximum, and the ratio of the means (switch / ptsematest), taken in this one run (ptsematest
gives no percentiles, only min, avg and max). Goal: the means within a factor 2 (the same order:
a context switch on the same CPU), and no wake-up that failed to preempt.

    python bench/switch.py [--interval 1ms] [--seconds 5] [--rounds 3] [--cpu N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

from jitterlab.cli.main import main as jitterlab
from jitterlab.store.catalog import Store

CAMPAIGN = """
[campaign]
name = "switch-bench"
repetitions = {rounds}
duration = "{seconds}s"
[campaign.cpus]
program = "{cpu}"
[[target]]
name = "local"
kind = "local"
workdir = "{workdir}"
[[matrix]]
benchmark = "switch"
threads = 2
priority = 80
interval = "{interval}"
[[matrix]]
benchmark = "ipc-latency"
mechanism = "mutex"
priority = 80
interval = "{interval}"
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", default="1ms")
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cpu", type=int, default=(os.cpu_count() or 1) - 1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jl-switch-bench-") as tmp:
        path = Path(tmp) / "c.toml"
        path.write_text(CAMPAIGN.format(rounds=args.rounds, seconds=args.seconds, cpu=args.cpu,
                                        workdir=Path(tmp) / "target", interval=args.interval))
        rc = jitterlab(["run", str(path), "--results", str(Path(tmp) / "results")])
        if rc not in (0, 1):
            return rc
        runs = Store(Path(tmp) / "results", create=False).runs()
    by: dict[str, list] = {"switch": [], "ipc-latency": []}
    for run in runs:
        if run.status != "ok":
            print(f"{run.benchmark}: {run.status}: {run.error}", file=sys.stderr)
            continue
        by[run.benchmark].append(run)
    if not all(by.values()):
        print("a benchmark has no successful run: no ratio", file=sys.stderr)
        return 1
    rows = {}
    for name, group in by.items():
        mean = statistics.median(r.metric("latency_mean_ns", "") for r in group)
        worst = max(r.metric("latency_max_ns", "") for r in group)
        rows[name] = mean
        print(f"{name:12s} mean latency (median of {len(group)} runs) {mean / 1000:8.2f} µs   "
              f"max {worst / 1000:8.1f} µs")
    failed = sum(r.metric("not_preempted", "") for r in by["switch"])
    ratio = rows["switch"] / rows["ipc-latency"]
    print(f"ratio of the means switch / ptsematest: {ratio:.2f} (goal: 0.5 to 2); "
          f"wake-ups that did not preempt: {failed:.0f} (goal: 0)")
    return 0 if 0.5 <= ratio <= 2 and failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
