"""The `disk` load: fio writing and reading files in a temp directory of the run, time based.

fio (3.33) stops on SIGTERM or SIGINT, to its whole process group, and still writes its JSON
report to --output (after a "fio: terminating on signal" line); stop() sends SIGTERM and reads
what was transferred. `--runtime` bounds its life; its files are removed at stop. Jobs run as
threads (`--thread`): forked fio jobs call setsid() and would escape the process group.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass

from jitterlab.measure.loads.base import (
    LOADS,
    LoadContext,
    LoadSpec,
    Tool,
    lifetime_s,
)
from jitterlab.measure.tools.output import first_json
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, boolean, choice, format_size, integer, parse_options, size
from jitterlab.model.records import Metric
from jitterlab.targets.processes import describe_exit

RW_MODES = ("rw", "read", "write", "randrw", "randread", "randwrite")
PARAMS = (
    Param("size", "size of the file fio works on", size(4096), '"256M"', default="64M", show=format_size),
    Param("rw", 'fio --rw ("rw" is a sequential read/write mix)', choice(*RW_MODES), '"randrw"',
          default="rw"),
    Param("rwmixread", "percent of reads in a mix", integer(0, 100), "70", default=50),
    Param("block_size", "fio --bs", size(512, 1 << 30), '"4k"', default="128K", show=format_size),
    Param("direct", "O_DIRECT: bypass the page cache (not on tmpfs)", boolean, "true", default=False),
    Param("fsync", "writes between fsyncs (0: never)", integer(0), "0", default=32),
)


@dataclass(frozen=True)
class DiskOptions(Options):
    size_bytes: int = key("size")
    rw: str  # fio --rw
    rwmixread_percent: int = key("rwmixread")
    block_bytes: int = key("block_size")
    direct: bool
    fsync: int  # writes between fsyncs (0: never)


def validate_options(options: dict, where: str) -> dict:
    """Check disk's options; return them with defaults filled in (sizes in bytes)."""
    return parse_options(PARAMS, options, where, "load 'disk'")


def parse_report(text: str) -> tuple[float, float] | None:
    """(read, write) MB/s (10^6 bytes) over fio's runtime, from its JSON (None: no report to read;
    (0, 0): fio was stopped before it moved a byte)."""
    data = first_json(text)
    try:
        jobs = data["jobs"]
        read = sum(int(j["read"]["io_bytes"]) for j in jobs)
        write = sum(int(j["write"]["io_bytes"]) for j in jobs)
        runtime_s = max(int(j["job_runtime"]) for j in jobs) / 1000
    except (KeyError, TypeError, ValueError):
        return None
    if runtime_s <= 0 or read + write <= 0:
        return 0.0, 0.0
    return read / runtime_s / 1e6, write / runtime_s / 1e6


class DiskLoad:
    """One fio job on `size` bytes of files under the run's scratch directory."""

    def __init__(self) -> None:
        self._tool: Tool | None = None
        self._result: list[Metric] | None = None

    def start(self, ctx: LoadContext) -> None:
        opts = DiskOptions.of(validate_options(ctx.options, "load disk"))
        self._ctx = ctx
        self.data_dir = f"{ctx.scratch}/fio-data"
        self.report = f"{ctx.scratch}/fio.json"
        self._size_bytes = opts.size_bytes
        ctx.target.run(["mkdir", "-p", self.data_dir])
        ctx.target.run(["rm", "-f", self.report])
        fio = ["fio", "--name=jitterlab-disk", f"--directory={self.data_dir}",
               f"--rw={opts.rw}", f"--rwmixread={opts.rwmixread_percent}",
               f"--bs={opts.block_bytes}", f"--size={opts.size_bytes}", "--ioengine=psync",
               "--thread",
               f"--direct={1 if opts.direct else 0}", f"--fsync={opts.fsync}",
               "--time_based", f"--runtime={lifetime_s(ctx)}",
               "--output-format=json", f"--output={self.report}"]
        self._tool = Tool(ctx, "disk load: fio", fio, "fio.log")
        try:
            self._tool.await_running()
        except BaseException:
            self._remove_files()
            raise

    def check(self) -> None:
        """fio alive, not stopped, using CPU time (it moves data)."""
        self._tool.check()

    def stop(self) -> list[Metric]:
        """SIGTERM fio (it writes its report), read what it moved, remove its files."""
        if self._result is not None or self._tool is None:
            return self._result or []
        try:
            rc = self._tool.finish(signal.SIGTERM)
            rates = parse_report(self._tool.read(self.report))
        finally:
            self._remove_files()
        if rates is None:
            raise RunFailed(f"disk load: could not read what fio transferred from {self.report} "
                            f"(fio {describe_exit(rc)}); {self._tool.log_tail()}")
        if rates == (0.0, 0.0):  # a load that did nothing is no load: the run says so
            raise RunFailed("disk load: fio was stopped before it moved a byte (it first lays out "
                            f"its {format_size(self._size_bytes)} of files); give the run a longer "
                            "duration or [loads.disk] a smaller size")
        read, write = rates
        self._result = [
            Metric("load_disk_mb_per_s", read + write, "MB/s"),
            Metric("load_disk_read_mb_per_s", read, "MB/s"),
            Metric("load_disk_write_mb_per_s", write, "MB/s"),
        ]
        return self._result

    def _remove_files(self) -> None:
        self._ctx.target.run(["rm", "-rf", self.data_dir])


LOADS.add(
    "disk",
    "fio sequential read/write mix on a temp directory; options: size, rw, rwmixread, "
    "block_size, direct, fsync",
    LoadSpec(DiskLoad, {"fio": "fio"}, PARAMS, record=DiskOptions),
)
