"""Tables for the terminal: the campaign summary and the runs of a store."""

from __future__ import annotations

from rich.table import Table

from jitterlab.report.format import percent
from jitterlab.report.standard import headline_value, run_label
from jitterlab.store.catalog import RunRecord
from jitterlab.units import format_ns

HEADLINE = "max_rel_period_error"


def runs_table(runs: list[RunRecord]) -> Table:
    multi_target = len({r.target for r in runs}) > 1
    any_error = any(r.error for r in runs)
    table = Table(title=f"{len(runs)} runs")
    columns = [
        ("run", "left"),
        ("target", "left"),
        ("cell", "left"),
        ("rep", "right"),
        ("status", "left"),
        ("headline", "right"),
        ("excluded", "right"),
        ("why", "left"),
    ]
    any_excluded = any(r.metric("excluded_periods") is not None for r in runs)
    for name, justify in columns:
        if (
            (name == "target" and not multi_target)
            or (name == "why" and not any_error)
            or (name == "excluded" and not any_excluded)
        ):
            continue
        table.add_column(  # the cell and why wrap; the short columns keep their width
            name, justify=justify, no_wrap=name not in ("cell", "why"), min_width=len(name)  # type: ignore[arg-type]
        )
    for r in runs:
        excluded = r.metric("excluded_periods")
        status = r.status if r.status == "ok" else f"[red]{r.status}[/]"
        value = r.metric(HEADLINE)
        row = {
            "run": r.id,
            "target": r.target,
            "cell": run_label(r),
            "rep": str(r.repetition + 1),
            "status": status,
            "headline": percent(value) if value is not None else headline_value(r),
            "excluded": f"{excluded:.0f}" if excluded is not None else "",
            "why": (r.error or "")[:120],
        }
        table.add_row(*(row[c.header] for c in table.columns))  # type: ignore[index]
    return table


def summary_tables(runs: list[RunRecord], campaign: str) -> list:
    """Each report section's summary: squarewave's error table, one table per other benchmark."""
    from jitterlab.report.sections import by_section

    return [table for section, mine in by_section(runs) for table in section.terminal(mine, campaign)]


def run_detail(run: RunRecord, warnings: list, sysinfo: dict) -> list:
    """Renderables describing one run completely."""
    head = Table.grid(padding=(0, 2))
    for key, value in (
        ("run", run.id),
        ("cell", run.cell_key),
        ("repetition", run.repetition + 1),
        ("status", run.status),
        ("error", run.error or ""),
        ("labels", ", ".join(f"{k}={v}" for k, v in run.labels.items())),
        ("raw", f"{run.raw_path} (sha256 {run.raw_sha256[:16]}…)" if run.raw_path else ""),
        ("attachments", ", ".join(run.attachments.values())),
        ("wall time", f"{run.wall_s:.2f} s"),
        ("kernel", f"{sysinfo.get('kernel_release', '?')} {sysinfo.get('preemption', '')}".strip()),
    ):
        if value != "":
            head.add_row(f"[bold]{key}[/]", str(value))
    metrics = Table(title="metrics")
    for name in ("probe", "metric", "value", "unit"):
        metrics.add_column(name, justify="right" if name == "value" else "left")
    for (probe, name), m in sorted(run.metrics.items()):
        if m.unit == "ratio":
            shown, unit = percent(m.value), ""
        elif m.unit == "ns":
            shown, unit = format_ns(m.value), ""
        else:
            shown, unit = f"{m.value:.6g}", m.unit
        metrics.add_row(probe or "-", name, shown, unit)
    parts: list = [head, metrics]
    if warnings:
        notes = Table(title="warnings")
        notes.add_column("what")
        notes.add_column("remedy")
        for _, w in warnings:
            notes.add_row(w.message, w.remedy)
        parts.append(notes)
    return parts
