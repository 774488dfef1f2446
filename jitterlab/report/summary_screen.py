"""One screen that answers, per campaign: per impl and load the shortest period it holds at the
campaign's rules here, with the evidence behind it (bare metal, a VM or an emulated CPU; the probe
independent or the program's own view; how long the probe was blind); for a comparison the decided
verdicts, then the undecided ones and what would decide them; then the machine's own problems
that limit what was measured, each with its fix and what it would likely change. Everything else
is one command away (`show`, `report`, `compare`). Reads stored data only."""

from __future__ import annotations

import shlex
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS, UNPROVEN, envelope, rules_of
from jitterlab.model.facts import SystemFacts, preemption_words
from jitterlab.model.records import RunRecord, Warning_
from jitterlab.model.units import format_ns
from jitterlab.report import causes, limits, verdicts
from jitterlab.report.causes_view import traced_lines
from jitterlab.report.format import MISSING, counted, format_value, percent
from jitterlab.report.limits import Measure
from jitterlab.report.traits import observer, own, period_ns, periodic, subject_of

HEADLINE = "max_rel_period_error"
MAX_OTHER_CELLS = 12  # cells of the other benchmarks listed; the rest are counted


@dataclass
class Screen:
    """What the screen needs besides the runs: how to read a sysinfo, the comparisons to make
    ((baseline, candidate) selectors), and the commands that are one step away."""

    results: str  # --results as the user gave it
    sysinfo_of: limits.FactsOf
    comparisons: list[tuple] = field(default_factory=list)
    # a run's within-run samples (analysis.samples.reader): tails compared as compare compares them
    samples: Callable[[RunRecord], dict] | None = None
    # how to add repetitions where a verdict is undecided; {pair} becomes BASELINE..CANDIDATE
    more_runs: str = "add repetitions where undecided: jitterlab run CAMPAIGN --resume --until-decided {pair}"
    # the traced runs' explanations (report/causes.py): the cells' causes, and the limits agreeing
    explanations: causes.Explanations | None = None
    # the command that measures a limit's fix through its tuning; {tuning} becomes its name ("": none
    # to give, e.g. imported captures, which jitterlab cannot measure again)
    measure: Measure = field(default_factory=Measure)


def screen(runs: list[RunRecord], campaign: str, how: Screen) -> list:
    """The renderables of the screen, in order: title, evidence, envelope, reading, comparisons,
    limits, where to look further."""
    out: list = [Text(f"{campaign}: what holds here", style="bold")]
    square = periodic(runs)
    infos = limits.sysinfo_by_target(runs, how.sysinfo_of)
    for target in sorted({r.target for r in runs}):
        out.append(_evidence_line(target, infos.get(target), [r for r in square if r.target == target]))
    if square:
        out.append(envelope_table(square))
        out += [Text(line) for line in reading(square, infos, how.results)]
    other = [r for r in runs if r not in square]
    if other:
        out += [Text(line) for line in other_lines(other, how.results)]
    for baseline, candidate in how.comparisons:
        judged = verdicts.verdicts(runs, baseline, candidate, how.samples)
        every_row = shlex.join(["jitterlab", "compare", "--results", how.results, "--campaign", campaign,
                                "--baseline", str(baseline), "--candidate", str(candidate)])
        out += [Text(line) for line in verdicts.lines(judged, how.more_runs, every_row)]
    traced = None
    if how.explanations is not None:
        out += [Text(line) for line in traced_lines(runs, how.explanations, how.measure)]
        traced = causes.traced_causes(runs, how.explanations)
    found = limits.limits(runs, how.sysinfo_of, traced)
    if found:
        out.append(Text("what limits these results on this machine, each with its fix and what it would "
                        "likely change:"))
        several = len({x.target for x in found}) > 1
        for x in found:
            where = f"{x.target}: " if several else ""
            line = limits.limit_measured_line(x, how.measure.template)
            measured = f"\n    {line}" if line else ""
            out.append(Text(f"- {where}{x.what}\n    fix: {x.fix}\n    likely: {x.likely}{measured}"))
    gaps = causes.uncovered_share(runs, how.explanations) if how.explanations is not None else {}
    for x in limits.withheld(runs, how.sysinfo_of, traced or {}):
        what = x.what.split(":")[0]
        gap = gaps.get(x.target, 0.0)
        # what the traces miss may hold it: said where they miss much
        missed = (f"; they do not cover {causes.percent_share(gap)} of the lateness (lost events)"
                  if gap >= 0.25 else "")
        out.append(Text(f"not proposed on {x.target}: {what} — its traced runs show none of the time it "
                        f"would cause ({', '.join(sorted(x.causes))}){missed}"))
    failed = sum(r.status != "ok" for r in runs)
    results = shlex.quote(how.results)
    more = f"every run{f' ({failed} not ok)' if failed else ''} and its warnings: jitterlab show --runs " \
           f"--results {results}; figures: jitterlab report --results {results} -o report.html"
    out.append(Text(more))
    return out


