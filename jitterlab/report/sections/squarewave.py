"""The squarewave section of the report and of the terminal summary: the paper's figure (maximum
relative period error vs period), the operational envelope, the cells table, per-run figures and
the self-measurement bias."""

from __future__ import annotations

import statistics
from collections import Counter, defaultdict

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.envelope import DEFAULT_THRESHOLDS, envelope, rules_of
from jitterlab.campaign import cells
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord, Warning_
from jitterlab.model.series import blind_spans
from jitterlab.model.units import format_ns
from jitterlab.report.figures import squarewave as figures
from jitterlab.report.format import percent
from jitterlab.report.sections.base import SECTIONS, SectionContext

HEADLINE = figures.HEADLINE
PERCENTILES = ("p50_rel_period_error", "p99_rel_period_error", "p999_rel_period_error",
               "p9999_rel_period_error")
HIGH_VARIANCE_CV = 0.5  # std/mean of the headline over repetitions above which we warn


def period_ns(r: RunRecord) -> int:
    return int(r.param("period", 0) or 0)


def impl_namer(runs: list[RunRecord]):
    """impl_of(run): the run's impl, with its pin when the runs use several ("python @gpiod") and
    the labels that tell cells apart appended ("c-fifo [image=1.10]"), so runs of two images never
    merge into one line or cell; labels that only number repetitions (capture=3) do not split cells
    (cells.identity_labels)."""
    varying = cells.identity_labels(runs)
    several_pins = len({r.param("pin", "") for r in runs}) > 1  # python on sysfs is not python on gpiod

    def impl_of(r: RunRecord) -> str:
        impl = str(r.param("impl", ""))
        if several_pins:
            impl = f"{impl} @{r.param('pin', '')}"
        return f"{impl} [{cells.labels_text(r, varying)}]" if varying else impl

    return impl_of


def _cells(runs: list[RunRecord], impl_of) -> dict[tuple, list[RunRecord]]:
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        groups[(r.target, impl_of(r), r.load, period_ns(r), r.probe)].append(r)
    return groups


def _where(r: RunRecord) -> str:
    return f"{r.target} {cells.label(r.cell)}"


class SquarewaveSection:
    title = "Square wave"
    template = "squarewave.html.j2"

    def build(self, runs: list[RunRecord], ctx: SectionContext) -> dict:
        impl_of = impl_namer(runs)
        paper = [{"target": t, "svg": ctx.emit(figures.envelope_figure(runs, t, impl_of),
                                               f"error_vs_period_{t}")}
                 for t in sorted({r.target for r in runs})]
        heads, rows = envelope_rows(runs, impl_of)
        emulated = emulated_targets(runs, ctx.store)
        for row in rows:
            row["emulated"] = row["target"] in emulated
        return {
            "paper": paper,
            "emulated": sorted(emulated),
            "blind_mark": f"{figures.BLIND_MARK_FRACTION * 100:g} %",
            "rules": rules_of(runs),
            "envelope_heads": heads,
            "envelope": rows,
            "cells": _cell_rows(runs, impl_of),
            "run_figures": _run_figures(runs, impl_of, ctx),
            "bias": _bias_rows(runs, impl_of),
        }

    def terminal(self, runs: list[RunRecord], campaign: str) -> list:
        return [summary_table(runs, f"{campaign}: max relative period error"),
                envelope_table(runs, f"{campaign}: operational envelope")]

    def warnings(self, runs: list[RunRecord]) -> list[tuple[str, Warning_]]:
        out = []
        for cell in _cells(runs, impl_namer(runs)).values():
            r0 = cell[0]
            if len(cell) < 3:
                out.append((_where(r0), Warning_(f"{len(cell)} repetition(s) per cell only",
                                                 "set campaign.repetitions to 3 or more")))
            values = [v for r in cell if r.status == "ok" and (v := r.metric(HEADLINE)) is not None]
            if len(values) >= 2 and statistics.mean(values) > 0:
                cv = statistics.pstdev(values) / statistics.mean(values)
                if cv > HIGH_VARIANCE_CV:
                    out.append((_where(r0), Warning_(
                        f"high variance between repetitions (std/mean of {HEADLINE} = {cv:.2f})",
                        "measure longer (campaign.duration) or more repetitions; look for other load")))
        return out


