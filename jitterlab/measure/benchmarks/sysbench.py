"""sysbench cpu: how many prime-sieve events per second the CPUs finish, and how long each takes.

sysbench 1.0 has no JSON output for its cpu test: its text report is parsed. It prints latencies
in ms with two decimals (10 µs resolution), and runs for whole seconds (--time): a campaign
duration that is not a whole number of seconds is rounded up.
"""

from __future__ import annotations

import re

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, run_tool, whole_seconds
from jitterlab.model.errors import RunFailed
from jitterlab.model.params import Param, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.targets.processes import pinned

PERCENTILE = 95
_NUMBER = r"(\d+(?:\.\d+)?)"
# the report's lines, each exactly once: name -> pattern of its value
_FIELDS = {
    "events_per_s": rf"^\s*events per second:\s+{_NUMBER}\s*$",
    "total_time_s": rf"^\s*total time:\s+{_NUMBER}s\s*$",
    "events": r"^\s*total number of events:\s+(\d+)\s*$",
    "min_ms": rf"^\s*min:\s+{_NUMBER}\s*$",
    "avg_ms": rf"^\s*avg:\s+{_NUMBER}\s*$",
    "max_ms": rf"^\s*max:\s+{_NUMBER}\s*$",
    "p95_ms": rf"^\s*{PERCENTILE}th percentile:\s+{_NUMBER}\s*$",
    "threads": r"^Number of threads:\s+(\d+)\s*$",
}


def parse_report(text: str) -> dict[str, float]:
    """The numbers of a `sysbench cpu run` report; RunFailed naming what is missing."""
    if "Latency (ms):" not in text:
        raise RunFailed("sysbench printed no 'Latency (ms):' section: its report is missing or cut short")
    values: dict[str, float] = {}
    for name, pattern in _FIELDS.items():
        found = re.findall(pattern, text, re.MULTILINE)
        if len(found) != 1:
            what = "no" if not found else "more than one"
            raise RunFailed(f"sysbench report has {what} line for {name} (pattern {pattern!r})")
        values[name] = float(found[0])
    return values


def report_metrics(values: dict[str, float]) -> list[Metric]:
    def ns(ms: float) -> float:
        return float(round(ms * 1e6))  # the report has 10 µs resolution: whole ns are exact

    return [
        Metric("events_per_s", values["events_per_s"], "events/s", "", "higher"),
        Metric("latency_avg_ns", ns(values["avg_ms"]), "ns", "", "lower"),
        Metric(f"latency_p{PERCENTILE}_ns", ns(values["p95_ms"]), "ns", "", "lower"),
        Metric("latency_max_ns", ns(values["max_ms"]), "ns", "", "lower"),
        Metric("events", values["events"], "count", "", "none"),
        Metric("total_time_s", values["total_time_s"], "s", "", "none"),
    ]


class SysbenchCpu(BenchmarkBase):
    headline = ("events_per_s", "latency_p95_ns", "latency_max_ns")
    metrics = ("latency_avg_ns", f"latency_p{PERCENTILE}_ns", "events", "total_time_s")  # report_metrics'

    params = (
        Param("threads", "worker threads (--threads)", integer(1, 4096), "1", default=1),
        Param("max_prime", "primes up to this per event (--cpu-max-prime)", integer(3, 10**9), "4096",
              default=4096),
    )

    def tools(self, cell) -> dict[str, str]:
        return {"sysbench": "sysbench"}

    def estimate_s(self, settings, cell) -> float:
        rounded_up_s = whole_seconds(settings.duration_ns) - settings.duration_ns / 1e9
        return super().estimate_s(settings, cell) + rounded_up_s

    def label(self, cell) -> str:
        return f"sysbench-cpu x{cell.param('threads')} prime<={cell.param('max_prime')} {cell.load}"

    def execute(self, ctx: RunContext) -> Measurement:
        cell, settings = ctx.cell, ctx.settings
        seconds = whole_seconds(settings.duration_ns)
        argv = [
            *pinned(ctx.placement.program_cpus),
            "sysbench", "cpu", f"--threads={cell.param('threads')}",
            f"--cpu-max-prime={cell.param('max_prime')}", f"--time={seconds}",
            f"--percentile={PERCENTILE}", "run",
        ]  # fmt: skip
        rc, output = run_tool(ctx, argv, "sysbench", "sysbench.log")
        if rc != 0:
            raise failed("sysbench", rc, output, "sysbench.log")
        try:
            values = parse_report(output.decode(errors="replace"))
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {"sysbench.log": output}) from None
        if values["threads"] != cell.param("threads"):
            raise RunFailed(
                f"sysbench ran {values['threads']:.0f} threads, not the {cell.param('threads')} asked for",
                attachments={"sysbench.log": output},
            )
        warnings = []
        if seconds * 1_000_000_000 != settings.duration_ns:
            warnings.append(
                Warning_(
                    f"sysbench runs whole seconds: it ran {seconds} s for a campaign.duration of "
                    f"{settings.duration_ns / 1e9:g} s",
                    "give campaign.duration in whole seconds",
                )
            )
        return Measurement(metrics=report_metrics(values), warnings=warnings)


BENCHMARKS.add(
    "sysbench-cpu",
    "sysbench cpu: prime-sieve events per second and their latency (avg, p95, max)",
    SysbenchCpu(),
)
