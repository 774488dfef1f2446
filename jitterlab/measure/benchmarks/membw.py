"""The `membw` benchmark: memory copy bandwidth with mbw (memcpy, a plain loop, or block memcpy).

mbw copies one array into another `-n` times and prints each iteration's bandwidth. A short
calibration run (2 iterations) tells how long one iteration takes, so the measured run does as
many as fit in campaign.warmup + campaign.duration; iterations inside the warm-up are dropped.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, auto, choice, format_size, size
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import Samples
from jitterlab.targets.base import CommandTimeout
from jitterlab.targets.processes import describe_exit, pinned, run_recorded

METHODS = {"memcpy": "-t0", "dumb": "-t1", "mcblock": "-t2"}
MIB = 1 << 20
MAX_ITERATIONS = 100_000
CALIBRATION_ITERATIONS = 2
_CACHES = "cat /sys/devices/system/cpu/cpu0/cache/index*/size 2>/dev/null; exit 0"
_LINE = re.compile(
    r"^(?P<i>\d+|AVG)\s+Method:\s+(?P<method>\S+)\s+Elapsed:\s+(?P<elapsed>\S+)\s+"
    r"MiB:\s+(?P<mib>\S+)\s+Copy:\s+(?P<copy>\S+)\s+MiB/s\s*$"
)


def parse_output(text: str) -> list[tuple[float, float]]:
    """(elapsed s, MiB/s) of each iteration mbw printed, in order.

    Raises RunFailed (with the output attached) when there is none or the AVG line is missing
    (mbw prints it last: without it the output is cut short)."""
    raw = {"mbw.txt": text.encode()}
    iterations: list[tuple[float, float]] = []
    average = False
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        try:
            elapsed, copy = float(match["elapsed"]), float(match["copy"])
        except ValueError:
            raise RunFailed(f"mbw: cannot read the numbers of {line.strip()!r}", attachments=raw) from None
        if match["i"] == "AVG":
            average = True
        elif int(match["i"]) != len(iterations):
            raise RunFailed(f"mbw: iteration {match['i']} follows {len(iterations)} others; output garbled",
                            attachments=raw)
        else:
            iterations.append((elapsed, copy))
    if not iterations:
        raise RunFailed("mbw printed no iteration (expected lines like "
                        "'0\\tMethod: MEMCPY\\tElapsed: ...\\tCopy: ... MiB/s')", attachments=raw)
    if not average:
        raise RunFailed(f"mbw's output ends after {len(iterations)} iterations without its AVG line "
                        "(cut short?)", attachments=raw)
    if not all(math.isfinite(c) and c > 0 for _, c in iterations):
        raise RunFailed("mbw's timer did not resolve an iteration (bandwidth inf or 0); raise matrix.size",
                        "unmeasurable", attachments=raw)
    return iterations


def bandwidth_metrics(iterations: list[tuple[float, float]], warmup_s: float) -> tuple[list[Metric], Samples]:
    """Metrics of the iterations after the warm-up (at least the last one is kept)."""
    dropped, spent = 0, 0.0
    while dropped < len(iterations) - 1 and spent + iterations[dropped][0] <= warmup_s:
        spent += iterations[dropped][0]
        dropped += 1
    copies = np.array([c for _, c in iterations[dropped:]], dtype=np.float64)
    mean = len(copies) / float(np.sum(1.0 / copies))  # same bytes each time: total MiB / total time
    metrics = [
        Metric("bandwidth_mib_per_s", mean, "MiB/s", "", "higher"),
        Metric("bandwidth_min_mib_per_s", float(copies.min()), "MiB/s", "", "higher"),
        Metric("bandwidth_max_mib_per_s", float(copies.max()), "MiB/s", "", "higher"),
        Metric("iterations", float(len(copies)), "count", "", "none"),
        Metric("warmup_iterations", float(dropped), "count", "", "none"),
    ]
    return metrics, Samples(np.round(copies * 1024).astype(np.int64), "KiB/s")


def iterations_for(seconds: float, calibration: list[tuple[float, float]]) -> int:
    """How many iterations fit in `seconds`, judged by the slowest calibration iteration."""
    per_iteration = max(e for e, _ in calibration)
    if per_iteration <= 0:
        return MAX_ITERATIONS
    return max(1, min(MAX_ITERATIONS, math.ceil(seconds / per_iteration)))


@dataclass(frozen=True)
class MembwCell(Options):
    method: str
    size_bytes: int = key("size")  # of each of the two arrays
    block_bytes: int | str = key("block")  # "auto": mbw's own


class Membw(BenchmarkBase):
    headline = ("bandwidth_mib_per_s", "bandwidth_min_mib_per_s")
    metrics = ("bandwidth_max_mib_per_s", "iterations", "warmup_iterations")  # bandwidth_metrics' others

    params = (
        Param("method", "memcpy (mbw -t0), dumb (a b[i]=a[i] loop, -t1) or mcblock (memcpy in blocks, -t2)",
              choice(*METHODS), '["memcpy", "dumb"]', default="memcpy"),
        Param("size", "size of each of the two arrays (whole MiB)", size(MIB, 1 << 40), '"256M"',
              default=64 * MIB, show=format_size),
        Param("block", "block size of method mcblock (auto: mbw's 256k)", auto(size(1, 1 << 30)), '"64k"',
              default="auto", show=lambda v: v if v == "auto" else format_size(v)),
    )
    record = MembwCell

    def tools(self, cell) -> dict[str, str]:
        return {"mbw": "mbw", "taskset": "util-linux"}

    def estimate_s(self, settings, cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return (settings.duration_ns + settings.warmup_ns) / 1e9 + load_s + 0.5

    def label(self, cell) -> str:
        p = MembwCell.of_cell(cell)
        block = f" block {format_size(p.block_bytes)}" if isinstance(p.block_bytes, int) else ""
        return f"membw {p.method} {format_size(p.size_bytes)}{block} {cell.load}"

    def check(self, cell, settings, where) -> None:
        p = MembwCell.of_cell(cell)
        if p.size_bytes % MIB:
            raise UserError(f"{where}.size: mbw takes whole MiB; got {p.size_bytes} bytes, "
                            'write e.g. "64M"')
        block = p.block_bytes
        if isinstance(block, int) and p.method != "mcblock":
            raise UserError(f'{where}.block: only method "mcblock" copies in blocks; remove block, or put '
                            "mcblock in a [[matrix]] table of its own")
        if isinstance(block, int) and block > p.size_bytes:
            raise UserError(f"{where}.block: {format_size(block)} is larger than the arrays "
                            f"({format_size(p.size_bytes)}); give a smaller block")

    def execute(self, ctx: RunContext) -> Measurement:
        p, settings, target = MembwCell.of_cell(ctx.cell), ctx.settings, ctx.target
        n_bytes = p.size_bytes
        _check_memory(ctx, 2 * n_bytes)
        cpus = ctx.placement.program_cpus
        pin = pinned(cpus)
        options = [METHODS[p.method]]
        if isinstance(p.block_bytes, int):
            options += ["-b", str(p.block_bytes)]
        size_mib = str(n_bytes // MIB)
        timeout_s = settings.run_timeout_ns / 1e9
        try:
            done = target.run([*pin, "mbw", "-n", str(CALIBRATION_ITERATIONS), *options, size_mib],
                              timeout_s=timeout_s)
        except CommandTimeout:
            raise RunFailed(f"mbw's calibration ({CALIBRATION_ITERATIONS} iterations) took longer than "
                            "campaign.run_timeout; lower matrix.size", "timeout") from None
        if not done.ok:
            raise RunFailed(f"mbw failed ({describe_exit(done.rc)}): {(done.stderr + done.stdout).strip()}")
        seconds = (settings.duration_ns + settings.warmup_ns) / 1e9
        n = iterations_for(seconds, parse_output(done.stdout))
        log = f"{ctx.scratch}/mbw.txt"
        rc = run_recorded(target, [*pin, "mbw", "-n", str(n), *options, size_mib], log,
                          timeout_s=seconds + timeout_s, name=f"mbw ({n} iterations)",
                          budget="duration + warmup + campaign.run_timeout")
        text = target.run(["cat", log]).stdout
        if rc != 0:
            raise RunFailed(f"mbw failed ({describe_exit(rc)}): {text.strip()[-300:]}",
                            attachments={"mbw.txt": text.encode()})
        metrics, series = bandwidth_metrics(parse_output(text), settings.warmup_ns / 1e9)
        # no attachment: the series holds every iteration, and 10^5 lines of text would add nothing
        return Measurement(metrics, {"iteration_kib_per_s": series}, warnings=_cache_warning(ctx, n_bytes))


def _check_memory(ctx: RunContext, needed: int) -> None:
    text = ctx.target.run(["cat", "/proc/meminfo"]).stdout
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    if match and int(match[1]) * 1024 < needed:
        raise RunFailed(f"mbw needs {format_size(needed)} (two arrays of matrix.size) but the target has "
                        f"{format_size(int(match[1]) * 1024)} available; lower matrix.size")


def _cache_warning(ctx: RunContext, n_bytes: int) -> list[Warning_]:
    """Arrays that fit in the largest CPU cache measure the cache, not the memory."""
    sizes = ctx.target.run(["sh", "-c", _CACHES]).stdout.split()
    largest = max((int(s[:-1]) * 1024 for s in sizes if s.endswith("K") and s[:-1].isdigit()), default=0)
    if largest and 2 * n_bytes < 4 * largest:
        return [Warning_(f"the two arrays ({format_size(2 * n_bytes)}) are not much larger than the "
                         f"{format_size(largest)} CPU cache: this measures the cache as much as the memory",
                         f'raise matrix.size to at least {format_size(2 * largest)}')]
    return []


BENCHMARKS.add(
    "membw",
    "memory copy bandwidth with mbw (memcpy, dumb loop, block memcpy); metrics: MiB/s mean, min, max",
    Membw(),
)
