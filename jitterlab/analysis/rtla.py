"""The kernel's latency tracers as rtla (and tracefs) print them: parsed exactly, turned into metrics.

timerlat (`rtla timerlat hist`): per CPU, a histogram of 1 µs buckets of the timer IRQ latency
(IRQ-NNN: timer expiry to its handler) and of the thread latency (Thr-NNN: expiry to the timerlat
thread running; Usr-NNN for rtla's user-space threads), plus `over:` (beyond the last bucket) and
count/min/avg/max per column, in whole µs (each sample truncated) as rtla prints them. Rows that
are zero in every column are left out by rtla; an `ALL:` block (newer rtla) is ignored (we sum
ourselves). Per column, the buckets plus `over:` must add up to `count:`. The mean is taken from
the buckets when nothing overflowed (rtla's own avg is truncated once more).

osnoise (`rtla osnoise top -q`): per CPU the periods run, the runtime and the noise (µs), the
percentage of CPU left to the workload, the largest noise in one period and the largest single
noise, and how many interferences came from each source: HW (hardware or firmware: an SMI, a
hypervisor), NMI, IRQ, softirq and thread.

hwlat (the tracefs trace of the hwlat tracer): one line per window in which a CPU spinning with
interrupts off saw a gap above tracing_thresh: `#SEQ inner/outer(us): I/O ts:S.N [count:C]
[nmi-total:T] [nmi-count:K]`. Nothing in the trace means no gap above the threshold: then there is
no maximum to give, only zero events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.latency import HISTOGRAM_UNIT, histogram_metrics, latency_names
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric
from jitterlab.model.series import Samples

US = 1000
IRQ_HISTOGRAM_UNIT = "count per 1us bucket, timer IRQ"  # drawn apart from the thread latency
KINDS = {"IRQ": "irq", "Thr": "thread", "Usr": "user"}
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_COLUMN = re.compile(r"^(IRQ|Thr|Usr)-(\d+)$")


# --- timerlat ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class TimerlatColumn:
    """One column of `rtla timerlat hist`: a CPU's IRQ, thread or user latency."""

    cpu: int
    kind: str  # irq | thread | user
    counts: np.ndarray  # per 1 µs bucket, len = entries
    overflow: int
    count: int
    min_us: int | None  # None where rtla printed "-" (no sample)
    avg_us: int | None
    max_us: int | None


def parse_timerlat_hist(text: str, entries: int) -> list[TimerlatColumn]:
    """Columns of `rtla timerlat hist` output (1 µs buckets, `entries` of them); RunFailed if the
    output is not a whole histogram."""
    lines = _ANSI.sub("", text).splitlines()
    if not any(line.startswith("# Time unit is microseconds") for line in lines):
        raise RunFailed("rtla timerlat hist printed no '# Time unit is microseconds (us)' header: no "
                        "histogram, or not in microseconds")
    head = next((i for i, line in enumerate(lines) if line.startswith("Index")), None)
    if head is None:
        raise RunFailed("rtla timerlat hist printed no 'Index' line: its histogram is missing")
    names = lines[head].split()[1:]
    parsed = [_COLUMN.match(n) for n in names]
    if not names or not all(parsed):
        raise RunFailed(f"rtla timerlat hist: unexpected columns {names}")
    counts = np.zeros((len(names), entries), dtype=np.int64)
    summary: dict[str, list[str]] = {}
    for line in lines[head + 1:]:
        fields = line.split()
        if not fields:
            continue
        if fields[0] == "ALL:":
            break
        if fields[0].isdigit():
            if len(fields) != len(names) + 1 or not all(f.isdigit() for f in fields[1:]):
                raise RunFailed(f"rtla timerlat hist: histogram row {line.strip()!r} does not have "
                                f"{len(names)} counts")
            bucket = int(fields[0])
            if bucket >= entries:
                raise RunFailed(f"rtla timerlat hist: bucket {bucket} beyond the {entries} asked for")
            counts[:, bucket] = [int(f) for f in fields[1:]]
        elif fields[0] in ("over:", "count:", "min:", "avg:", "max:"):
            if len(fields) != len(names) + 1:
                raise RunFailed(f"rtla timerlat hist: {fields[0]} row does not have {len(names)} values")
            summary[fields[0]] = fields[1:]
    missing = [k for k in ("over:", "count:", "min:", "avg:", "max:") if k not in summary]
    if missing:
        raise RunFailed(f"rtla timerlat hist: no {', '.join(missing)} row (cut short?)")
    columns = []
    for i, match in enumerate(parsed):
        kind, cpu = KINDS[match.group(1)], int(match.group(2))  # type: ignore[union-attr]
        values = {k: _summary_value(summary[k][i], k) for k in ("over:", "count:", "min:", "avg:", "max:")}
        over, count = values["over:"], values["count:"]
        if over is None or count is None or int(counts[i].sum()) + over != count:
            raise RunFailed(f"rtla timerlat hist: {names[i]} holds {int(counts[i].sum())} + over {over} "
                            f"samples for count {count}")
        columns.append(TimerlatColumn(cpu, kind, counts[i], over, count, values["min:"], values["avg:"],
                                      values["max:"]))
    return columns


