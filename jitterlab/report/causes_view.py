"""The causes of late periods on the terminal: the block `show RUN_ID` adds under the run's worst
period, the lines `summary` and `show --runs` give a traced cell, and `explain`'s breakdown of a
run's explained periods. Everything is read through report/causes.py."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from rich.table import Table
from rich.text import Text

from jitterlab.model.explanation import ENVELOPE, WORST, ExplainedPeriod, Explanation, Part
from jitterlab.model.records import RunRecord
from jitterlab.report import causes
from jitterlab.report.causes import Remedy, Shares
from jitterlab.report.format import counted, duration
from jitterlab.report.limits import NO_MEASURE, Measure

SHOWN_PARTS = 4  # parts of the worst period named in `show`; `explain` names every one


def trace_commands(path: Path) -> str:
    """How to look at a trace file: "trace-cmd report PATH; kernelshark PATH"."""
    quoted = shlex.quote(str(path))
    return f"trace-cmd report {quoted}; kernelshark {quoted}"


def part_text(part: Part) -> str:
    """"700 µs preempted by stress-ng-cpu [SCHED_OTHER nice 0] pid 812": how long, why, who exactly."""
    who = part.who.text if part.who is not None and part.who.text else causes.who_key(part.who)
    return f"{duration(part.duration_ns)} {causes.cause_text(part.cause, who)}"


def period_text(p: ExplainedPeriod, shown: int | None = None) -> str:
    """A period's parts longest first (the first `shown`, the rest counted), then its remainder."""
    parts = sorted(p.parts, key=lambda x: -x.duration_ns)
    texts = [part_text(x) for x in parts[:shown]]
    if shown is not None and len(parts) > shown:
        texts.append(f"{len(parts) - shown} more")
    if p.remainder_ns:
        texts.append(f"{duration(p.remainder_ns)} not covered by the trace")
    return ", ".join(texts) or "no part"


def shares_text(s: Shares) -> str:
    """"70 % preempted by ..., 20 % IRQ 11 virtio0 (2 runs, 3 periods, 2.5 ms late in all)"."""
    runs = f"{counted(s.runs, 'run')}, " if s.runs > 1 else ""
    text = f"{s.line()} ({runs}{counted(s.periods, 'period')}, {duration(s.lateness_ns)} late in all)"
    return f"{text}; {causes.EMULATED_NOTE}" if s.emulated else text


def measured_lines(remedies: list[Remedy], measure: Measure) -> list[str]:
    """The command measuring each tuning these remedies name, once per tuning, or why the tuning is
    not proposed (report/limits.Measure)."""
    tunings = dict.fromkeys(r.tuning for r in remedies if r.tuning)
    return [line for t in tunings if (line := measure.line(t))]


def run_block(run: RunRecord, root: Path, results: str, measure: Measure = NO_MEASURE) -> Table | None:
    """`show RUN_ID`'s block on why the run's periods were late: that it was traced, its causes as
    shares with their remedies (each tuning with the command that measures it: `measure`), its worst
    explained period, and where to look further; None for an untraced run."""
    if not causes.traced(run):
        return None
    grid = Table.grid(padding=(0, 2))
    grid.title, grid.title_justify = "why late: the kernel trace of the run", "left"
    more = f"jitterlab explain --results {shlex.quote(results)} {run.id}"
    try:
        e = causes.read_explanation(run, root)
    except causes.DamagedExplanation as exc:
        grid.add_row(Text("traced", style="bold"), Text(str(exc)))
        return grid
    assert e is not None
    rows = [("traced", causes.traced_note(e))]
    if not e.refused and e.periods:
        s = causes.run_shares(e)
        rows.append(("causes", shares_text(s)))
        fixes = causes.remedies(s)
        rows += [("fix", f"{g.text}: {causes.remedy_text(r)}") for g, r in fixes]
        rows += [("measure", line) for line in measured_lines([r for _, r in fixes], measure)]
        worst = max(e.periods, key=lambda p: p.lateness_ns)
        rows.append(("worst", f"period {worst.index + 1}, {duration(worst.lateness_ns)} late: "
                              f"{period_text(worst, SHOWN_PARTS)}"))
    trace = causes.trace_path(run, root)
    rows.append(("more", more + (f"; {trace_commands(trace)}" if trace is not None else "")))
    for key, text in rows:
        grid.add_row(Text(key, style="bold"), Text(text))
    return grid


