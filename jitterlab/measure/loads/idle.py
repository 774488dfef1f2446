"""The `idle` load: start nothing, but measure how idle the target really was.

Every load reports the same system activity (`system_metrics`), so an "idle" run on a busy
machine shows up in the data instead of passing for a quiet one.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.measure.loads.base import LOADS, LoadContext, LoadSpec, Sustained
from jitterlab.model.errors import RunFailed
from jitterlab.model.params import parse_options
from jitterlab.model.records import Metric
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import SharesControllerFiles, has


@dataclass(frozen=True)
class SystemSample:
    """One reading of /proc: uptime, 1-minute load average, context switches, per-CPU ticks."""

    uptime_s: float
    loadavg_1m: float
    ctxt: int
    cpu_ticks: dict[str, tuple[int, ...]]  # "cpu" (all) or "cpu3" -> user nice system idle ...


def sample_system(target: Target) -> SystemSample:
    """Read /proc/uptime, /proc/loadavg and /proc/stat with one command (here: read them)."""
    files = ["/proc/uptime", "/proc/loadavg", "/proc/stat"]
    here = has(target, SharesControllerFiles)
    if here is not None:
        text, stderr = here.read_here(files), "unreadable here"
    else:
        done = target.run(["cat", *files], timeout_s=10.0)
        text, stderr = done.stdout, done.stderr.strip()
    lines = text.splitlines()
    try:
        ticks, ctxt = {}, None
        for line in lines[2:]:
            key, *values = line.split()
            if key.startswith("cpu"):
                ticks[key] = tuple(int(v) for v in values)
            elif key == "ctxt":
                ctxt = int(values[0])
        return SystemSample(float(lines[0].split()[0]), float(lines[1].split()[0]), ctxt, ticks)
    except (IndexError, ValueError, TypeError):
        raise RunFailed(f"could not read /proc on {target.name}: {stderr}") from None


def system_metrics(
    before: SystemSample, after: SystemSample, cpus: tuple[int, ...] | None = None,
    probe_cpu: int | None = None,
) -> list[Metric]:
    """Load average at the end, context switches per second and CPU busy fraction in between.

    Busy = user+nice+system+irq+softirq over all ticks (idle, iowait and steal included), summed
    over `cpus` (all CPUs if None) except `probe_cpu`: a busy-polling probe keeps its CPU 100 %
    busy by design, which would make an idle machine read as loaded. A metric whose interval was
    too short to tell is left out (so is the busy fraction when the probe's CPU is the only one).
    """
    metrics = [Metric("load_loadavg_1m", after.loadavg_1m, "")]
    elapsed_s = after.uptime_s - before.uptime_s
    if elapsed_s > 0 and before.ctxt is not None and after.ctxt is not None:
        rate = (after.ctxt - before.ctxt) / elapsed_s
        metrics.append(Metric("load_ctxt_switches_per_s", rate, "1/s"))
    if cpus:
        keys = [f"cpu{c}" for c in cpus if c != probe_cpu]
    elif probe_cpu is not None:
        keys = [k for k in after.cpu_ticks if k != "cpu" and k != f"cpu{probe_cpu}"]
    else:
        keys = ["cpu"]
    busy = total = 0
    for key in keys:
        if key not in before.cpu_ticks or key not in after.cpu_ticks:
            continue
        delta = [a - b for a, b in zip(after.cpu_ticks[key], before.cpu_ticks[key], strict=False)]
        busy += sum(delta[i] for i in (0, 1, 2, 5, 6) if i < len(delta))
        total += sum(delta[:8])  # guest time is already counted in user
    if total > 0:
        metrics.append(Metric("load_cpu_busy_fraction", busy / total, "fraction"))
    return metrics


def validate_options(options: dict, where: str) -> dict:
    """idle takes no options."""
    return parse_options((), options, where, "load 'idle'")


class IdleLoad(Sustained):
    """Starts nothing; measures the system's own activity over the run. It stays "up" between the
    runs that use it, so those runs read /proc at their start and end and nothing else: no
    directory of its own, nothing to start or stop (two round trips less per run: on an emulated
    or small board each is a program started there)."""

    def __init__(self) -> None:
        self._ctx: LoadContext | None = None
        self._before: SystemSample | None = None

    def start(self, ctx: LoadContext) -> None:
        validate_options(ctx.options, "load idle")
        self._ctx = ctx
        self._before = sample_system(ctx.target)

    def check(self) -> None:
        """Nothing can fail: there is nothing running."""

    def mark(self) -> None:
        assert self._ctx is not None, "start() comes first"
        self._before = sample_system(self._ctx.target)

    def snapshot(self) -> list[Metric]:
        return self.stop()

    def stop(self) -> list[Metric]:
        if self._ctx is None or self._before is None:
            return []
        after = sample_system(self._ctx.target)
        return system_metrics(self._before, after, self._ctx.cpus, self._ctx.probe_cpu)


LOADS.add(
    "idle",
    "start nothing; measure the system's own activity",
    LoadSpec(IdleLoad, {}),
)
