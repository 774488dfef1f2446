"""`show RUN_ID`'s account of the run's worst moment with what is stored now: when, in the run, its
worst period (or sample) was, and for cyclictest's breaktrace the digest of the kernel trace attached
to the run (what held the CPU while the late thread waited)."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.breaktrace import Digest, digest, events
from jitterlab.analysis.worst import Unordered, Worst, WorstPeriod, WorstSample, worst_moments
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.report.causes_view import run_block
from jitterlab.report.format import count, counted, duration, percent
from jitterlab.report.limits import NO_MEASURE, Measure
from jitterlab.report.traits import period_ns, traits_of

TRACE_TAIL = "trace-tail.txt"  # what cyclictest's breaktrace attaches (measure/benchmarks/cyclictest.py)
SHOWN_TASKS = 4  # tasks and handlers named per line of the digest; the rest are counted


def why_late(run: RunRecord, store, results: str | None = None, measure: Measure = NO_MEASURE) -> list:
    """What `show RUN_ID` says of the run's worst moment, from its stored series and attachments:
    the worst period or sample (worst_parts), the causes of its late periods where it was traced
    (report/causes_view.py; `results`: the store as its commands name it), the breaktrace's digest;
    a line saying why when its raw series cannot be read; `measure`: the command measuring a cause's
    tuning (report/limits.measure_tuning)."""
    parts: list = []
    try:
        series = store.read_series(run) if run.raw_path else {}
    except UserError as exc:
        parts.append(Text.assemble(("when", "bold"), f"  its raw series cannot be read: {exc}"))
    else:
        parts += worst_parts(run, worst_moments(run, series, traits_of(run).samples, period_ns(run)))
    if (block := run_block(run, store.root, results or str(store.where), measure)) is not None:
        parts.append(block)
    if TRACE_TAIL in run.attachments:
        path = run.attachments[TRACE_TAIL]
        try:
            text = (store.root / path).read_text(errors="replace")
        except OSError as exc:
            parts.append(Text.assemble(("breaktrace", "bold"), f"  its trace {path} cannot be read: "
                                       f"{exc.strerror or exc}"))
        else:
            parts.append(breaktrace_part(digest(text), path, len(events(text))))
    return parts


def worst_parts(run: RunRecord, worst: list[Worst]) -> list:
    """A table of each probe's worst period, or of each series' largest sample, and a line for a
    histogram that keeps no order; [] when the run has no such series."""
    parts: list = []
    periods = [w for w in worst if isinstance(w, WorstPeriod)]
    if periods:
        table = Table(title="worst period: when, in the run (from the probe's first edge)")
        for name, justify in (("probe", "left"), ("period", "right"), ("error", "right"),
                              ("began at", "left"), ("which", "left")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for w in periods:
            sign = "+" if w.rel_error >= 0 else "−"
            table.add_row(w.probe, duration(w.period_ns), f"{sign}{percent(abs(w.rel_error))}",
                          f"{duration(w.start_s * 1e9)} of {duration(w.span_s * 1e9)}",
                          f"period {count(w.index + 1)} of {count(w.of)}")
        parts.append(table)
    samples = [w for w in worst if isinstance(w, WorstSample)]
    if samples:
        table = Table(title="worst sample: when, in the run (samples in the order measured)")
        for name, justify in (("series", "left"), ("value", "right"), ("which", "left")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        for w in samples:
            into = f"{(w.index + 1) / w.of * 100:.0f} % into the run"
            which = f"sample {count(w.index + 1)} of {count(w.of)} ({into})"
            table.add_row(w.series, duration(w.value_ns), which)
        parts.append(table)
    if any(isinstance(w, Unordered) for w in worst) and not samples:
        fired = run.metric("breaktrace_fired", "") == 1
        why = ("; the run stopped at its breaktrace, so its worst wake-up was its last (the trace below)"
               if fired else "")
        parts.append(Text.assemble(("when", "bold"), f"  {run.benchmark} keeps a histogram of its samples, "
                                   f"not when each was: its worst is not placed in the run{why}"))
    return parts


def breaktrace_part(digest: Digest | None, path: str, events: int) -> Table:
    """The digest of the breaktrace's trace tail (`path`, in the results directory, with `events`
    event lines): who woke late and by how much, what ran on its CPU while it waited, and when it
    was woken and got the CPU."""
    grid = Table.grid(padding=(0, 2))
    grid.title, grid.title_justify = f"breaktrace: the kernel trace attached ({path})", "left"
    if digest is None:
        none = f"{counted(events, 'event line')}, none of them cyclictest's mark (hit latency threshold)"
        grid.add_row(Text("trace", style="bold"), Text(f"{none}: read the file"))
        return grid
    d = digest
    window = f"the {duration(d.latency_us * 1000)} before the mark, on CPU {d.cpu}"
    rows = [
        ("late", f"{d.thread} woke {duration(d.latency_us * 1000)} late on CPU {d.cpu} (threshold "
                 f"{duration(d.threshold_us * 1000)}); its mark at {_clock(d.mark_ns)} on the trace's clock"),
        ("ran there", f"{_named(d.ran_ns)} (in {window})" if d.ran_ns else
         f"no sched_switch in the trace before the mark on CPU {d.cpu}"),
        ("interrupts", f"{_named(d.irqs_ns)} (in {window})" if d.irqs_ns else
         f"no interrupt handler or softirq in {window}"),
        ("woken", _woken(d)),
        ("trace", f"{path} ({counted(events, 'event line')})"),
    ]
    for key, text in rows:
        grid.add_row(Text(key, style="bold"), Text(text))
    return grid


def _named(held: tuple[tuple[str, int], ...]) -> str:
    shown = [f"{name} {duration(ns)}" for name, ns in held[:SHOWN_TASKS]]
    more = f" and {len(held) - SHOWN_TASKS} more" if len(held) > SHOWN_TASKS else ""
    return ", ".join(shown) + more


def _woken(d: Digest) -> str:
    if d.woken_ns is None:
        return "its wake-up (sched_waking) is not in the trace"
    side = "after" if d.woken_ns >= d.due_ns else "before"
    text = f"{duration(abs(d.woken_ns - d.due_ns))} {side} it was due"
    if d.switched_in_ns is not None:
        text += f"; on the CPU {duration(d.switched_in_ns - d.woken_ns)} after that"
    return text


def _clock(ns: int) -> str:
    """A time of the trace's clock as ftrace prints it: seconds with µs."""
    return f"{ns // 10**9}.{ns % 10**9 // 1000:06d} s"
