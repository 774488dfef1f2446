"""The `cpu` load: stress-ng CPU workers, reporting the bogo-ops/s they actually achieved.

stress-ng (0.15) stops cleanly on SIGINT/SIGTERM/SIGALRM and then writes its metrics to the
`--yaml` file; stop() sends SIGINT to the group, waits, and reads that file through the target.
It tells nothing before it exits (SIGUSR1/SIGUSR2 give no bogo-ops), so between two runs that use
the load a fresh stress-ng takes over before the old one stops and reports (snapshot()): the target
is never without the load, so the next run needs no warm-up, and each run gets its own figures.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import signal
import time
from dataclasses import dataclass

from jitterlab.measure.fetched import fetched_text
from jitterlab.measure.loads.base import (
    GROUP_SCRIPT,
    LOADS,
    LoadContext,
    LoadSpec,
    ProcGroup,
    Sustained,
    Tool,
    lifetime_s,
    parse_group,
)
from jitterlab.measure.loads.idle import SystemSample, sample_system, system_metrics
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, auto, integer, parse_options
from jitterlab.model.records import Metric
from jitterlab.targets.base import CommandTimeout, Process
from jitterlab.targets.processes import LAUNCH, describe_exit, renew_dir, retire


def _stress_method(value: object, where: str) -> ParamValue:
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9][a-z0-9_+-]{0,63}", value):
        raise UserError(
            f'{where}: expected a stress-ng --cpu-method name like "all" or "matrixprod" '
            f"(see `stress-ng --cpu-method which`), got {value!r}"
        )
    return value


PARAMS = (
    Param("workers", "stress-ng workers (auto: one per CPU the load may use)", auto(integer(1, 4096)),
          "2", default="auto"),
    Param("cpu_load", "percent of each CPU a worker keeps busy", integer(1, 100), "50", default=100),
    Param("method", "stress-ng --cpu-method", _stress_method, '"matrixprod"', default="all"),
)


@dataclass(frozen=True)
class StressOptions(Options):
    """What every stress-ng load reads: how many workers ("auto": one per CPU the load may use)."""

    workers: int | str


@dataclass(frozen=True)
class CpuOptions(StressOptions):
    cpu_load_percent: int = key("cpu_load")  # of each CPU a worker keeps busy
    method: str = key("method")  # stress-ng --cpu-method


# the shared constant scripts (memory reuses this load's machinery)
_LAUNCH = LAUNCH
_GROUP = GROUP_SCRIPT
_Group = ProcGroup
_parse_group = parse_group
_describe_exit = describe_exit

# its directory made and an earlier stress-ng's figures there removed (rm only when there are any:
# a fresh directory has none), in one round trip
START_TIMEOUT_S = 10.0
STOP_TIMEOUT_S = 10.0
# stress-ng stopped within ms of its workers' start reports no figures (their stressor had not begun:
# "successful run completed in 0.00s" and no metrics row): a stop comes no sooner than this after
MIN_LIFE_S = 0.05
_USER_HZ = 100  # /proc/<pid>/stat ticks per second on every Linux ABI jitterlab targets


def validate_options(options: dict, where: str) -> dict:
    """Check cpu's options; return them with defaults filled in."""
    return parse_options(PARAMS, options, where, "load 'cpu'")


def parse_bogo_ops_per_s(yaml_text: str, log_text: str = "") -> float | None:
    """Real-time bogo-ops/s summed over all workers, from stress-ng's --yaml (else its log)."""
    rates = re.findall(r"^\s*bogo-ops-per-second-real-time:\s*([0-9.eE+-]+)\s*$", yaml_text, re.M)
    if rates:
        return sum(float(r) for r in rates)
    # --metrics-brief: "metrc: [pid] cpu  3548  1.20  2.38  0.00  2964.59  1486.24"
    rows = re.findall(r"metrc: \[\d+\] cpu\s+\d+\s+[\d.]+\s+[\d.]+\s+[\d.]+\s+([\d.]+)", log_text)
    return sum(float(r) for r in rows) if rows else None


