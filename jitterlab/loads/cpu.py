"""The `cpu` load: stress-ng CPU workers, reporting the bogo-ops/s they actually achieved.

stress-ng (0.15) stops cleanly on SIGINT/SIGTERM/SIGALRM and then writes its metrics to the
`--yaml` file; stop() sends SIGINT to the group, waits, and reads that file through the target.
"""

from __future__ import annotations

import contextlib
import difflib
import re
import signal
import time
from dataclasses import dataclass

from jitterlab.errors import RunFailed, UserError
from jitterlab.loads.base import LOADS, LoadContext, LoadSpec
from jitterlab.loads.idle import SystemSample, sample_system, system_metrics
from jitterlab.records import Metric
from jitterlab.targets.base import CommandTimeout, Process

DEFAULTS: dict[str, object] = {"workers": None, "cpu_load": 100, "method": "all"}

# Constant scripts; paths and argv reach them as positional parameters, never as text.
_LAUNCH = 'echo $$ > "$0" && exec "$@"'
_GROUP = 'cat "$0" 2>/dev/null && cat /proc/[0-9]*/stat 2>/dev/null; exit 0'

START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
_USER_HZ = 100  # /proc/<pid>/stat ticks per second on every Linux ABI jitterlab targets


def validate_options(options: dict, where: str) -> dict:
    """Check cpu's options; return them with defaults filled in."""
    for key in options:
        if key not in DEFAULTS:
            close = difflib.get_close_matches(str(key), list(DEFAULTS), n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise UserError(
                f"{where}: unknown option {key!r} for load 'cpu'; {hint}"
                f"known: {', '.join(sorted(DEFAULTS))}"
            )
    opts = {**DEFAULTS, **options}
    workers = opts["workers"]
    if workers is not None and (
        isinstance(workers, bool) or not isinstance(workers, int) or workers <= 0
    ):
        raise UserError(
            f"{where}: option 'workers' must be a whole number > 0 (or left out for one per CPU), "
            f"got {workers!r}"
        )
    load = opts["cpu_load"]
    if isinstance(load, bool) or not isinstance(load, int) or not 1 <= load <= 100:
        raise UserError(
            f"{where}: option 'cpu_load' must be a percentage from 1 to 100, got {load!r}"
        )
    method = opts["method"]
    if not isinstance(method, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_+-]*", method):
        raise UserError(
            f"{where}: option 'method' must be a stress-ng --cpu-method name like \"all\" or "
            f'"matrixprod" (see `stress-ng --cpu-method which`), got {method!r}'
        )
    return opts


@dataclass(frozen=True)
class _Group:
    """The stress-ng process group as /proc shows it."""

    workers: int  # running or runnable, not stopped, not zombies
    stopped: int
    cpu_ticks: int  # user+system of leader and workers


def _parse_group(text: str) -> _Group | None:
    lines = text.splitlines()
    if not lines or not lines[0].strip().isdigit():
        return None
    leader = int(lines[0])
    procs = {}
    for line in lines[1:]:
        head, _, tail = line.rpartition(")")
        fields = tail.split()
        if len(fields) < 13 or not head.split(" ", 1)[0].isdigit():
            continue
        procs[int(head.split(" ", 1)[0])] = fields
    if leader not in procs or procs[leader][0] in "ZX":
        return None
    pgid = procs[leader][2]
    members = [f for pid, f in procs.items() if f[2] == pgid and pid != leader and f[0] not in "ZX"]
    ticks = sum(int(f[11]) + int(f[12]) for f in [procs[leader], *members])
    stopped = sum(1 for f in members if f[0] in "Tt")
    return _Group(len(members) - stopped, stopped, ticks)


def parse_bogo_ops_per_s(yaml_text: str, log_text: str = "") -> float | None:
    """Real-time bogo-ops/s summed over all workers, from stress-ng's --yaml (else its log)."""
    rates = re.findall(r"^\s*bogo-ops-per-second-real-time:\s*([0-9.eE+-]+)\s*$", yaml_text, re.M)
    if rates:
        return sum(float(r) for r in rates)
    # --metrics-brief: "metrc: [pid] cpu  3548  1.20  2.38  0.00  2964.59  1486.24"
    rows = re.findall(r"metrc: \[\d+\] cpu\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", log_text)
    return sum(float(r) for r in rows) if rows else None


def _describe_exit(rc: int) -> str:
    if rc < 0:
        try:
            return f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit status {rc}"


class CpuLoad:
    """N stress-ng CPU workers (one per CPU of the target or of ctx.cpus by default)."""

    def __init__(self) -> None:
        self._ctx: LoadContext | None = None
        self._proc: Process | None = None
        self._result: list[Metric] | None = None

    def start(self, ctx: LoadContext) -> None:
        opts = validate_options(ctx.options, "load cpu")
        self._ctx = ctx
        self.workers = opts["workers"] or (len(ctx.cpus) if ctx.cpus else self._online_cpus())
        self.log = f"{ctx.scratch}/stress-ng.log"
        self.yaml = f"{ctx.scratch}/stress-ng.yaml"
        self.pidfile = f"{ctx.scratch}/stress-ng.pid"
        ctx.target.run(["mkdir", "-p", ctx.scratch])
        ctx.target.run(["rm", "-f", self.yaml, self.pidfile])
        pin = ["taskset", "-c", ",".join(map(str, ctx.cpus))] if ctx.cpus else []
        stress_ng = ["stress-ng", "--cpu", str(self.workers), "--cpu-method", str(opts["method"])]
        stress_ng += ["--cpu-load", str(opts["cpu_load"]), "--metrics-brief", "--yaml", self.yaml]
        argv = ["sh", "-c", _LAUNCH, self.pidfile, *pin, *stress_ng]
        self._cpu_load = int(opts["cpu_load"])
        self._before: SystemSample = sample_system(ctx.target)
        self._proc = ctx.target.spawn(argv, log_path=self.log)
        try:
            group = self._await_workers()
        except BaseException:
            self._proc.stop()
            raise
        self._last = (time.monotonic(), group.cpu_ticks)

    def _await_workers(self) -> _Group:
        """Return once every worker runs, so that check() right after start() is meaningful."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            self._alive_or_fail()
            group = self._group()
            if group is not None and group.workers >= self.workers:
                return group
            if time.monotonic() > deadline:
                raise RunFailed(
                    f"cpu load: stress-ng did not start {self.workers} workers within "
                    f"{START_TIMEOUT_S:g}s; {self._log_tail()}"
                )
            time.sleep(0.02)

    def check(self) -> None:
        """Alive, all workers running (not stopped), and burning CPU time since the last check."""
        self._alive_or_fail()
        group = self._group()
        if group is None:
            raise RunFailed("cpu load: stress-ng's process is gone from /proc")
        if group.stopped:
            raise RunFailed(f"cpu load: {group.stopped} stress-ng workers are stopped (SIGSTOP?)")
        if group.workers < self.workers:
            raise RunFailed(
                f"cpu load: only {group.workers} of {self.workers} stress-ng workers are running"
            )
        now = time.monotonic()
        then, ticks = self._last
        expected = self.workers * self._cpu_load / 100 * (now - then) * _USER_HZ
        # a worker starved on a busy VM gets little CPU, never none over 20+ expected ticks
        if expected >= 20 and group.cpu_ticks <= ticks:
            raise RunFailed(f"cpu load: stress-ng used no CPU time in the last {now - then:.1f}s")
        self._last = (now, group.cpu_ticks)

    def stop(self) -> list[Metric]:
        """Stop stress-ng so that it writes its metrics; return what it achieved."""
        if self._result is not None or self._proc is None or self._ctx is None:
            return self._result or []
        target = self._ctx.target
        try:
            if self._proc.poll() is None:
                self._proc.signal(signal.SIGINT)  # stress-ng's "finish and report"
                with contextlib.suppress(CommandTimeout):  # then stop() below kills it
                    self._proc.wait(STOP_TIMEOUT_S)
        finally:
            rc = self._proc.stop()
        after = sample_system(target)
        yaml_text = target.run(["cat", self.yaml]).stdout
        rate = parse_bogo_ops_per_s(yaml_text, target.run(["cat", self.log]).stdout)
        if rate is None:
            raise RunFailed(
                f"cpu load: could not read stress-ng's achieved bogo-ops from {self.yaml} "
                f"(stress-ng {_describe_exit(rc)}); {self._log_tail()}"
            )
        self._result = [
            Metric("load_bogo_ops_per_s", rate, "bogo-ops/s"),
            Metric("load_workers", float(self.workers), "workers"),
            *system_metrics(self._before, after, self._ctx.cpus),
        ]
        return self._result

    def _alive_or_fail(self) -> None:
        rc = self._proc.poll()
        if rc is not None:
            raise RunFailed(
                f"cpu load: stress-ng is no longer running ({_describe_exit(rc)}); "
                f"{self._log_tail()}"
            )

    def _group(self) -> _Group | None:
        return _parse_group(self._ctx.target.run(["sh", "-c", _GROUP, self.pidfile]).stdout)

    def _online_cpus(self) -> int:
        done = self._ctx.target.run(["getconf", "_NPROCESSORS_ONLN"])
        if not done.ok or not done.stdout.strip().isdigit():
            raise RunFailed(f"cpu load: cannot count the target's CPUs: {done.stderr.strip()}")
        return int(done.stdout)

    def _log_tail(self) -> str:
        tail = self._ctx.target.run(["tail", "-n", "3", self.log]).stdout.strip()
        return f"last lines of {self.log}: {tail}" if tail else f"{self.log} is empty"


LOADS.add(
    "cpu",
    "stress-ng CPU workers; options: workers, cpu_load (percent), method",
    LoadSpec(CpuLoad, {"stress-ng": "stress-ng"}, validate_options),
)
