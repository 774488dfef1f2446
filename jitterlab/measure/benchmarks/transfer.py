"""ssh-transfer: how fast a file of a given size goes to or from the target with scp or sftp, as a
developer copying an image to a board sees it (MB/s, 1 MB = 10^6 bytes).

scp and sftp run on the jitterlab machine over the target's own SSH connection (its options, key,
known_hosts and master, read from the target's ssh command line), back to back for
campaign.duration (at least once), each timed from start to exit. The file is random (nothing to
compress) and its size is checked on arrival. A target not reached by ssh (capabilities.ReachedBySSH)
has no SSH link: its cells are unavailable (an ssh target at ssh://localhost measures loopback).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from jitterlab.analysis.throughput import rate_metrics, rate_names
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, choice, format_size, size
from jitterlab.model.records import Metric
from jitterlab.targets.capabilities import ReachedBySSH, has, lacks
from jitterlab.targets.processes import run_recorded

REMOTE_FILE = "transfer.bin"
LOG = "transfer.log"
# what the ssh client takes with a value; scp and sftp take the same but spell the port -P
_WITH_VALUE = {"-o", "-i", "-p", "-l", "-F", "-J", "-c", "-m"}
_FLAGS = {"-T", "-x", "-q", "-v", "-4", "-6", "-C", "-A", "-a"}
# What an estimate assumes before anything is measured: a small board's scp/sftp rate (a Raspberry
# Pi 4 moves 20-40 MB/s through ssh's cipher), a new transfer's connection through the target's
# ssh master, and how fast the file to send is made (urandom: ~100 MB/s on a small board)
ASSUMED_MB_PER_S = 20.0
TRANSFER_START_S = 0.3
MAKE_MB_PER_S = 100.0


@dataclass(frozen=True)
class SSHParts:
    """A target's ssh command line taken apart: what scp and sftp need to reach it the same way."""

    options: list[str]  # -o values, in order
    config: str | None  # -F (labgrid gives "none")
    identity: str | None
    port: str | None
    user: str | None
    host: str

    def common(self) -> list[str]:
        """scp/sftp options: the config file, every -o, the key and the port (-P)."""
        out = ["-F", self.config] if self.config else []
        out += [arg for option in self.options for arg in ("-o", option)]
        if self.identity:
            out += ["-i", self.identity]
        if self.port:
            out += ["-P", self.port]
        return out

    def destination(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.user}@{host}" if self.user else host


def ssh_parts(argv: list[str]) -> SSHParts:
    """Take an ssh command line (`ssh [options] -- HOST COMMAND`) apart; RunFailed for an option
    scp and sftp would not understand the same way."""
    options: list[str] = []
    values: dict[str, str] = {}
    i = 1
    while i < len(argv) and argv[i] != "--":
        arg = argv[i]
        if arg in _WITH_VALUE and i + 1 < len(argv):
            if arg == "-o":
                options.append(argv[i + 1])
            elif arg in ("-i", "-p", "-l", "-F"):
                values[arg] = argv[i + 1]
            else:
                raise RunFailed(f"the target's ssh option {arg} {argv[i + 1]} has no scp/sftp equivalent")
            i += 2
        elif arg in _FLAGS:
            i += 1
        else:
            raise RunFailed(f"cannot pass the target's ssh option {arg!r} on to scp/sftp")
    if i + 1 >= len(argv):
        raise RunFailed("the target's ssh command line names no host after --")
    get = values.get
    return SSHParts(options, get("-F"), get("-i"), get("-p"), get("-l"), argv[i + 1])


def transfer_argv(method: str, way: str, parts: SSHParts, local: str, remote: str, batch: str) -> list[str]:
    """The scp or sftp command for one transfer (sftp reads its command from the `batch` file)."""
    if method == "scp":
        there = f"{parts.destination()}:{remote}"
        ends = [local, there] if way == "upload" else [there, local]
        return ["scp", "-q", "-B", *parts.common(), *ends]
    return ["sftp", "-q", "-b", batch, *parts.common(), parts.destination()]


def sftp_batch(way: str, local: str, remote: str) -> str:
    for path in (local, remote):
        if '"' in path or "\n" in path:
            raise RunFailed(f"sftp cannot be given the path {path!r} in a batch file")
    return f'put "{local}" "{remote}"\n' if way == "upload" else f'get "{remote}" "{local}"\n'


def rates(seconds: list[float], n_bytes: int) -> list[Metric]:
    """Median, slowest and fastest transfer in MB/s (10^6 bytes), the count and the size."""
    return [*rate_metrics("transfer", seconds, n_bytes, count="transfers"),
            Metric("transfer_bytes", float(n_bytes), "bytes", "", "none")]