def _evidence_line(target: str, info: SystemFacts | None, square: list[RunRecord]) -> Text:
    """"local: a VM (kvm) ..." and, indented, its kernel and preemption model, each probe's
    independence and blind share, and the runs per cell."""
    from jitterlab.report.sections.squarewave import imported

    _, words = limits.evidence(info) if info else ("", "unknown (no sysinfo stored)")
    if not info and square and all(imported(r) for r in square):
        words = "captures imported from files (no sysinfo of the machine that made them)"
    parts = [f"{target}: {words}"]
    if info and (info.kernel_release or info.preemption):  # what a real-time engineer asks first
        parts.append(f"kernel {info.kernel_release or '?'} ({preemption_words(info.preemption)})")
    for probe in sorted({subject_of(r) for r in square}):
        mine = [r for r in square if subject_of(r) == probe]
        if not observer(probe).independent:
            parts.append(f"probe {probe}: the program's own timestamps (no independent check)")
            continue
        share = limits.blind_share(mine)
        most = f" (up to {percent(share[1])} in a run)" if share and share[1] > share[0] else ""
        blind = f", blind {percent(share[0])} of the measured time{most}" if share is not None else ""
        parts.append(f"probe {probe}: independent of the program{blind}")
    reps = sorted({n for n in _repetitions(square).values()})
    if reps:
        parts.append(f"{reps[0]}{'' if len(reps) == 1 else f'-{reps[-1]}'} run{'s' if reps[-1] > 1 else ''} "
                     "per cell")
    return Text("\n  ".join(parts))


def _repetitions(runs: list[RunRecord]) -> dict[tuple, int]:
    counts: dict[tuple, int] = defaultdict(int)
    for r in runs:
        counts[(r.target, r.cell, tuple(sorted(r.labels.items())))] += 1
    return counts


def _impl_of(runs: list[RunRecord]) -> Callable[[RunRecord], str]:
    from jitterlab.report.sections.squarewave import impl_namer  # the report's own naming of impls

    return impl_namer(runs)


def envelope_table(runs: list[RunRecord]) -> Table:
    """Per target x impl x load (x probe when several): the shortest period held under each rule
    and threshold, and the probe's blind share."""
    rules = rules_of(runs)
    impl_of = _impl_of(runs)
    rows: dict[tuple, list[str]] = {}
    for e in envelope(runs, rules=rules, impl_of=impl_of, period_of=period_ns, subject_of=subject_of):
        shortest = rows.setdefault((e.target, e.impl, e.load, e.probe), [])
        shortest += [format_value(p, "ns") if p else e.outcome(t) for t, p in e.shortest_ns.items()]
    several_targets = len({k[0] for k in rows}) > 1
    several_probes = len({k[3] for k in rows}) > 1
    table = Table(title="shortest period held in every run, and at every longer period measured",
                  title_justify="left")
    heads = (["target"] if several_targets else []) + ["impl", "load"] + (["probe"] if several_probes else [])
    for name in heads:
        table.add_column(name)
    for rule in rules:
        for t in DEFAULT_THRESHOLDS:
            table.add_column(f"{rule} < {percent(t)}", justify="right")
    table.add_column("blind", justify="right")
    for (target, impl, load, probe), shortest in rows.items():
        mine = [r for r in runs
                if (r.target, impl_of(r), r.load, subject_of(r)) == (target, impl, load, probe)]
        share = limits.blind_share(mine)  # None for the program's own view: no probe to be blind
        key = ([Text(target)] if several_targets else []) + [Text(impl), Text(load)] + (
            [Text(probe)] if several_probes else [])
        table.add_row(*key, *shortest, percent(share[0]) if share else MISSING)
    return table


