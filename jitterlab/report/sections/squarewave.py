"""The squarewave section of the report and of the terminal summary: the paper's figure (maximum
relative period error vs period), the operational envelope, the cells table, per-run figures and
the self-measurement bias."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS, HELD, UNPROVEN, envelope, rules_of
from jitterlab.analysis.summary import MEDIAN, WORST, figure_name
from jitterlab.analysis.watched import NOT_WATCHED, watched_program_pin
from jitterlab.campaign import cells
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord, Warning_
from jitterlab.model.series import blind_spans
from jitterlab.model.traits import OWN_VIEW
from jitterlab.model.units import format_ns
from jitterlab.report.causes import traced
from jitterlab.report.format import percent
from jitterlab.report.limits import emulated_units
from jitterlab.report.sections.base import SECTIONS, SectionContext
from jitterlab.report.traits import benchmark_traits, observer, own, period_ns, subject_of
from jitterlab.report.warning_groups import CELL, Note
from jitterlab.report.wave_rules import HEADLINE, ordered_loads, unobserved

PERCENTILES = ("p50_rel_period_error", "p99_rel_period_error", "p999_rel_period_error",
               "p9999_rel_period_error")
DEMO_NOTE = f"{NOT_WATCHED}: the probe watched another signal, these are that signal's periods"
HIGH_VARIANCE_CV = 0.5  # std/mean of the headline over repetitions above which we warn
# the cells table's figures, named by what they are: the worst run's maximum and the median of the runs'
# maxima, then the percentiles of the worst run (the one the maximum names)
CELL_HEADS = (figure_name("max error", WORST), figure_name("max error", MEDIAN),
              *(figure_name(p, WORST) for p in ("p50", "p99", "p99.9", "p99.99")))


def impl_namer(runs: list[RunRecord]):
    """impl_of(run): the run's impl, with its pin when the runs use several ("python @gpiod") and
    the labels that tell cells apart and the tuning appended ("c-fifo [image=1.10]", "c-fifo
    [tuning=irq-away]"), so runs of two images or tunings never
    merge into one line or cell; labels that only number repetitions (capture=3) do not split cells
    (cells.identity_labels)."""
    varying = cells.identity_labels(runs)
    several_pins = len({r.param("pin", "") for r in runs}) > 1  # python on sysfs is not python on gpiod
    several_tunings = len({r.cell.tuning for r in runs}) > 1

    def impl_of(r: RunRecord) -> str:
        impl = str(r.param("impl", ""))
        if several_pins:
            impl = f"{impl} @{r.param('pin', '')}"
        # a label the run lacks ("image=") or one that repeats its own field (an import's impl=fpga)
        # tells nothing: the other runs' names differ from it all the same
        own = [k for k in varying if k in r.labels and str(r.labels[k]) != _field(r, k)]
        tags = [cells.labels_text(r, own)] if own else []
        if several_tunings:  # a tuning is a group like a label's value: "c-fifo [tuning=irq-away]"
            tags.append(f"tuning={r.cell.tuning}")
        return f"{impl} [{', '.join(tags)}]" if tags else impl

    return impl_of


def _field(r: RunRecord, key: str) -> str | None:
    """The run's own target, impl or load, which a label of that name may restate."""
    return {"target": r.target, "impl": str(r.param("impl", "")), "load": r.load}.get(key)


def imported(r: RunRecord) -> bool:
    """A run imported from a capture file (it names its source), not measured by a campaign."""
    return r.settings.imported is not None


def _cells(runs: list[RunRecord], impl_of) -> dict[tuple, list[RunRecord]]:
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        groups[(r.target, impl_of(r), r.load, period_ns(r), subject_of(r))].append(r)
    return groups


def _where(r: RunRecord) -> str:
    return f"{r.target} {cells.label(r.cell)}"


def _where_labelled(r: RunRecord, impl_of) -> str:
    """A cell as the tables name it: target, impl with the labels that tell cells apart, period,
    load, probe."""
    return f"{r.target} {impl_of(r)} {cells.show_value(r.cell, 'period')} {r.load} ({subject_of(r)})"


class SquarewaveSection:
    title = "Square wave"
    template = "squarewave.html.j2"

    def build(self, runs: list[RunRecord], ctx: SectionContext) -> dict:
        from jitterlab.report.figures import squarewave as figures  # matplotlib: for the report alone

        impl_of = impl_namer(runs)
        paper = [{"target": t, "svg": ctx.emit(figures.envelope_figure(runs, t, impl_of),
                                               f"error_vs_period_{t}", [t])}
                 for t in sorted({r.target for r in runs})]
        heads, rows = envelope_rows(runs, impl_of)
        emulated = {r.target for r in runs} & ctx.emulated
        units = emulated_units(runs, impl_of)
        for row in rows:
            row["emulated"] = row["target"] in emulated or (row["target"], row["impl"]) in units
        return {
            "paper": paper,
            "emulated": sorted(emulated),
            "emulated_units": [f"{target} (impl {impl})" for target, impl in sorted(units)],
            "blind_mark": f"{figures.BLIND_MARK_FRACTION * 100:g} %",
            "rules": rules_of(runs),
            "envelope_heads": heads,
            "envelope": rows,
            "cells": _cell_rows(runs, impl_of),
            "cell_heads": CELL_HEADS,
            "several_targets": len({r.target for r in runs}) > 1,  # else the title names it
            "run_figures": _run_figures(runs, impl_of, ctx),
            "bias": _bias_rows(runs, impl_of),
        }

    def terminal(self, runs: list[RunRecord], campaign: str, planned=None) -> list:
        return [summary_table(runs, f"{campaign}: max relative period error", planned),
                envelope_table(runs, f"{campaign}: operational envelope")]

    def warnings(self, runs: list[RunRecord]) -> list[Note]:
        out = []
        impl_of = impl_namer(runs)
        for cell in _cells(runs, impl_of).values():
            r0 = cell[0]
            where = _where_labelled(r0, impl_of)
            # an imported cell has no campaign file to set: its remedies are more or longer captures
            if len(cell) < 3:
                out.append(Note(CELL, where, Warning_(f"{len(cell)} repetition(s) per cell only", (
                    "import 3 or more captures of the cell (the same --period and --label values)"
                    if imported(r0) else "set campaign.repetitions to 3 or more"))))
            values = [v for r in cell if r.status == "ok" and (v := own(r, HEADLINE)) is not None]
            if len(values) >= 2 and statistics.mean(values) > 0:
                cv = statistics.pstdev(values) / statistics.mean(values)
                if cv > HIGH_VARIANCE_CV:
                    out.append(Note(CELL, where, Warning_(
                        f"high variance between repetitions (std/mean of {HEADLINE} = {cv:.2f})",
                        "capture longer, or import more captures; look for other load" if imported(r0) else
                        "measure longer (campaign.duration) or more repetitions; look for other load")))
        return out


# what an envelope cell says when no period holds, by why (analysis.envelope's outcomes)
ENVELOPE_WORDS = {UNPROVEN: "unproven (blind)"}


def envelope_text(row, threshold: float) -> str:
    """The shortest period, or why there is none: "none" (a run failed it), "unproven (blind)"
    (the probe's blindness leaves it unproven), "unavailable" (never ran on this target), "not
    the program's pin"."""
    outcome = row.outcome(threshold)
    if outcome == HELD:
        return format_ns(row.shortest_ns[threshold])
    return ENVELOPE_WORDS.get(outcome, outcome)


def envelope_rows(runs: list[RunRecord], impl_of) -> tuple[list[str], list[dict]]:
    """The envelope as people read it: one row per target x impl x load x probe, one column per
    rule and threshold ("max < 1 %", "p99 < 10 %"); periods as written in a campaign."""
    rules = rules_of(runs)
    heads = [f"{rule} < {t * 100:g} %" for rule in rules for t in DEFAULT_THRESHOLDS]
    rows: dict[tuple, dict] = {}
    for e in envelope(runs, rules=rules, impl_of=impl_of, period_of=period_ns, subject_of=subject_of):
        row = rows.setdefault((e.target, e.impl, e.load, e.probe), {
            "target": e.target, "impl": e.impl, "load": e.load, "probe": e.probe, "shortest": [],
            "periods": ", ".join(format_ns(p) for p in e.periods_ns), "reps": e.min_repetitions})
        row["shortest"] += [envelope_text(e, t) for t in e.shortest_ns]
    return heads, list(rows.values())


def envelope_table(runs: list[RunRecord], title: str) -> Table:
    """The envelope for the terminal: per impl x load x probe, the shortest period under each
    threshold by each rule of the campaign."""
    heads, rows = envelope_rows(runs, impl_namer(runs))
    multi_target = len({r.target for r in runs}) > 1
    table = Table(title=title, caption="shortest period that provably held in every repetition, and "
                  "every longer one too; max: the run's worst period, pNN: that percentile of its periods; "
                  "unproven (blind): under the threshold where the probe saw, not proven where it was "
                  "blind; unavailable: never ran on this target")
    for name in (["target"] if multi_target else []) + ["impl", "load", "probe"]:
        table.add_column(name)
    for head in heads:
        table.add_column(head, justify="right")
    table.add_column("reps", justify="right")
    for e in rows:
        table.add_row(*([e["target"]] if multi_target else []), Text(e["impl"]), e["load"], e["probe"],
                      *e["shortest"], str(e["reps"]))
    return table


NOT_YET, EXCLUDED, NO_RUN = "…", "–", "·"  # a cell without a run: planned, not in the matrix, unknown


def summary_table(runs: list[RunRecord], title: str, planned=None) -> Table:
    """Worst max relative period error over repetitions, per impl x load (rows) and period. A cell
    without a run is marked: not measured yet (in `planned`, the campaign's cells), excluded from
    the matrix (not in it), or, when the matrix is not known, no run stored."""
    wanted = None if planned is None else {
        (c.target, str(c.param("impl", "")), c.load, str(c.param("probe", "")), read(c))
        for c in planned if (read := benchmark_traits(c.benchmark).period_ns) is not None}
    raw_impl: dict[tuple, str] = {}
    impl_of = impl_namer(runs)
    targets = {r.target for r in runs}
    periods = sorted({period_ns(r) for r in runs} | {k[4] for k in wanted or () if k[0] in targets},
                     reverse=True)
    worst: dict[tuple, float] = {}
    censored: set[tuple] = set()  # a run's probe was blind: its worst is only "at least"
    foreign: dict[tuple, list[float]] = defaultdict(list)  # runs whose probe watched another signal
    trouble: dict[tuple, list[str]] = defaultdict(list)
    rows = []
    for r in runs:
        row = (r.target, impl_of(r), r.load, subject_of(r))
        if row not in rows:
            rows.append(row)
            raw_impl[row] = str(r.param("impl", ""))
        key = (*row, period_ns(r))
        value = own(r, HEADLINE)
        if r.status == "ok" and value is not None and not watched_program_pin(r):
            foreign[key].append(value)  # another signal's figure: never the program's worst
        elif r.status == "ok" and value is not None:
            # a blind run's worst provably reached its bound, and may have gone beyond
            worst[key] = max(worst.get(key, 0.0), value, own(r, "max_rel_period_error_bound") or 0.0)
            if unobserved(r):
                censored.add(key)
        else:
            trouble[key].append(r.status)
    multi_target = len({r.target for r in runs}) > 1
    table = Table(title=title, caption="worst over repetitions; green < 1 %, yellow < 10 %, red ≥ 10 %; "
                  "≥: the probe was blind to some periods, the true worst may be larger; "
                  f"{NOT_WATCHED}: the probe watched another signal, the value is that signal's; "
                  + (f"{NOT_YET} not measured yet, {EXCLUDED} excluded from the matrix" if wanted is not None
                     else f"{NO_RUN} no run stored (excluded from the matrix, or not measured yet)"))
    if multi_target:
        table.add_column("target")
    for name in ("impl", "load", "probe"):
        table.add_column(name)
    for p in periods:
        table.add_column(format_ns(p), justify="right")
    for row in rows:
        texts = []
        for p in periods:
            key = (*row, p)
            text = Text()
            if key in worst:
                text.append(("≥ " if key in censored else "") + percent(worst[key]), style=_style(worst[key]))
            if foreign.get(key):
                shown = "" if text else f"{percent(max(foreign[key]))} "  # a value only beside its mark
                more = f"+{len(foreign[key])} " if text else ""
                text.append((" " if text else "") + shown, style="dim")
                text.append(f"{more}{NOT_WATCHED}", style="bold magenta")
            if trouble.get(key):
                text.append((" " if text else "") + "/".join(sorted(set(trouble[key]))), style="bold red")
            if not text:
                planned_here = wanted is not None and (row[0], raw_impl[row], row[2], row[3], p) in wanted
                text = Text(NO_RUN if wanted is None else NOT_YET if planned_here else EXCLUDED)
            texts.append(text)
        table.add_row(*([row[0]] if multi_target else []), Text(row[1]), *row[2:], *texts)
    return table


def _style(value: float) -> str:
    return "green" if value < 0.01 else "yellow" if value < 0.1 else "red"


def _cell_rows(runs: list[RunRecord], impl_of) -> list[dict]:
    rows = []
    groups = _cells(runs, impl_of)
    loads = {load: i for i, load in enumerate(ordered_loads(k[2] for k in groups))}
    for (target, impl, load, period, probe), cell in sorted(
            groups.items(), key=lambda kv: (kv[0][0], kv[0][1], loads[kv[0][2]], -kv[0][3], kv[0][4])):
        every_ok = [r for r in cell if r.status == "ok" and own(r, HEADLINE) is not None]
        program = [r for r in every_ok if watched_program_pin(r)]
        foreign = len(every_ok) - len(program)  # runs whose probe watched another signal
        ok = program or every_ok  # the other signal's figures only where there is nothing else, marked
        worst = max(ok, key=lambda r: own(r, HEADLINE)) if ok else None
        rows.append({
            "target": target, "impl": impl, "load": load, "period": format_ns(period),
            "probe": probe, "reps": len(cell), "ok": len(every_ok),
            "status": ", ".join(f"{n} {s}" for s, n in sorted(Counter(r.status for r in cell).items())),
            "worst": own(worst, HEADLINE) if worst else None,
            "not_watched": (f"+{foreign} {NOT_WATCHED}" if program else NOT_WATCHED) if foreign else "",
            "muted": bool(foreign and not program),  # every figure of the row is another signal's
            "median": statistics.median(own(r, HEADLINE) for r in ok) if ok else None,
            "percentiles": [_value_and_interval(percentile_text(worst, p)) if worst else (percent(None), "")
                            for p in PERCENTILES],
            "excluded": int(sum(own(r, "excluded_periods") or 0 for r in ok)),
            "worst_run": worst.id if worst else "",
        })
    return rows


def _value_and_interval(text: str) -> tuple[str, str]:
    """"12.9 % [12.8 % – 13 %]" as its value and its interval, which a table may set on two lines;
    the interval may fold only after its dash, never between a number and its unit."""
    value, bracket, interval = text.partition(" [")
    return value, (bracket.strip() + interval).replace(" %", "\u00a0%")


def most_informative(runs: list[RunRecord], impl_of) -> list[RunRecord]:
    """The worst run of each target x impl x load (over all periods; an independent probe's
    cells before the program's own view, runs that watched the program's pin before those whose probe
    watched another signal), in impl and load order: every programming model and
    every load gets its figure, instead of only the shortest period's cells."""
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        if r.status == "ok" and own(r, HEADLINE) is not None and r.raw_path:
            groups[(r.target, impl_of(r), r.load)].append(r)
    loads = {load: i for i, load in enumerate(ordered_loads(k[2] for k in groups))}
    picked = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], loads[k[2]])):
        independent = [r for r in groups[key] if observer(subject_of(r)).independent] or groups[key]
        program = [r for r in independent if watched_program_pin(r)] or independent
        picked.append(max(program, key=lambda r: own(r, HEADLINE)))
    return picked


