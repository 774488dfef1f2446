"""The `disk` benchmark: fio sequential or 4k random read/write on a file in the run's scratch dir.

One access pattern per run (make `pattern` an axis to measure all four). fio first lays the
file out (for reads), then runs for campaign.duration (time_based) after a ramp of
campaign.warmup, and reports bandwidth, IOPS and completion-latency percentiles in its JSON.
Reads with direct = false may come from the page cache: that is what a program would see.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.output import first_json
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, auto, boolean, choice, format_size, integer, size
from jitterlab.model.records import Metric
from jitterlab.targets.processes import describe_exit, pinned, run_recorded

PATTERNS = {"seqread": "read", "seqwrite": "write", "randread": "randread", "randwrite": "randwrite"}
SYNC_ENGINES = ("psync", "sync", "pvsync", "mmap")
ENGINES = (*SYNC_ENGINES, "libaio", "io_uring", "posixaio")
MAX_SIZE = 4 << 30
# fio's percentile keys -> the latency metric names of analysis.latency
PERCENTILES = {"p50": "50.000000", "p99": "99.000000", "p999": "99.900000", "p9999": "99.990000"}
LAYOUT_BYTES_PER_S = 10 << 20  # slowest plausible medium (an SD card) laying the file out
EINVAL = 22


def default_block_size(pattern: str) -> int:
    return 1 << 20 if pattern.startswith("seq") else 4096


def side_of(pattern: str) -> str:
    """The direction of a pattern, which its metrics are named after: read or write."""
    return "read" if pattern.endswith("read") else "write"


def metric_names(pattern: str) -> tuple[str, ...]:
    """Every name parse_report gives for the pattern."""
    side = side_of(pattern)
    clat = ("min", "mean", "max", "std", *PERCENTILES)
    return (f"{side}_bandwidth_mib_per_s", f"{side}_ops_per_s", f"{side}_bytes",
            *(f"{side}_clat_{name}_ns" for name in clat), f"{side}_clat_samples")


def parse_report(text: str, pattern: str) -> list[Metric]:
    """Bandwidth, IOPS and completion latency of the pattern's direction from fio's JSON report.

    Raises RunFailed (report attached) when the report is missing, cut short or moved nothing."""
    raw = {"fio.json": text.encode()}
    data = first_json(text)
    if data is None:
        raise RunFailed("fio wrote no JSON report (expected the output of --output-format=json; cut short?)",
                        attachments=raw)
    side = side_of(pattern)
    try:
        [job] = data["jobs"]
        if int(job["error"]):
            raise RunFailed(f"fio's job ended with error {job['error']}", attachments=raw)
        io = job[side]
        moved = int(io["io_bytes"])
        clat = io["clat_ns"]
        if moved <= 0 or int(clat["N"]) <= 0:
            raise RunFailed(f"fio did no {side} in its runtime", "unmeasurable", attachments=raw)
        metrics = [
            Metric(f"{side}_bandwidth_mib_per_s", float(io["bw_bytes"]) / (1 << 20), "MiB/s", "", "higher"),
            Metric(f"{side}_ops_per_s", float(io["iops"]), "IO/s", "", "higher"),
            Metric(f"{side}_bytes", float(moved), "bytes", "", "none"),
        ]
        values = {"min": clat["min"], "mean": clat["mean"], "max": clat["max"], "std": clat["stddev"]}
        values.update({name: clat["percentile"][key] for name, key in PERCENTILES.items()})
        metrics += [Metric(f"{side}_clat_{name}_ns", float(v), "ns", "", "lower")
                    for name, v in values.items()]
        metrics.append(Metric(f"{side}_clat_samples", float(clat["N"]), "count", "", "none"))
    except (KeyError, TypeError, ValueError) as exc:
        raise RunFailed(f"fio's JSON report lacks jobs[0].{side} with io_bytes, bw_bytes, iops and "
                        f"clat_ns percentiles ({type(exc).__name__}: {exc})", attachments=raw) from None
    return metrics


def job_error(text: str) -> int:
    """The errno fio's (only) job ended with, 0 when none or unknown."""
    data = first_json(text)
    try:
        return int(data["jobs"][0]["error"])
    except (KeyError, IndexError, TypeError, ValueError):
        return 0


@dataclass(frozen=True)
class DiskCell(Options):
    pattern: str
    size_bytes: int = key("size")
    block_bytes: int | str = key("block_size")  # "auto": see io_bytes
    direct: bool
    iodepth: int
    ioengine: str

    @property
    def io_bytes(self) -> int:
        """Bytes per I/O: the block size given, or the pattern's default (1M sequential, 4k random)."""
        return self.block_bytes if isinstance(self.block_bytes, int) else default_block_size(self.pattern)