class CpuLoad(Sustained):
    """N stress-ng CPU workers (one per CPU of the target or of ctx.cpus by default).

    Subclasses change the stressor: `name`, `validate`, `record` and `_stressor_argv`.
    """

    name = "cpu"
    record: type[StressOptions] = CpuOptions

    def __init__(self) -> None:
        self._ctx: LoadContext | None = None
        self._proc: Process | None = None
        self._result: list[Metric] | None = None
        self._relays = 0  # stress-ngs that took over from the first (each in a directory of its own)
        self._first_scratch: str | None = None

    @staticmethod
    def validate(options: dict, where: str) -> dict:
        return validate_options(options, where)

    def _stressor_argv(self, opts: CpuOptions) -> list[str]:
        self._cpu_load = opts.cpu_load_percent
        return ["--cpu", str(self.workers), "--cpu-method", opts.method,
                "--cpu-load", str(opts.cpu_load_percent)]

    def start(self, ctx: LoadContext) -> None:
        opts = self.record.of(self.validate(ctx.options, f"load {self.name}"))
        self._ctx = ctx
        self._cpu_load = 100
        workers = opts.workers
        self.workers = workers if isinstance(workers, int) else (
            len(ctx.cpus) if ctx.cpus else self._online_cpus())
        self.yaml = f"{ctx.scratch}/stress-ng.yaml"
        renew_dir(ctx.target, ctx.scratch, [self.yaml])  # no figures of an earlier one read
        stress_ng = ["stress-ng", *self._stressor_argv(opts), "--timeout", f"{lifetime_s(ctx)}s"]
        stress_ng += ["--metrics-brief", "--yaml", self.yaml]
        self._before: SystemSample = sample_system(ctx.target)
        self._tool = Tool(ctx, f"{self.name} load: stress-ng", stress_ng, "stress-ng.log",
                          placed_by=lambda cpus: ["--taskset", cpus])
        self._proc, self.pidfile, self.log = self._tool.proc, self._tool.proc.pidfile, self._tool.log
        # every worker runs before start() returns, so that check() right after it is meaningful
        group = self._tool.await_running(self.workers, START_TIMEOUT_S)
        self._last = (time.monotonic(), group.cpu_ticks)
        self._running_since = self._last[0]

    def check(self) -> None:
        """Alive, all workers running (not stopped), and burning CPU time since the last check."""
        self._alive_or_fail()
        group = self._group()
        if group is None:
            raise RunFailed(f"{self.name} load: stress-ng's process is gone from /proc")
        if group.stopped:
            raise RunFailed(
                f"{self.name} load: {group.stopped} stress-ng workers are stopped (SIGSTOP?)"
            )
        if group.workers < self.workers:
            raise RunFailed(
                f"{self.name} load: only {group.workers} of {self.workers} stress-ng workers "
                "are running"
            )
        now = time.monotonic()
        then, ticks = self._last
        expected = self.workers * self._cpu_load / 100 * (now - then) * _USER_HZ
        # a worker starved on a busy VM gets little CPU, never none over 20+ expected ticks
        if expected >= 20 and group.cpu_ticks <= ticks:
            raise RunFailed(
                f"{self.name} load: stress-ng used no CPU time in the last {now - then:.1f}s"
            )
        self._last = (now, group.cpu_ticks)

    def mark(self) -> None:
        """Nothing to do: each reading starts where the stress-ng that gives it started."""

    def snapshot(self) -> list[Metric]:
        """A fresh stress-ng takes over (started and all its workers running), then this one stops
        and reports: what was achieved since the previous relay (or the start)."""
        assert self._ctx is not None, "start() comes first"
        first = self._first_scratch or self._ctx.scratch
        successor = type(self)()
        successor.start(dataclasses.replace(self._ctx, scratch=f"{first}.{self._relays + 1}"))
        try:
            figures = self.stop()
            retire(self._ctx.target, self._ctx.scratch)  # read: not kept run after run (nor a round trip)
        except BaseException:
            successor.stop()
            raise
        successor._relays, successor._first_scratch = self._relays + 1, first
        vars(self).update(vars(successor))  # this instance goes on as the new stress-ng
        return figures

    def stop(self) -> list[Metric]:
        """Stop stress-ng so that it writes its metrics; return what it achieved."""
        if self._result is not None or self._proc is None or self._ctx is None:
            return self._result or []
        target = self._ctx.target
        try:
            if self._proc.poll() is None:
                time.sleep(max(0.0, MIN_LIFE_S - (time.monotonic() - self._running_since)))
                self._proc.signal(signal.SIGINT)  # stress-ng's "finish and report"
                with contextlib.suppress(CommandTimeout):  # then stop() below kills it
                    self._proc.wait(STOP_TIMEOUT_S)
        finally:
            rc = self._proc.stop()
        after = sample_system(target)
        rate = parse_bogo_ops_per_s(fetched_text(target, self.yaml))
        if rate is None:  # no figures in its --yaml: the --metrics-brief rows of its log
            rate = parse_bogo_ops_per_s("", fetched_text(target, self.log))
        if rate is None:
            raise RunFailed(
                f"{self.name} load: could not read stress-ng's achieved bogo-ops from {self.yaml} "
                f"(stress-ng {_describe_exit(rc)}); {self._log_tail()}"
            )
        self._result = [
            Metric("load_bogo_ops_per_s", rate, "bogo-ops/s"),
            Metric("load_workers", float(self.workers), "workers"),
            *system_metrics(self._before, after, self._ctx.cpus, self._ctx.probe_cpu),
        ]
        return self._result

    def _alive_or_fail(self) -> None:
        self._tool.alive_or_fail()

    def _group(self) -> _Group | None:
        return self._tool.group()

    def _online_cpus(self) -> int:
        return online_cpus(self._ctx.target, f"{self.name} load")

    def _log_tail(self) -> str:
        return self._tool.log_tail()


def online_cpus(target, label: str) -> int:
    done = target.run(["getconf", "_NPROCESSORS_ONLN"])
    if not done.ok or not done.stdout.strip().isdigit():
        raise RunFailed(f"{label}: cannot count the target's CPUs: {done.stderr.strip()}")
    return int(done.stdout)


LOADS.add(
    "cpu",
    "stress-ng CPU workers; options: workers, cpu_load (percent), method",
    LoadSpec(CpuLoad, {"stress-ng": "stress-ng"}, PARAMS, record=CpuOptions),
)
