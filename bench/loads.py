"""For each load: what it achieved on this machine, and what supervising it cost the runner.

Runs each load ~3 s on the local target (start, a check every 0.5 s like a run, stop) and prints
its headline metric and the CPU seconds per wall second of this process (RUSAGE_SELF: the
loads' own processes are children and are not counted). Usage: python bench/loads.py [NAME...]
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time

import jitterlab.measure.loads  # noqa: F401  (registers the built-in loads)
from jitterlab.measure.loads.base import LOADS, LoadContext
from jitterlab.model.errors import RunFailed
from jitterlab.targets.local import LocalTarget

RUN_S = 3.0
CHECK_EVERY_S = 0.5
HEADLINE = {
    "idle": "load_cpu_busy_fraction",
    "cpu": "load_bogo_ops_per_s",
    "memory": "load_bogo_ops_per_s",
    "net": "load_net_mbit_per_s",
    "disk": "load_disk_mb_per_s",
    "sched": "load_sched_messages_per_s",
}
OPTIONS = {"net": {"port": 15241}, "disk": {"size": "64M"}}


def cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def measure(name: str, target: LocalTarget, scratch: str) -> str:
    load = LOADS.get(name, "bench").factory()
    ctx = LoadContext(target, f"{scratch}/{name}", options=OPTIONS.get(name, {}),
                      max_duration_s=RUN_S + 60)
    cpu0, t0 = cpu_s(), time.monotonic()
    try:
        load.start(ctx)
        while time.monotonic() - t0 < RUN_S:
            time.sleep(CHECK_EVERY_S)
            load.check()
        metrics = {m.name: m for m in load.stop()}
    except RunFailed as exc:
        load.stop()
        return f"{name:7s} FAILED: {exc.reason}"
    wall = time.monotonic() - t0
    overhead = (cpu_s() - cpu0) / wall
    extra = ", ".join(f"{m.name}={m.value:.4g} {m.unit}" for m in metrics.values()
                      if m.name != HEADLINE[name] and m.name in (
                          "load_net_packets_per_s", "load_net_loss_fraction",
                          "load_cpu_busy_fraction", "load_sched_rounds"))
    head = metrics[HEADLINE[name]]
    return (f"{name:7s} {head.name}={head.value:.4g} {head.unit:11s} runner "
            f"{overhead:.4f} CPU-s/s over {wall:.1f}s  {extra}")


def main(names: list[str]) -> None:
    scratch = tempfile.mkdtemp(prefix="jitterlab-bench-loads-")
    target = LocalTarget(workdir=scratch)
    try:
        for name in names or list(HEADLINE):
            print(measure(name, target, scratch), flush=True)
    finally:
        target.close()


if __name__ == "__main__":
    main(sys.argv[1:])