def _run_figures(runs: list[RunRecord], impl_of, ctx: SectionContext) -> list[dict]:
    """Histogram and timeline of the worst run of each impl x load, at most max_run_figures."""
    from jitterlab.report.figures import squarewave as figures

    limit = ctx.max_run_figures
    worst = most_informative(runs, impl_of)
    if len(worst) > limit:
        ctx.skipped.append(f"per-run figures of {len(worst) - limit} more impl x load groups (the "
                           f"first {limit} are drawn; raise --max-run-figures; every cell is in the table)")
    out = []
    for r in worst[:limit]:
        try:
            series = ctx.store.read_series(r)
        except UserError as exc:
            ctx.skipped.append(f"run {r.id} ({_where(r)}): {exc}")
            continue
        warmup_ns = r.settings.warmup_ns or 0
        errors, timeline = {}, {}
        for probe in (subject_of(r), OWN_VIEW):
            if probe in series and probe not in errors:
                blind = series.get(f"{probe}.blind")
                spans = blind_spans(blind) if blind is not None and len(blind) else None
                t_s, e = figures.period_errors(series[probe], period_ns(r), warmup_ns, spans)
                errors[probe], timeline[probe] = e, (t_s, e)
        if not any(len(e) for e in errors.values()):
            ctx.skipped.append(f"run {r.id} ({_where(r)}): no periods after the warm-up to draw")
            continue
        # named as the tables name its cell: with the labels that tell groups apart (image=A)
        title = f"run {r.id}: {_where_labelled(r, impl_of)}, repetition {r.repetition + 1}"
        title += " (traced)" if traced(r) else ""
        note = "" if watched_program_pin(r) else DEMO_NOTE
        out.append({
            "id": r.id, "title": title, "worst": own(r, HEADLINE),
            "hist": ctx.emit(figures.histogram_figure(errors, title, _marks(r), note),
                             f"run_{r.id}_histogram", [r.target]),
            "note": note,
            "timeline": ctx.emit(figures.timeline_figure(timeline, period_ns(r), title, note),
                                 f"run_{r.id}_period", [r.target]),
            "percentiles": [(label, {pr: percentile_text(r, p, pr) for pr in errors})
                            for label, p in zip(("max", "p50", "p99", "p99.9", "p99.99"),
                                                (HEADLINE, *PERCENTILES), strict=True)],
            "probes": list(errors),
        })
    return out