class Disk(BenchmarkBase):
    headline = (
        "read_bandwidth_mib_per_s", "write_bandwidth_mib_per_s", "read_ops_per_s", "write_ops_per_s",
        "read_clat_p99_ns", "write_clat_p99_ns",
    )

    params = (
        Param("pattern", "seqread, seqwrite, randread or randwrite", choice(*PATTERNS),
              '["seqread", "randread"]', default="seqread"),
        Param("size", "size of the test file (at most 4G)", size(4096, MAX_SIZE), '"256M"', default=64 << 20,
              show=format_size),
        Param("block_size", "bytes per I/O (auto: 1M sequential, 4k random)", auto(size(512, 64 << 20)),
              '"4k"', default="auto", show=lambda v: v if v == "auto" else format_size(v)),
        Param("direct", "O_DIRECT: bypass the page cache (not on every file system)", boolean, "true",
              default=False, show=lambda v: str(v).lower()),
        Param("iodepth", "I/Os in flight (needs an async ioengine)", integer(1, 1024), "8", default=1),
        Param("ioengine", "fio's I/O engine", choice(*ENGINES), '"libaio"', default="psync"),
    )
    record = DiskCell

    def metric_names(self, cell) -> frozenset[str]:
        return frozenset(metric_names(DiskCell.of_cell(cell).pattern))

    def tools(self, cell) -> dict[str, str]:
        return {"fio": "fio", "df": "coreutils", "taskset": "util-linux"}

    def estimate_s(self, settings, cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        layout_s = DiskCell.of_cell(cell).size_bytes / (200 << 20)
        return (settings.duration_ns + settings.warmup_ns) / 1e9 + layout_s + load_s + 0.5

    def label(self, cell) -> str:
        p = DiskCell.of_cell(cell)
        extra = " direct" if p.direct else ""
        if p.iodepth != 1:
            extra += f" qd{p.iodepth}"
        return (f"disk {p.pattern} {format_size(p.io_bytes)} "
                f"{format_size(p.size_bytes)} {p.ioengine}{extra} {cell.load}")

    def check(self, cell, settings, where) -> None:
        p = DiskCell.of_cell(cell)
        if p.iodepth != 1 and p.ioengine in SYNC_ENGINES:
            raise UserError(f"{where}.iodepth: ioengine {p.ioengine!r} does one I/O at a time, "
                            'so iodepth > 1 would be capped at 1; use ioengine = "libaio" or "io_uring"')
        if p.io_bytes > p.size_bytes:
            raise UserError(f"{where}.block_size: {format_size(p.io_bytes)} is larger than the "
                            f"file ({format_size(p.size_bytes)}); raise size or lower block_size")

    def execute(self, ctx: RunContext) -> Measurement:
        p, settings, target = DiskCell.of_cell(ctx.cell), ctx.settings, ctx.target
        pattern, n_bytes = p.pattern, p.size_bytes
        data_dir = f"{ctx.scratch}/fio-data"
        report = f"{ctx.scratch}/fio.json"
        log = f"{ctx.scratch}/fio.log"
        target.run(["mkdir", "-p", data_dir])
        try:
            _check_space(ctx, data_dir, n_bytes)
            cpus = ctx.placement.program_cpus
            pin = pinned(cpus)
            argv = [*pin, *self.fio_argv(ctx, f"{data_dir}/data", report)]
            limit_s = (settings.duration_ns + settings.warmup_ns + settings.run_timeout_ns) / 1e9
            limit_s += n_bytes / LAYOUT_BYTES_PER_S
            rc = run_recorded(target, argv, log, timeout_s=limit_s, name="fio",
                              budget="file layout + duration + campaign.run_timeout")
            text = target.run(["cat", report]).stdout
            output = target.run(["cat", log]).stdout
        finally:
            target.run(["rm", "-rf", data_dir])
        attachments = {"fio.json": text.encode(), "fio.log": output.encode()}
        if job_error(text) == EINVAL and p.direct:
            fs = target.run(["stat", "-f", "-c", "%T", ctx.scratch]).stdout.strip() or "?"
            raise RunFailed(f"the file system of {ctx.scratch} ({fs}) refuses O_DIRECT (tmpfs before Linux "
                            "6.6 and ramfs do); set direct = false, or give the target a workdir on a disk",
                            "unavailable", attachments)
        if rc != 0 or job_error(text):
            why = " ".join(line for line in output.splitlines() if line.startswith("fio:"))[-400:]
            raise RunFailed(f"fio failed ({describe_exit(rc)}, job error {job_error(text)}): "
                            f"{why or output.strip()[-300:] or 'no output'}", attachments=attachments)
        try:
            metrics = parse_report(text, pattern)
        except RunFailed as exc:
            exc.attachments.update(attachments)
            raise
        return Measurement(metrics, attachments={"fio.json": text.encode()})

    def fio_argv(self, ctx: RunContext, path: str, report: str) -> list[str]:
        p, settings = DiskCell.of_cell(ctx.cell), ctx.settings
        argv = ["fio", "--name=jitterlab-disk", f"--filename={path}",
                f"--rw={PATTERNS[p.pattern]}", f"--bs={p.io_bytes}",
                f"--size={p.size_bytes}", f"--ioengine={p.ioengine}",
                f"--iodepth={p.iodepth}", f"--direct={int(p.direct)}",
                "--time_based", f"--runtime={max(1, settings.duration_ns // 10**6)}ms",
                f"--percentile_list={':'.join(k.rstrip('0').rstrip('.') for k in PERCENTILES.values())}",
                "--output-format=json", f"--output={report}"]
        if settings.warmup_ns >= 10**6:
            argv.append(f"--ramp_time={settings.warmup_ns // 10**6}ms")
        return argv


def _check_space(ctx: RunContext, directory: str, n_bytes: int) -> None:
    done = ctx.target.run(["df", "-Pk", directory])
    lines = done.stdout.splitlines()
    fields = lines[-1].split() if len(lines) > 1 else []
    known = len(fields) >= 4 and fields[1].isdigit() and int(fields[1]) > 0  # ramfs says 0 of 0
    if known and fields[3].isdigit() and int(fields[3]) * 1024 < n_bytes:
        raise RunFailed(f"the test file ({format_size(n_bytes)}) does not fit in {directory}: "
                        f"{format_size(int(fields[3]) * 1024)} free; lower matrix.size or free some space")


BENCHMARKS.add(
    "disk",
    "fio sequential / 4k random read or write on a temp file; metrics: MiB/s, IOPS, completion "
    "latency mean and percentiles",
    Disk(),
)