@dataclass(frozen=True)
class TransferCell(Options):
    way: str  # "upload" or "download"
    method: str  # "scp" or "sftp"
    size_bytes: int = key("size")  # per transfer


class SSHTransfer(BenchmarkBase):
    headline = ("transfer_mb_per_s", "transfer_min_mb_per_s")
    metrics = (*rate_names("transfer", count="transfers"), "transfer_bytes")

    params = (
        Param("way", '"upload" (this machine to the target) or "download"', choice("upload", "download"),
              '["upload", "download"]', default="upload"),
        Param("method", "scp or sftp (OpenSSH 9 scp speaks the SFTP protocol itself)", choice("scp", "sftp"),
              '["scp", "sftp"]', default="scp"),
        Param("size", "bytes per transfer", size(1, 1 << 40), '"16M"', default="16M", show=format_size),
    )
    record = TransferCell

    def tools(self, cell) -> dict[str, str]:
        return {"head": "coreutils"} if TransferCell.of_cell(cell).way == "download" else {}

    def label(self, cell) -> str:
        p = TransferCell.of_cell(cell)
        return f"{p.method} {p.way} {format_size(p.size_bytes)} {cell.load}"

    def estimate_s(self, settings, cell) -> float:
        """What a run does: make the file, transfer it back to back for campaign.duration (at least
        once), and finish the transfer under way at the deadline (half a transfer on average)."""
        mb = TransferCell.of_cell(cell).size_bytes / 1e6
        one_s = mb / ASSUMED_MB_PER_S + TRANSFER_START_S
        duration_s = settings.duration_ns / 1e9
        made_s = mb / MAKE_MB_PER_S
        return super().estimate_s(settings, cell) + made_s + max(0.0, one_s - duration_s) + one_s / 2

    def execute(self, ctx: RunContext) -> Measurement:
        p, target = TransferCell.of_cell(ctx.cell), ctx.target
        ssh = has(target, ReachedBySSH)
        if ssh is None:
            why = "ssh-transfer measures the SSH link to a target (e.g. ssh://localhost for loopback)"
            raise RunFailed(lacks(target, ReachedBySSH, why), status="unavailable")
        if ctx.controller is None:
            raise RunFailed("ssh-transfer runs scp and sftp on the controller, and this run was given "
                            "none (RunContext.controller)", status="unavailable")
        parts = ssh_parts(ssh.ssh_command(["true"]))
        n_bytes, way, method = p.size_bytes, p.way, p.method
        local, remote = ctx.local_dir / REMOTE_FILE, f"{ctx.scratch}/{REMOTE_FILE}"
        if way == "upload":
            _random_file(local, n_bytes)
        else:
            made = target.run(["sh", "-c", 'head -c "$1" /dev/urandom > "$0"', remote, str(n_bytes)],
                              timeout_s=600.0)
            if not made.ok:
                raise RunFailed(f"cannot write {n_bytes} bytes to {remote} on the target: "
                                f"{made.stderr.strip()}")
        batch = ctx.local_dir / "sftp.batch"
        if method == "sftp":
            batch.write_text(sftp_batch(way, str(local), remote))
        argv = transfer_argv(method, way, parts, str(local), remote, str(batch))
        controller = ctx.controller
        seconds: list[float] = []
        deadline = time.monotonic() + ctx.settings.duration_ns / 1e9
        while not seconds or time.monotonic() < deadline:
            if way == "download":
                local.unlink(missing_ok=True)
            log = str(ctx.local_dir / LOG)
            start = time.monotonic()
            rc = run_recorded(controller, argv, log, timeout_s=ctx.settings.run_timeout_ns / 1e9 + 60.0,
                              name=method, budget="campaign.run_timeout + 60 s per transfer")
            elapsed = time.monotonic() - start
            if rc != 0:
                raise failed(method, rc, Path(log).read_bytes(), LOG)
            seconds.append(elapsed)
        arrived = local.stat().st_size if way == "download" else _remote_size(target, remote)
        if arrived != n_bytes:
            raise RunFailed(f"{method} {way}: {arrived} bytes arrived of {n_bytes}")
        return Measurement(metrics=rates(seconds, n_bytes))


def _random_file(path: Path, n_bytes: int) -> None:
    with path.open("wb") as f:
        left = n_bytes
        while left:
            chunk = min(left, 1 << 20)
            f.write(os.urandom(chunk))
            left -= chunk


def _remote_size(target, remote: str) -> int:
    done = target.run(["wc", "-c", remote])
    try:
        return int(done.stdout.split()[0])
    except (IndexError, ValueError):
        raise RunFailed(f"cannot read the size of {remote} on the target: {done.stderr.strip()}") from None


BENCHMARKS.add(
    "ssh-transfer",
    "scp/sftp of a file of a given size to or from an ssh or labgrid target (MB/s)",
    SSHTransfer(),
)