def emulated_targets(runs: list[RunRecord], store) -> set[str]:
    """The targets that were VMs under TCG (an emulated CPU): their numbers are functional evidence
    only, and the envelope says so."""
    out = set()
    for sysinfo_id in {r.sysinfo_id for r in runs if r.sysinfo_id is not None}:
        if store.sysinfo(sysinfo_id).get("vm_accel") == "tcg":
            out |= {r.target for r in runs if r.sysinfo_id == sysinfo_id}
    return out


def envelope_rows(runs: list[RunRecord], impl_of) -> tuple[list[str], list[dict]]:
    """The envelope as people read it: one row per target x impl x load x probe, one column per
    rule and threshold ("max < 1 %", "p99 < 10 %"); periods as written in a campaign."""
    rules = rules_of(runs)
    heads = [f"{rule} < {t * 100:g} %" for rule in rules for t in DEFAULT_THRESHOLDS]
    rows: dict[tuple, dict] = {}
    for e in envelope(runs, rules=rules, impl_of=impl_of):
        row = rows.setdefault((e.target, e.impl, e.load, e.probe), {
            "target": e.target, "impl": e.impl, "load": e.load, "probe": e.probe, "shortest": [],
            "periods": ", ".join(format_ns(p) for p in e.periods_ns), "reps": e.min_repetitions})
        row["shortest"] += [format_ns(p) if p else "none" for p in e.shortest_ns.values()]
    return heads, list(rows.values())


def envelope_table(runs: list[RunRecord], title: str) -> Table:
    """The envelope for the terminal: per impl x load x probe, the shortest period under each
    threshold by each rule of the campaign."""
    heads, rows = envelope_rows(runs, impl_namer(runs))
    multi_target = len({r.target for r in runs}) > 1
    table = Table(title=title, caption="shortest period that held in every repetition, and every "
                  "longer one too; max: the run's worst period, pNN: that percentile of its periods")
    for name in (["target"] if multi_target else []) + ["impl", "load", "probe"]:
        table.add_column(name)
    for head in heads:
        table.add_column(head, justify="right")
    table.add_column("reps", justify="right")
    for e in rows:
        table.add_row(*([e["target"]] if multi_target else []), Text(e["impl"]), e["load"], e["probe"],
                      *e["shortest"], str(e["reps"]))
    return table


def summary_table(runs: list[RunRecord], title: str) -> Table:
    """Worst max relative period error over repetitions, per impl x load (rows) and period."""
    impl_of = impl_namer(runs)
    periods = sorted({period_ns(r) for r in runs}, reverse=True)
    worst: dict[tuple, float] = {}
    trouble: dict[tuple, list[str]] = defaultdict(list)
    rows = []
    for r in runs:
        row = (r.target, impl_of(r), r.load, r.probe)
        if row not in rows:
            rows.append(row)
        key = (*row, period_ns(r))
        value = r.metric(HEADLINE)
        if r.status == "ok" and value is not None:
            worst[key] = max(worst.get(key, 0.0), value)
        else:
            trouble[key].append(r.status)
    multi_target = len({r.target for r in runs}) > 1
    table = Table(title=title, caption="worst over repetitions; green < 1 %, yellow < 10 %, red ≥ 10 %")
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
                text.append(percent(worst[key]), style=_style(worst[key]))
            if trouble.get(key):
                text.append((" " if text else "") + "/".join(sorted(set(trouble[key]))), style="bold red")
            texts.append(text or Text("·"))
        table.add_row(*([row[0]] if multi_target else []), Text(row[1]), *row[2:], *texts)
    return table


def _style(value: float) -> str:
    return "green" if value < 0.01 else "yellow" if value < 0.1 else "red"


