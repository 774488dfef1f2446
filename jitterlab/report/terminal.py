"""Tables for the terminal: the campaign summary and the runs of a store."""

from __future__ import annotations

from collections import defaultdict

from rich.table import Table

from jitterlab.report.standard import format_value, headline_value, run_label, summarize
from jitterlab.store.catalog import RunRecord
from jitterlab.units import format_ns

HEADLINE = "max_rel_period_error"


def percent(value: float | None) -> str:
    if value is None:
        return "—"
    if value >= 10:
        return f"{value * 100:,.0f} %"
    return f"{value * 100:.3g} %"


def _style(value: float) -> str:
    return "green" if value < 0.01 else "yellow" if value < 0.1 else "red"


def summary_table(runs: list[RunRecord], title: str) -> Table:
    """Worst max relative period error over repetitions, per impl x load (rows) and period."""
    periods = sorted({r.period_ns for r in runs}, reverse=True)
    worst: dict[tuple, float] = {}
    trouble: dict[tuple, list[str]] = defaultdict(list)
    rows = []
    for r in runs:
        row = (r.target, r.impl, r.load, r.probe)
        if row not in rows:
            rows.append(row)
        key = (*row, r.period_ns)
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
    for period_ns in periods:
        table.add_column(format_ns(period_ns), justify="right")
    for row in rows:
        cells = []
        for period_ns in periods:
            key = (*row, period_ns)
            text = ""
            if key in worst:
                text = f"[{_style(worst[key])}]{percent(worst[key])}[/]"
            if trouble.get(key):
                text = (text + " " if text else "") + f"[bold red]{'/'.join(sorted(set(trouble[key])))}[/]"
            cells.append(text or "·")
        table.add_row(*([row[0]] if multi_target else []), *row[1:], *cells)
    return table


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


def summary_tables(runs: list[RunRecord], campaign: str) -> list[Table]:
    """The squarewave summary (when there are squarewave runs) and one table per other benchmark."""
    tables = []
    square = [r for r in runs if r.benchmark == "squarewave"]
    if square:
        tables.append(summary_table(square, f"{campaign}: max relative period error"))
    for bench in summarize(runs):
        caption = "median over repetitions" + (f"; every cell: {bench.fixed}" if bench.fixed else "")
        table = Table(title=f"{campaign}: {bench.benchmark}", caption=caption)
        for name in ("cell", "runs", *bench.columns):
            table.add_column(name, justify="left" if name == "cell" else "right")
        for cell in bench.cells:
            values = [
                format_value(v.median, v.unit) if (v := cell.values.get(c)) else "—" for c in bench.columns
            ]
            ok = sum(r.status == "ok" for r in cell.runs)
            runs_text = f"{ok}/{len(cell.runs)}" if ok == len(cell.runs) else f"[red]{cell.status}[/]"
            table.add_row(cell.name, runs_text, *values)
        tables.append(table)
    return tables


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