def _summary_value(text: str, row: str) -> int | None:
    if text == "-":
        return None
    if not text.isdigit():
        raise RunFailed(f"rtla timerlat hist: {row} value {text!r} is not a whole number")
    return int(text)


def mean_us(column: TimerlatColumn) -> float:
    """The column's mean in µs: from its buckets when none overflowed (rtla's avg is truncated to a
    whole µs on top of the per-sample truncation the buckets share), else rtla's avg."""
    if column.overflow == 0 and column.count:
        return float((column.counts * np.arange(len(column.counts))).sum() / column.count)
    return float(column.avg_us or 0)


def timerlat_names() -> tuple[str, ...]:
    """Every name timerlat_metrics can give, of every kind of column."""
    return tuple(dict.fromkeys(name for kind in KINDS.values() for name in (
        *latency_names(f"{kind}_latency", histogram=True), f"{kind}_latency_max_ns",
        f"{kind}_latency_mean_ns")))


def timerlat_metrics(columns: list[TimerlatColumn]) -> tuple[list[Metric], dict[str, Samples]]:
    """Per kind over all CPUs (subject ""): `{irq,thread,user}_latency_*` from the summed histogram
    (min/mean/max from rtla's own figures); per CPU (subject cpuN): max, mean and samples. The
    histograms are kept as series `cpuN.{kind}.histogram_1us`."""
    metrics: list[Metric] = []
    series: dict[str, Samples] = {}
    for kind in dict.fromkeys(c.kind for c in columns):
        mine = [c for c in columns if c.kind == kind and c.count]
        for c in (c for c in columns if c.kind == kind):
            unit = IRQ_HISTOGRAM_UNIT if kind == "irq" else HISTOGRAM_UNIT
            series[f"cpu{c.cpu}.{kind}.histogram_1us"] = Samples(c.counts, unit)
            subject = f"cpu{c.cpu}"
            metrics.append(Metric(f"{kind}_latency_samples", float(c.count), "count", subject, "none"))
            if c.count and c.max_us is not None:
                mean_ns = round(mean_us(c) * US, 1)
                metrics += [Metric(f"{kind}_latency_max_ns", float(c.max_us * US), "ns", subject, "lower"),
                            Metric(f"{kind}_latency_mean_ns", mean_ns, "ns", subject, "lower")]
        if not mine:
            continue
        n = sum(c.count for c in mine)
        metrics += histogram_metrics(
            sum(c.counts for c in mine), overflow=sum(c.overflow for c in mine),
            min_ns=float(min(c.min_us for c in mine) * US),  # type: ignore[type-var]
            mean_ns=round(sum(mean_us(c) * c.count for c in mine) / n * US, 1),
            max_ns=float(max(c.max_us for c in mine) * US),  # type: ignore[type-var]
            prefix=f"{kind}_latency")
    if not any(c.count for c in columns):
        raise RunFailed("unmeasurable: timerlat recorded no sample on any CPU", status="unmeasurable")
    return metrics, series


# --- osnoise -----------------------------------------------------------------------------------

