"""tmpfs-write: how fast the target writes to RAM-backed files (dd to /dev/shm), the small-board
check of memory write speed through the kernel's page cache (MB/s, 1 MB = 10^6 bytes).

dd writes `size` bytes of zeros in `block_size` writes to a file of the run in /dev/shm, which is
removed afterwards, back to back for campaign.duration (at least once). Each write is timed by dd
itself where it reports it (GNU coreutils: "N bytes ... copied, T s"); busybox's dd reports no
time, so the script reads the clock (date +%s%N) around it instead. /dev/shm must be tmpfs.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from jitterlab.analysis.throughput import rate_metrics, rate_names
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, format_size, size
from jitterlab.targets.processes import pinned, shm_path

# Constant: the file, block size and count come as positional parameters. A round prints dd's own
# report, then its exit status and the clocks before and after it (date in ns, /proc/uptime in 10 ms).
SCRIPT = ('t0=$(date +%s%N); u0=$(cat /proc/uptime); dd if=/dev/zero of="$0" bs="$1" count="$2" 2>&1; '
          'r=$?; u1=$(cat /proc/uptime); t1=$(date +%s%N); rm -f "$0"; '
          'echo "jitterlab-round $r $t0 $t1 ${u0%% *} ${u1%% *}"')
UPTIME_MIN_S = 1.0  # /proc/uptime counts 10 ms: a round timed with it must last this long (1 %)
_DD = re.compile(r"^(\d+) bytes .*copied, ([\d.]+(?:e-?\d+)?) s(?:econds)?", re.MULTILINE)
_ROUND = re.compile(r"^jitterlab-round (\d+) (\S+) (\S+) (\S+) (\S+)$", re.MULTILINE)
# What an estimate assumes before anything is measured: a small board writes 200-1000 MB/s to
# tmpfs, and each round is one command on the target (a round trip, tens of ms over SSH)
ASSUMED_MB_PER_S = 200.0
ROUND_START_S = 0.05


def parse_rounds(text: str, n_bytes: int) -> list[float]:
    """Seconds of each dd round: dd's own figure, else date's ns around it, else /proc/uptime's
    (a round of at least UPTIME_MIN_S); RunFailed when none can time it or it wrote less than asked."""
    seconds = []
    start = 0
    for match in _ROUND.finditer(text):
        block = text[start:match.start()]
        start = match.end()
        rc, t0, t1, u0, u1 = match.groups()
        if rc != "0":
            lines = [line for line in block.strip().splitlines() if line]
            raise RunFailed(f"dd failed (exit status {rc}): {lines[-1] if lines else '(no output)'}")
        dd = _DD.search(block)
        if dd is not None:
            if int(dd.group(1)) != n_bytes:
                raise RunFailed(f"dd wrote {dd.group(1)} bytes of {n_bytes}")
            seconds.append(float(dd.group(2)))
        elif t0.isdigit() and t1.isdigit() and len(t0) > 12:
            seconds.append((int(t1) - int(t0)) / 1e9)
        elif _is_number(u0) and _is_number(u1) and float(u1) - float(u0) >= UPTIME_MIN_S:
            seconds.append(float(u1) - float(u0))
        else:
            raise RunFailed("dd reported no time, the target's date has no nanoseconds (%N, busybox) and "
                            f"the round was too short for /proc/uptime's 10 ms: give a size that takes over "
                            f"{UPTIME_MIN_S:g} s to write, or install coreutils", status="unmeasurable")
    if not seconds:
        raise RunFailed("the tmpfs script printed no round: cut short?")
    if min(seconds) <= 0:
        raise RunFailed("a dd round took no measurable time: use a larger size", status="unmeasurable")
    return seconds


def _is_number(text: str) -> bool:
    return bool(re.fullmatch(r"\d+(\.\d+)?", text))


@dataclass(frozen=True)
class TmpfsCell(Options):
    size_bytes: int = key("size")
    block_bytes: int = key("block_size")


class TmpfsWrite(BenchmarkBase):
    headline = ("write_mb_per_s", "write_min_mb_per_s")
    metrics = rate_names("write", count="rounds")

    params = (
        Param("size", "bytes written per round", size(4096, 1 << 40), '"64M"', default="64M",
              show=format_size),
        Param("block_size", "bytes per write (dd bs=)", size(512, 1 << 30), '["4k", "1M"]', default="1M",
              show=format_size),
    )
    record = TmpfsCell

    def tools(self, cell) -> dict[str, str]:
        return {"dd": "coreutils", "date": "coreutils"}

    def check(self, cell, settings, where) -> None:
        p = TmpfsCell.of_cell(cell)
        if p.size_bytes % p.block_bytes:
            raise where.key("size").error(f"{format_size(p.size_bytes)} is not a whole number of blocks of "
                                          f"{format_size(p.block_bytes)}")

    def estimate_s(self, settings, cell) -> float:
        """What a run does: rounds back to back for campaign.duration (at least one), and the round
        under way at the deadline finishes (half a round on average)."""
        one_s = TmpfsCell.of_cell(cell).size_bytes / 1e6 / ASSUMED_MB_PER_S + ROUND_START_S
        duration_s = settings.duration_ns / 1e9
        return super().estimate_s(settings, cell) + max(0.0, one_s - duration_s) + one_s / 2

    def label(self, cell) -> str:
        p = TmpfsCell.of_cell(cell)
        return (f"tmpfs-write {format_size(p.size_bytes)} in {format_size(p.block_bytes)} "
                f"writes {cell.load}")

    def execute(self, ctx: RunContext) -> Measurement:
        cell, target = ctx.cell, ctx.target
        mounts = target.run(["cat", "/proc/mounts"]).stdout.split("\n")
        if not any(f[1:3] == ["/dev/shm", "tmpfs"] for f in (line.split() for line in mounts)):
            raise RunFailed("/dev/shm is not a tmpfs on this target", status="unavailable")
        p = TmpfsCell.of_cell(cell)
        n_bytes, block = p.size_bytes, p.block_bytes
        path = shm_path(ctx.scratch, "tmpfs")
        argv = [*pinned(ctx.placement.program_cpus), "sh", "-c", SCRIPT, path, str(block),
                str(n_bytes // block)]
        output = ""
        deadline = time.monotonic() + ctx.settings.duration_ns / 1e9
        try:
            while not output or time.monotonic() < deadline:  # rounds back to back, timed on the target
                done = target.run(argv, timeout_s=ctx.settings.run_timeout_ns / 1e9)
                output += done.stdout + done.stderr
                if "jitterlab-round 0 " not in done.stdout:
                    break  # the round failed or was cut: parse_rounds says why
            seconds = parse_rounds(output, n_bytes)
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {"dd.log": output.encode()}) from None
        finally:
            target.run(["rm", "-f", path])
        return Measurement(metrics=rate_metrics("write", seconds, n_bytes, count="rounds"))


BENCHMARKS.add(
    "tmpfs-write",
    "dd to /dev/shm: the target's write rate to RAM-backed files (MB/s)",
    TmpfsWrite(),
)