def _cell_rows(runs: list[RunRecord], impl_of) -> list[dict]:
    rows = []
    groups = _cells(runs, impl_of)
    loads = {load: i for i, load in enumerate(figures.ordered_loads(k[2] for k in groups))}
    for (target, impl, load, period, probe), cell in sorted(
            groups.items(), key=lambda kv: (kv[0][0], kv[0][1], loads[kv[0][2]], -kv[0][3], kv[0][4])):
        ok = [r for r in cell if r.status == "ok" and r.metric(HEADLINE) is not None]
        worst = max(ok, key=lambda r: r.metric(HEADLINE)) if ok else None
        rows.append({
            "target": target, "impl": impl, "load": load, "period": format_ns(period),
            "probe": probe, "reps": len(cell), "ok": len(ok),
            "status": ", ".join(f"{n} {s}" for s, n in sorted(Counter(r.status for r in cell).items())),
            "worst": worst.metric(HEADLINE) if worst else None,
            "median": statistics.median(r.metric(HEADLINE) for r in ok) if ok else None,
            "percentiles": [worst.metric(p) if worst else None for p in PERCENTILES],
            "excluded": int(sum(r.metric("excluded_periods") or 0 for r in ok)),
            "worst_run": worst.id if worst else "",
        })
    return rows


def most_informative(runs: list[RunRecord], impl_of) -> list[RunRecord]:
    """The worst run of each target x impl x load (over all periods; an independent probe's
    cells before the program's own view), in impl and load order: every programming model and
    every load gets its figure, instead of only the shortest period's cells."""
    groups: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        if r.status == "ok" and r.metric(HEADLINE) is not None and r.raw_path:
            groups[(r.target, impl_of(r), r.load)].append(r)
    loads = {load: i for i, load in enumerate(figures.ordered_loads(k[2] for k in groups))}
    picked = []
    for key in sorted(groups, key=lambda k: (k[0], k[1], loads[k[2]])):
        independent = [r for r in groups[key] if r.probe != "self"] or groups[key]
        picked.append(max(independent, key=lambda r: r.metric(HEADLINE)))
    return picked


def _run_figures(runs: list[RunRecord], impl_of, ctx: SectionContext) -> list[dict]:
    """Histogram and timeline of the worst run of each impl x load, at most max_run_figures."""
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
        warmup_ns = int(r.settings.get("warmup_ns", 0))
        errors, timeline = {}, {}
        for probe in (r.probe, "self"):
            if probe in series and probe not in errors:
                blind = series.get(f"{probe}.blind")
                spans = blind_spans(blind) if blind is not None and len(blind) else None
                t_s, e = figures.period_errors(series[probe], period_ns(r), warmup_ns, spans)
                errors[probe], timeline[probe] = e, (t_s, e)
        if not any(len(e) for e in errors.values()):
            ctx.skipped.append(f"run {r.id} ({_where(r)}): no periods after the warm-up to draw")
            continue
        title = f"run {r.id}: {_where(r)}, repetition {r.repetition + 1}"
        out.append({
            "id": r.id, "title": title, "worst": r.metric(HEADLINE),
            "hist": ctx.emit(figures.histogram_figure(errors, title), f"run_{r.id}_histogram"),
            "timeline": ctx.emit(figures.timeline_figure(timeline, period_ns(r), title),
                                 f"run_{r.id}_period"),
            "percentiles": [(label, {pr: r.metric(p, pr) for pr in errors})
                            for label, p in zip(("max", "p50", "p99", "p99.9", "p99.99"),
                                                (HEADLINE, *PERCENTILES), strict=True)],
            "probes": list(errors),
        })
    return out


def _bias_rows(runs: list[RunRecord], impl_of) -> list[dict]:
    """Self probe vs the independent probe per cell: how far the program's own view is off."""
    rows = []
    for (target, impl, load, period, probe), cell in sorted(_cells(runs, impl_of).items()):
        if probe == "self":
            continue
        pairs = [(r.metric(HEADLINE, "self"), r.metric(HEADLINE, probe)) for r in cell if r.status == "ok"]
        pairs = [(s, v) for s, v in pairs if s is not None and v is not None]
        if pairs:
            s = statistics.median(p[0] for p in pairs)
            v = statistics.median(p[1] for p in pairs)
            rows.append({"cell": f"{target} {impl} {load} {format_ns(period)}", "probe": probe, "self": s,
                         "other": v, "ratio": f"{v / s:.3g}" if s else "—", "n": len(pairs)})
    return rows


SECTIONS.add("squarewave", "the square-wave benchmark: error vs period, envelope, per-run figures",
             SquarewaveSection())