def cell_lines(cells: Mapping[tuple[str, str], Shares], *, several_targets: bool = False,
               measure: Measure = NO_MEASURE) -> list[str]:
    """One line per traced cell with its causes, then each remedy once, a remedy naming a tuning
    followed by the command that measures it (`measure`): what `summary` and `show --runs` say."""
    if not cells:
        return []
    lines = ["why periods were late, from the kernel traces (the causes' shares of the lateness of the "
             "explained periods):"]
    for (target, label), s in cells.items():
        where = f"{target} " if several_targets else ""
        lines.append(f"- {where}{label}: {shares_text(s)}")
    said: dict[str, tuple[str, Remedy]] = {}
    for s in cells.values():
        for g, r in causes.remedies(s):
            said.setdefault(causes.remedy_text(r), (g.text, r))
    for text, (what, r) in said.items():
        lines.append(f"    fix for {what}: {text}")
        lines += [f"      {line}" for line in measured_lines([r], measure)]
    return lines


def traced_lines(runs: list[RunRecord], explanations: causes.Explanations,
                 measure: Measure = NO_MEASURE) -> list[str]:
    """The traced cells' lines (cell_lines) of these runs, and a line per damaged explanation."""
    cells = causes.cell_shares(runs, explanations)
    lines = cell_lines(cells, several_targets=len({target for target, _ in cells}) > 1, measure=measure)
    return lines + [f"- not read: {text}" for text in explanations.damaged.values()]


def explain_lines(run: RunRecord, e: Explanation, root: Path, periods: list[ExplainedPeriod],
                  measure: Measure = NO_MEASURE) -> list:
    """`explain`'s breakdown: the run, how it was traced, then each period (index, due time,
    lateness, parts longest first with who, remainder) with the remedies of its causes, the command
    measuring each tuning they name (`measure`), and the commands that open its trace."""
    from jitterlab.campaign import cells

    out: list = [Text(f"run {run.id}: {run.target} {cells.label(run.cell)}, repetition {run.repetition + 1}",
                      style="bold"),
                 Text(causes.traced_note(e))]
    if len(periods) > 1:  # the run's causes, over every period it explained
        out.append(Text(f"causes: {shares_text(causes.shares(e.periods, emulated=bool(e.emulated)))}"))
    fixes: list[Remedy] = []
    for p in periods:
        chosen = _CHOSEN.get(p.chosen, p.chosen)
        table = Table(title=f"period {p.index + 1} ({chosen}): due at {_clock(p.due_ns)} on the trace's "
                            f"clock, {duration(p.lateness_ns)} late", title_justify="left")
        for name, justify in (("how long", "right"), ("share", "right"), ("cause", "left"),
                              ("who", "left"), ("fix", "left")):
            table.add_column(name, justify=justify)  # type: ignore[arg-type]
        said: set[str] = set()  # each fix once per period: the rows it fits say "as above"
        for part in sorted(p.parts, key=lambda x: -x.duration_ns):
            who = causes.who_key(part.who)
            full = part.who.text if part.who is not None and part.who.text else (who or "")
            r = causes.remedy(part.cause, part.who)
            fix = causes.remedy_text(r) if r else ""
            fixes += [r] if r else []
            shown, _ = ("as above" if fix in said else fix), said.add(fix)
            table.add_row(duration(part.duration_ns), _share(part.duration_ns, p.lateness_ns), part.cause,
                          Text(full), Text(shown))
        if p.remainder_ns:
            table.add_row(duration(p.remainder_ns), _share(p.remainder_ns, p.lateness_ns),
                          "not covered", Text("before the trace, after lost events or after its end"), "—")
        out.append(table)
    out += [Text(line) for line in measured_lines(fixes, measure)]
    trace = causes.trace_path(run, root)
    out.append(Text(f"its trace: {trace_commands(trace)}" if trace is not None else
                    "its trace: not kept in the store (the run kept its explanation only)"))
    return out


_CHOSEN = {WORST: "among the latest", ENVELOPE: "breaks the envelope rule"}


def _share(ns: int, total_ns: int) -> str:
    return causes.percent_share(ns / total_ns) if total_ns > 0 else "—"


def _clock(ns: int) -> str:
    """A time of the trace's clock as ftrace prints it: seconds with µs."""
    return f"{ns // 10**9}.{ns % 10**9 // 1000:06d} s"
