"""One self-contained HTML report (inline SVG, no network) plus the figures as PNG/SVG beside it.

Figures cost ~50-100 ms each, so only a bounded number of individual runs get figures (the worst
run of the worst cells); every cell is in the tables. What could not be shown is listed, with why.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import shlex
import statistics
from collections import Counter, defaultdict
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import jinja2

from jitterlab import __version__
from jitterlab.analysis.compare import Comparison, label_pairs
from jitterlab.analysis.samples import reader
from jitterlab.campaign import cells
from jitterlab.model.campaigns import CampaignEntry
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.report import limits, verdicts
from jitterlab.report.causes_html import why_late_section
from jitterlab.report.comparison import comparison_rows, comparison_warnings, note_lines
from jitterlab.report.figures.base import MAX_ROWS, mark_emulated, quiet, svg_text
from jitterlab.report.figures.compare import censored_rows, charted_rows, compare_figure
from jitterlab.report.format import format_value, percent
from jitterlab.report.sections import SectionContext, by_section, section_notes
from jitterlab.report.selection import Selection, campaign_title, select
from jitterlab.report.terminal import sysinfo_text
from jitterlab.report.traits import benchmark_traits
from jitterlab.report.warning_groups import RUN, SYSTEM, Note, grouped
from jitterlab.store.catalog import Store

SYSINFO_KEYS = ("hostname", "os_name", "kernel_release", "preemption", "machine", "cpu_model",
                "n_cpus", "clocksource", "virtualization", "isolcpus", "nohz_full",
                "rt_permission", "cmdline", "runtimes", "programs_build")
MAX_RUN_FIGURES = 12
MAX_COMPARISONS = 4


@dataclass
class Report:
    path: Path
    figure_files: list[Path] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    n_runs: int = 0
    shown: Selection | None = None


def render(store: Store, out: Path, *, campaigns: list[str] | None = None,
           max_run_figures: int = MAX_RUN_FIGURES, figure_files: bool = True,
           results: str | None = None) -> Report:
    """Write the report to `out` (and figures to `<out stem>_figures/`): the latest measurement of
    each label set of `campaigns` (default: the campaign measured last), report/selection.py;
    `results`: the store as the page's commands name it (default: where it is)."""
    shown = select(store, campaigns)
    chosen, runs = shown.campaigns, shown.runs
    out = Path(out)
    report = Report(out, n_runs=len(runs), shown=shown)
    fig_dir = out.with_name(out.stem + "_figures")
    if figure_files:
        fig_dir.mkdir(parents=True, exist_ok=True)

    emulated = frozenset(limits.emulated_targets(runs, store.sysinfo))

    def emit(fig, name: str, targets: Collection[str]) -> str:
        svg = svg_text(mark_emulated(fig, emulated, targets))
        if figure_files:
            (fig_dir / f"{name}.svg").write_text(svg)
            png = fig_dir / f"{name}.png"
            fig.savefig(png, format="png", dpi=100)
            report.figure_files += [fig_dir / f"{name}.svg", png]
        return svg

    ctx = SectionContext(store, emit, report.skipped, max_run_figures, emulated)
    if not runs:
        report.skipped.append("every section: the selected campaign has no runs")
    with quiet():
        sections = [{"title": section.title, "template": section.template, "s": section.build(mine, ctx)}
                    for section, mine in by_section(runs)]
        again = ["compare", "--results", results or store.where,
                 *(w for name in dict.fromkeys(c.name for c in chosen) for w in ("--campaign", name))]
        comparisons = _comparisons(store, runs, emit, report.skipped, again)
        names = {c.name for c in chosen}
        latest = store.latest_campaign(names.pop()) if len(names) == 1 else None
        measure = limits.measure_of(latest, runs, store.sysinfo, str(results or store.where))
        why_late = why_late_section(store, runs, emit, report.skipped, measure)
    context = {
        "title": "jitterlab report: " + ", ".join(dict.fromkeys(c.name for c in chosen)),
        "generated": dt.datetime.now().isoformat(timespec="seconds"),
        "version": __version__,
        "campaigns": [{"title": campaign_title(c), "id": c.id} for c in chosen],
        "left_out": shown.left_out(f"jitterlab report --results {shlex.quote(results or store.where)} "
                                   f"-o {shlex.quote(str(out))}"),
        "n_runs": len(runs),
        "status_counts": sorted(Counter(r.status for r in runs).items()),
        "sections": sections,
        "targets": _targets(store, runs),
        "warnings": _warnings(store, chosen, runs),
        "comparisons": comparisons,
        "why_late": why_late,
        "failed": [{"id": r.id, "cell": _cell_label(r), "status": r.status, "error": r.error or ""}
                   for r in runs if r.status != "ok"],
        "skipped": report.skipped,
        "figure_dir": fig_dir.name if figure_files else None,
    }
    env = jinja2.Environment(loader=jinja2.PackageLoader("jitterlab.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["pct"] = percent
    env.filters["value"] = format_value
    out.write_text(env.get_template("report.html.j2").render(**context), encoding="utf-8")
    return report


def _cell_label(r: RunRecord) -> str:
    return f"{r.target} {cells.label(r.cell)}"


def _targets(store: Store, runs: list[RunRecord]) -> list[dict]:
    out = []
    for target in sorted({r.target for r in runs}):
        mine = [r for r in runs if r.target == target]
        ids = [r.sysinfo_id for r in mine if r.sysinfo_id is not None]
        facts = store.sysinfo(ids[-1]) if ids else None
        stored = facts.as_json() if facts is not None else {}  # each fact under the name it is stored by
        summary = [(k, sysinfo_text(k, stored[k])) for k in SYSINFO_KEYS
                   if stored.get(k) not in (None, "", [])]
        if stored.get("cpus"):
            summary.append(("frequency", sysinfo_text("cpus", stored["cpus"])))
        loads: dict[tuple[str, str, str], list[float]] = defaultdict(list)
        for r in mine:
            for (_, name), m in r.metrics.items():
                if name.startswith("load_"):
                    loads[(r.load, name, m.unit)].append(m.value)
        out.append({"name": target, "sysinfo": summary,
                    "loads": [{"load": k[0], "metric": k[1], "unit": k[2], "n": len(v),
                               "median": format_value(statistics.median(v), k[2])}
                              for k, v in sorted(loads.items())]})
    return out


def _warnings(store: Store, campaigns: list[CampaignEntry], runs: list[RunRecord]) -> list[dict]:
    """Warnings grouped by cause, each once with how many runs or cells it concerns and its
    remedy; the system-level ones (targets, campaigns) first."""
    notes = []
    for c in campaigns:
        for run_id, w in store.warnings(c.id):
            notes.append(Note(RUN, run_id, w) if run_id else Note(SYSTEM, f"campaign {c.name}", w))
    notes += section_notes(runs)
    return [{"message": g.message, "remedy": g.remedy, "system": g.scope == SYSTEM,
             "affected": g.affected, "examples": g.examples} for g in grouped(notes)]


def _comparisons(store: Store, runs: list[RunRecord], emit, skipped: list[str],
                 again: list[str]) -> list[dict]:
    """Each label comparison as `summary` and `compare` judge it (report.verdicts.judged): a chart of
    its tested rows, a table of them and of the load readings beside them (shown, not tested), and
    the command that lists every row (`again`: `compare` with the page's store and campaigns)."""
    out = []
    pairs = label_pairs(runs)
    if len(pairs) > MAX_COMPARISONS:
        skipped.append(f"{len(pairs) - MAX_COMPARISONS} label comparisons beyond the first "
                       f"{MAX_COMPARISONS} (use jitterlab compare)")
    samples = reader(store.read_series, benchmark_traits)
    for base, cand in pairs[:MAX_COMPARISONS]:
        try:
            judged = verdicts.judged(runs, base, cand, samples)
        except UserError as exc:
            skipped.append(f"comparison {cand} vs {base}: {exc}")
            continue
        result: Comparison = dataclasses.replace(judged, rows=[
            r for r in judged.rows if r.tested or (r.metric.startswith("load_") and "_per_s" in r.metric)])
        heads, rows = comparison_rows(result)
        # the chart draws the rows judged: every tested metric, p99 as well as the maximum
        tested = {r.metric for r in judged.rows if r.tested}
        censored = censored_rows(result, runs, cells.names())
        chart = compare_figure(result, tested, censored)
        out.append({
            "title": f"{cand} vs {base}",
            "svg": emit(chart, f"compare_{base.key}_{base.value}_{cand.value}",
                        {r.target for r in runs if base.matches(r) or cand.matches(r)}),
            "caption": _chart_caption(judged, charted_rows(result, tested), len(rows), censored),
            "every_row": shlex.join(["jitterlab", *again, "--baseline", str(base), "--candidate", str(cand),
                                     "--all"]),
            "heads": heads, "rows": rows, "verdicts": [r.verdict for r in result.rows],
            "note": note_lines(result),
            "warnings": comparison_warnings(result),
        })
    return out


def _chart_caption(judged: Comparison, charted: list, shown: int, censored: Collection = ()) -> str:
    """How many of the comparison's rows the chart and the table show, and which; what a caret beside
    a point says, when one is drawn (`censored`: the rows whose change is only a bound)."""
    from jitterlab.report.format import counted

    drawn = len(charted)
    bounded = sum((r.cell, r.probe, r.metric) in censored for r in charted)
    carets = (f" A caret beside {counted(bounded, 'point')}: a group's maximum there is only a lower bound "
              "(its probe missed periods: the tables' \"≥\"), so the change is a bound: ▸ ≥ where it is the "
              "candidate's (the change may be larger), ◂ ≤ where it is the baseline's (it may be smaller), "
              "both carets and \"either way\" where it is both groups' (it may be larger or smaller: the "
              "point says nothing of the change's direction).")
    carets = carets if bounded else ""
    tested = len(judged.tested_rows)
    metrics = ", ".join(sorted({r.metric for r in judged.tested_rows})) or "none"
    left = tested - drawn
    why = (f"; {counted(left, 'tested row')} more in the table (a signed metric has no ratio to draw, "
           f"or past the chart's first {MAX_ROWS})") if left else ""
    return (f"The chart: {drawn} of the comparison's {counted(len(judged.rows), 'row')}, the tested ones "
            f"(the watched metrics: {metrics}), each cell's change with its repeated 95 % interval{why}."
            f"{carets} The table: the {counted(tested, 'tested row')} and the load readings beside them, "
            f"{shown} of {len(judged.rows)}, judged as compare and summary judge them (tails on all "
            "samples where stored)")