_OSNOISE_ROW = re.compile(
    r"^\s*(\d+)\s+#(\d+)\s+(\d+)\s+(\d+)\s+(\d+(?:\.\d+)?)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
SOURCES = ("hw", "nmi", "irq", "softirq", "thread")
OSNOISE_NAMES = ("cpu_available_percent", "noise_ns", "noise_max_ns", "noise_max_single_ns", "runtime_ns",
                 *(f"{s}_noise_events" for s in SOURCES))  # what osnoise_metrics gives


@dataclass(frozen=True)
class OsnoiseCpu:
    """One CPU of `rtla osnoise top`: times in µs, interference counts per source."""

    cpu: int
    periods: int
    runtime_us: int
    noise_us: int
    available_percent: float
    max_noise_us: int
    max_single_us: int
    sources: dict[str, int]


def parse_osnoise_top(text: str) -> list[OsnoiseCpu]:
    """The per-CPU rows of `rtla osnoise top -q`; RunFailed when there are none or they disagree."""
    clean = _ANSI.sub("", text)
    if "time is in us" not in clean:
        raise RunFailed("rtla osnoise top printed no '| time is in us' line: its summary is missing")
    rows = []
    for line in clean.splitlines():
        match = _OSNOISE_ROW.match(line)
        if match is None:
            continue
        cpu, periods, runtime, noise = (int(match.group(i)) for i in range(1, 5))
        available = float(match.group(5))
        max_noise, max_single, *counts = (int(match.group(i)) for i in range(6, 13))
        if runtime and abs(100.0 * (1 - noise / runtime) - available) > 0.01:
            raise RunFailed(f"rtla osnoise top: CPU {cpu} has {noise} us noise in {runtime} us runtime but "
                            f"reports {available}% available")
        rows.append(OsnoiseCpu(cpu, periods, runtime, noise, available, max_noise, max_single,
                               dict(zip(SOURCES, counts, strict=True))))
    if not rows:
        raise RunFailed("rtla osnoise top printed no CPU row (CPU #periods runtime noise ...)")
    return rows


def osnoise_metrics(cpus: list[OsnoiseCpu]) -> list[Metric]:
    """Per CPU (subject cpuN) and over all (subject ""): noise, CPU left, largest noise, sources."""
    metrics: list[Metric] = []
    for subject, group in [(f"cpu{c.cpu}", [c]) for c in cpus] + [("", cpus)]:
        runtime = sum(c.runtime_us for c in group)
        if not runtime:
            continue
        noise = sum(c.noise_us for c in group)
        metrics += [
            Metric("cpu_available_percent", round(100.0 * (1 - noise / runtime), 5), "%", subject, "higher"),
            Metric("noise_ns", float(noise * US), "ns", subject, "lower"),
            Metric("noise_max_ns", float(max(c.max_noise_us for c in group) * US), "ns", subject, "lower"),
            Metric("noise_max_single_ns", float(max(c.max_single_us for c in group) * US), "ns", subject,
                   "lower"),
            Metric("runtime_ns", float(runtime * US), "ns", subject, "none"),
            *(Metric(f"{s}_noise_events", float(sum(c.sources[s] for c in group)), "count", subject, "lower")
              for s in SOURCES),
        ]
    if not any(c.runtime_us for c in cpus):
        raise RunFailed("unmeasurable: osnoise ran no period on any CPU", status="unmeasurable")
    return metrics


# --- hwlat -------------------------------------------------------------------------------------

_HWLAT = re.compile(r"\[(\d+)\].*?#(\d+)\s+inner/outer\(us\):\s*(\d+)/(\d+)(?:\s+ts:\d+\.\d+)?"
                    r"(?:\s+count:(\d+))?(?:\s+nmi-total:(\d+))?(?:\s+nmi-count:(\d+))?\s*$")
_ENTRIES = re.compile(r"^# entries-in-buffer/entries-written: (\d+)/(\d+)")


@dataclass(frozen=True)
class HwlatSample:
    cpu: int
    inner_us: int
    outer_us: int
    count: int | None  # windows' gaps above the threshold (newer kernels)
    nmi_count: int


@dataclass(frozen=True)
class HwlatTrace:
    samples: list[HwlatSample]
    lost: int  # entries written but overwritten in the buffer


def parse_hwlat_trace(text: str) -> HwlatTrace:
    """The hwlat tracer's trace file; RunFailed when it is not one."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "# tracer: hwlat":
        first = lines[0][:60] if lines else ""
        raise RunFailed(f"the trace is not the hwlat tracer's (first line {first!r})")
    samples, lost = [], 0
    for line in lines[1:]:
        entries = _ENTRIES.match(line)
        if entries:
            lost = int(entries.group(2)) - int(entries.group(1))
            continue
        if line.startswith("#") or not line.strip():
            continue
        match = _HWLAT.search(line)
        if match is None:
            raise RunFailed(f"hwlat trace line does not parse: {line.strip()[:100]!r}")
        cpu, _, inner, outer, count, _, nmi = match.groups()
        samples.append(HwlatSample(int(cpu), int(inner), int(outer), None if count is None else int(count),
                                   int(nmi or 0)))
    return HwlatTrace(samples, max(0, lost))


HWLAT_NAMES = ("hwlat_events", "hwlat_threshold_ns", "hwlat_nmi_count", "hwlat_max_ns", "hwlat_inner_max_ns",
               "hwlat_outer_max_ns", "hwlat_gaps")  # what hwlat_metrics can give


def hwlat_metrics(trace: HwlatTrace, threshold_us: int) -> tuple[list[Metric], dict[str, Samples]]:
    """hwlat_events (windows with a gap above the threshold), the largest gaps when there are any,
    NMIs seen, and the gaps (ns, the larger of inner and outer) as the series `hwlat`."""
    s = trace.samples
    gaps = np.array([max(x.inner_us, x.outer_us) * US for x in s], dtype=np.int64)
    metrics = [
        Metric("hwlat_events", float(len(s)), "count", "", "lower"),
        Metric("hwlat_threshold_ns", float(threshold_us * US), "ns", "", "none"),
        Metric("hwlat_nmi_count", float(sum(x.nmi_count for x in s)), "count", "", "none"),
    ]
    if s:
        metrics += [
            Metric("hwlat_max_ns", float(gaps.max()), "ns", "", "lower"),
            Metric("hwlat_inner_max_ns", float(max(x.inner_us for x in s) * US), "ns", "", "lower"),
            Metric("hwlat_outer_max_ns", float(max(x.outer_us for x in s) * US), "ns", "", "lower"),
        ]
        if all(x.count is not None for x in s):
            gaps_seen = sum(x.count or 0 for x in s)
            metrics.append(Metric("hwlat_gaps", float(gaps_seen), "count", "", "lower"))
    return metrics, ({"hwlat": Samples(gaps, "ns")} if s else {})