def reading(runs: list[RunRecord], infos: dict[str, SystemFacts], results: str = "results") -> list[str]:
    """What the table means when it is mostly "none", and what to do next (`results`: the store
    as the commands it suggests name it)."""
    rules = rules_of(runs)
    rows = envelope(runs, rules=rules, impl_of=_impl_of(runs), period_of=period_ns, subject_of=subject_of)
    held = {rule: sum(any(p for p in e.shortest_ns.values()) for e in rows if e.rule == rule)
            for rule in rules}
    groups = len({(e.target, e.impl, e.load, e.probe) for e in rows})
    values = [v for r in runs if r.status == "ok" and (v := own(r, HEADLINE)) is not None]
    worst = percent(max(values)) if values else MISSING
    longest_ns = max(period_ns(r) for r in runs)
    longest = format_value(longest_ns, "ns")
    levels = {limits.evidence(info)[0] for info in infos.values()}
    # on VMs alone the limits below give the worst period with its cause: said once, there
    seen = "" if levels == {limits.VM} else f"the worst period was {worst} off"
    out = []
    if limits.EMULATED in levels:
        out.append("emulated CPU: read these as evidence that every program ran and was measured; no "
                   "period or error here is a timing claim")
    if not any(held.values()):
        worst_said = f"; {seen}" if seen else ""
        out.append(f"no impl was shown to hold even {percent(max(DEFAULT_THRESHOLDS))} at the longest period "
                   f"measured ({longest}){worst_said}. Next: remove the limits below, then add longer "
                   f"periods (e.g. \"{format_ns(10 * longest_ns)}\") to matrix.period to find where each "
                   "impl holds")
    elif "max" in held and held["max"] < groups and any(held[r] for r in rules if r != "max"):
        others = ", ".join(r for r in rules if r != "max")
        worst_said = f" ({seen})" if seen else ""
        out.append(f"max is the strictest rule: one stall in one run sinks a cell{worst_said}; the {others} "
                   "columns show what held for nearly every period")
    if any(e.outcome(t) == UNPROVEN for e in rows for t in e.shortest_ns):
        out.append("unproven: the periods the probe saw held, but it was blind where a worse one may hide; "
                   "a probe with a CPU of its own (see the limits below) proves or refutes them")
    not_ok = [r for r in runs if r.status != "ok"]
    if not_ok:
        statuses = sorted({r.status for r in not_ok})
        whose = "its cell holds" if len(not_ok) == 1 else "their cells hold"
        out.append(f"{counted(len(not_ok), 'run')} {'/'.join(statuses)}: {whose} nothing; why: "
                   f"jitterlab show --runs --results {shlex.quote(results)}")
    return out


def other_lines(runs: list[RunRecord], results: str = "results") -> list[str]:
    """The other benchmarks: each cell with its first headline value by its summary rule."""
    from jitterlab.analysis.summary import figure_name
    from jitterlab.report.summaries import summarize

    out = []
    for bench in summarize(runs):
        first = bench.columns[0] if bench.columns else None
        shown = bench.cells[:MAX_OTHER_CELLS]
        rule = next((c.values[first].rule for c in shown if first and first in c.values), "")
        out.append(f"{bench.benchmark}" + (f": {figure_name(first, rule)}" if first and rule else ""))
        for c in shown:
            v = c.values.get(first) if first else None
            out.append(f"  {c.name}  {format_value(v.value, v.unit) if v else c.status}")
        if len(bench.cells) > MAX_OTHER_CELLS:
            more = counted(len(bench.cells) - MAX_OTHER_CELLS, "more cell")
            out.append(f"  ... and {more} (jitterlab show --runs --results {shlex.quote(results)})")
    return out


def run_warnings(runs: list[RunRecord], stored: list[tuple[str | None, Warning_]]) -> list:
    """The warnings of runs and cells (stored with the runs, and what the report's sections tell
    from them), grouped by cause: each once, with how many runs or cells and its remedy."""
    from jitterlab.report.sections import section_notes
    from jitterlab.report.terminal import warnings_table
    from jitterlab.report.warning_groups import RUN, Note

    notes = [Note(RUN, run_id, w) for run_id, w in stored if run_id] + section_notes(runs)
    return [warnings_table(notes, "warnings about runs and cells, grouped by cause")] if notes else []