def _marks(r: RunRecord) -> dict[str, float | None]:
    """The percentiles of |period error| a run's histogram marks, from its stored metrics."""
    return {label: own(r, name) for label, name in (("p50", PERCENTILES[0]), ("p99", PERCENTILES[1]),
                                                      ("p99.9", PERCENTILES[2]), ("max", HEADLINE))}



def percentile_text(r: RunRecord, name: str, probe: str | None = None) -> str:
    """A percentile (or the max) of a run as people read it: the value, and where the probe did
    not observe every period the interval it lies in ("0 % [0 % – 10 %]", "0 % [0 % – unbounded]")."""
    probe = subject_of(r) if probe is None else probe
    value = r.metric(name, probe)
    if value is None or not unobserved(r, probe):
        return percent(value)
    if name == HEADLINE:
        low, high = r.metric("max_rel_period_error_bound", probe), None
    else:
        low, high = r.metric(f"{name}_lower_bound", probe), r.metric(f"{name}_upper_bound", probe)
    return (f"{percent(value)} [{percent(low or 0.0)} – "
            f"{percent(high) if high is not None else 'unbounded'}]")


def _bias_rows(runs: list[RunRecord], impl_of) -> list[dict]:
    """Self probe vs the independent probe per cell: how far the program's own view is off. A side
    whose probe did not observe every period has a maximum that is only a lower bound: the ratio
    then says so ("≥ 0.28", "≤ 3.5"), or is not given when both sides are censored."""
    rows = []
    for (target, impl, load, period, probe), cell in sorted(_cells(runs, impl_of).items()):
        if not observer(probe).independent:
            continue
        both = [r for r in cell if r.status == "ok"
                and r.metric(HEADLINE, OWN_VIEW) is not None and r.metric(HEADLINE, probe) is not None]
        ok = [r for r in both if watched_program_pin(r)]  # another signal says nothing of the bias
        if both and not ok:
            rows.append({"cell": f"{target} {impl} {load} {format_ns(period)}", "probe": probe,
                         "self": statistics.median(r.metric(HEADLINE, OWN_VIEW) for r in both), "other": None,
                         "ratio": NOT_WATCHED, "censored": "", "n": len(both)})
        if ok:
            s = statistics.median(r.metric(HEADLINE, OWN_VIEW) for r in ok)
            v = statistics.median(r.metric(HEADLINE, probe) for r in ok)
            blind = {side: sum(unobserved(r, side) for r in ok) for side in (probe, OWN_VIEW)}
            rows.append({"cell": f"{target} {impl} {load} {format_ns(period)}", "probe": probe, "self": s,
                         "other": v, "ratio": _bias_ratio(v, s, blind[probe] > 0, blind[OWN_VIEW] > 0),
                         "censored": _censored_text(probe, blind), "n": len(ok)})
    return rows


def _bias_ratio(probe_max: float, self_max: float, probe_blind: bool, self_blind: bool) -> str:
    """probe / self of the maxima; a censored maximum is a lower bound, so the ratio is one too
    (probe side censored: "≥"), an upper bound (self side: "≤"), or unknown (both)."""
    if not self_max or (probe_blind and self_blind):
        return "—"
    mark = "≥ " if probe_blind else "≤ " if self_blind else ""
    return f"{mark}{probe_max / self_max:.3g}"


def _censored_text(probe: str, blind: dict[str, int]) -> str:
    """Which side's maximum is censored by blindness, with how many periods it did not observe."""
    return "; ".join(f"{side} blind: {n:,} periods unobserved, its max is a lower bound"
                     for side, n in blind.items() if n) or ""


SECTIONS.add("squarewave", "the square-wave benchmark: error vs period, envelope, per-run figures",
             SquarewaveSection())
