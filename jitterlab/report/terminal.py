"""Tables for the terminal: the campaign summary, the runs of a store, one run in detail, and the
warnings grouped by cause. Piped output (a CI log, `| less`, a file) gets every table as plain
aligned rows at their natural width, never cut or wrapped at 80 columns."""

from __future__ import annotations

import re
from collections.abc import Collection
from typing import Any

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.direction import direction_of
from jitterlab.analysis.watched import NOT_WATCHED, PIN_WATCHED, watched_program_pin
from jitterlab.campaign import cells
from jitterlab.model.explanation import ATTACHMENT
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import Cell, RunRecord, Warning_
from jitterlab.model.units import cpu_list
from jitterlab.report.console import SafeConsole
from jitterlab.report.format import counted, format_value, percent
from jitterlab.report.layout import Prose, fitted
from jitterlab.report.summaries import headline_value, run_label
from jitterlab.report.traits import own, subject_of
from jitterlab.report.warning_groups import RUN, SYSTEM, Group, Note, grouped
from jitterlab.report.warning_list import WarningList

HEADLINE = "max_rel_period_error"
GAP = "  "


class Output(SafeConsole):
    """A Console that prints tables as plain rows, and lines unwrapped, when it is not a terminal."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not self.is_terminal:
            self.soft_wrap = True

    def print(self, *objects: Any, **kwargs: Any) -> None:  # type: ignore[override]
        """Piped, a table (or a list of warnings) is printed as plain rows at their full width. In a
        terminal, a table and lines of text fit its width without breaking a command, a value or
        its unit (report/layout.py)."""
        if not self.is_terminal and len(objects) == 1 and isinstance(objects[0], WarningList):
            objects = (objects[0].table(),)
        if not self.is_terminal and len(objects) == 1 and isinstance(objects[0], Table):
            kwargs.update(markup=False, highlight=False, soft_wrap=True)
            super().print(plain_table(objects[0]), **kwargs)
            return
        if self.is_terminal and len(objects) == 1 and isinstance(objects[0], Table) \
                and set(kwargs) <= {"soft_wrap"}:
            for part in fitted(self, objects[0]):
                super().print(part, crop=False)
            return
        if self.is_terminal and objects and all(isinstance(o, str | Text) for o in objects) \
                and set(kwargs) <= {"markup", "highlight", "style", "soft_wrap"}:
            text = Text(" ").join(
                self.render_str(o, markup=kwargs.get("markup"), highlight=kwargs.get("highlight"))
                if isinstance(o, str) else o for o in objects)
            super().print(Prose(text, style=kwargs.get("style") or ""), crop=False)
            return
        super().print(*objects, **kwargs)


def console(**kwargs: Any) -> Output:
    return Output(**kwargs)


def _plain(cell: object) -> str:
    if isinstance(cell, Text):
        return cell.plain
    if isinstance(cell, str):
        try:
            return Text.from_markup(cell).plain
        except Exception:  # not markup after all (a literal "[/"): shown as it is
            return cell
    return str(cell)


def plain_table(table: Table) -> str:
    """The table as text: title, header, rows, caption; columns two spaces apart, each as wide as
    its widest cell; nothing cut or wrapped."""
    heads = [_plain(c.header) for c in table.columns]
    body = [[_plain(x) for x in c.cells] for c in table.columns]
    n_rows = max((len(c) for c in body), default=0)
    rows = [*([heads] if table.show_header else []),
            *([col[i] if i < len(col) else "" for col in body] for i in range(n_rows))]
    widths = [max((len(r[j]) for r in rows), default=0) for j in range(len(heads))]
    right = [c.justify == "right" for c in table.columns]
    lines = [_plain(table.title)] if table.title else []
    for row in rows:
        cells = [x.rjust(w) if r else x.ljust(w) for x, w, r in zip(row, widths, right, strict=True)]
        lines.append(GAP.join(cells).rstrip())
    if table.caption:
        lines.append(_plain(table.caption))
    return "\n".join(lines)


def varying_labels(runs: list[RunRecord]) -> list[str]:
    """The label keys that tell these runs apart (image, when image=A and image=B are shown)."""
    keys = sorted({k for r in runs for k in r.labels})
    return [k for k in keys if len({r.labels.get(k) for r in runs}) > 1]


def runs_table(runs: list[RunRecord]) -> Table:
    """Each run: its id, the labels that tell the runs shown apart, its cell, repetition, status,
    headline and excluded periods, and why it failed."""
    labels = varying_labels(runs)
    shown = {"target": len({r.target for r in runs}) > 1, "why": any(r.error for r in runs),
             "excluded": any(own(r, "excluded_periods") is not None for r in runs)}
    columns = [("run", "left"), ("target", "left"), *((f"label {k}", "left") for k in labels),
               ("cell", "left"), ("rep", "right"), ("status", "left"), ("headline", "right"),
               ("excluded", "right"), ("why", "left")]
    columns = [(name, justify) for name, justify in columns if shown.get(name, True)]
    table = Table(title=counted(len(runs), "run"))
    for name, justify in columns:
        table.add_column(  # the cell and why wrap; the short columns keep their width
            name.removeprefix("label "), justify=justify, no_wrap=name not in ("cell", "why"),  # type: ignore[arg-type]
            min_width=len(name.removeprefix("label ")))
    for r in runs:
        excluded = own(r, "excluded_periods")
        row = {
            **{f"label {k}": Text(str(r.labels.get(k, "—"))) for k in labels},
            "run": r.id,
            "target": r.target,
            "cell": Text(run_label(r)),
            "rep": str(r.repetition + 1),
            "status": Text(r.status + (" (traced)" if ATTACHMENT in r.attachments else ""),
                           style="" if r.status == "ok" else "red"),
            "headline": _headline(r, own(r, HEADLINE)),
            "excluded": format_value(excluded, "count") if excluded is not None else "",
            "why": Text(r.error or ""),
        }
        table.add_row(*(row[name] for name, _ in columns))
    return table


def _headline(r: RunRecord, value: float | None) -> Text:
    """The run's headline; marked when its probe watched another signal than the program's pin."""
    text = Text(percent(value) if value is not None else headline_value(r))
    if not watched_program_pin(r):
        text.append(f" {NOT_WATCHED}", style="bold magenta")
    return text


def summary_tables(runs: list[RunRecord], campaign: str, planned: Collection[Cell] | None = None) -> list:
    """Each report section's summary: squarewave's error table, one table per other benchmark;
    `planned`: the campaign's cells when known (tells "not measured yet" from "excluded")."""
    from jitterlab.report.sections import by_section

    return [table for section, mine in by_section(runs)
            for table in section.terminal(mine, campaign, planned)]


def emulation_note(runs: list[RunRecord], store) -> str | None:
    """One line under the tables when a target was a VM under TCG: its numbers are not timing."""
    from jitterlab.report.limits import emulated_targets, emulated_units

    emulated = sorted(emulated_targets(runs, store.sysinfo))
    units = [f"{target} (impl {impl})" for target, impl in sorted(emulated_units(runs))]
    notes = []
    if emulated:
        notes.append(f"{', '.join(emulated)}: an emulated CPU (qemu TCG): these numbers are functional "
                     "evidence (the programs ran and were measured), never timing evidence")
    if units:
        notes.append(f"{', '.join(units)}: an emulated real-time unit (qemu TCG, timed by the controller's "
                     "clock): its numbers are functional evidence (the firmware made every edge the probe "
                     "saw), never timing evidence")
    return "\n".join(notes) or None


# --- one run ---------------------------------------------------------------------------------

SYSINFO_GROUPS = {
    "system": ("hostname", "os_name", "machine", "virtualization", "container", "uptime_s", "loadavg"),
    "kernel": ("kernel_release", "kernel_version", "preemption", "clocksource",
               "clocksources_available", "rt_runtime_us", "rt_period_us", "cmdline"),
    "CPUs": ("cpu_model", "n_cpus", "cpus_online", "isolcpus", "nohz_full", "cpus", "rt_permission"),
    "programs": ("runtimes", "programs_build"),
}


def _cpu_list(cpus: object) -> str:
    """[0, 1, 2, 5] -> "0-2,5"; "?" when unknown."""
    if not isinstance(cpus, list) or not all(isinstance(c, int) for c in cpus):
        return "?"
    return cpu_list(cpus)


def _idle_states_text(states: list) -> str:
    """"POLL 0 ns, C1 2 µs, C6 170 µs (disabled)": each state with its exit latency."""
    parts = []
    for st in states:
        if not isinstance(st, dict):
            continue
        latency = st.get("latency_us")
        text = str(st.get("name") or "?") + (f" {format_value(latency, 'us')}" if latency is not None else "")
        parts.append(text + (" (disabled)" if st.get("disabled") else ""))
    return ", ".join(parts) or "none"


def _siblings_text(siblings: dict) -> str:
    """The cores with more than one hardware thread ("cores 0,4; 1,5"), or one thread per core."""
    cores = sorted({tuple(v) for v in siblings.values() if isinstance(v, list)})
    shared = [c for c in cores if len(c) > 1]
    if not shared:
        return f"one thread per core ({len(cores)} cores)"
    return "threads of one core: " + "; ".join(_cpu_list(list(c)) for c in shared)


def _irqs_text(irqs: list) -> str:
    """IRQs grouped by the CPUs they may run on: "CPU 0: 24 ACPI:Ged, 28 virtio0-config; CPU 1: ..."."""
    by_cpus: dict[str, list[str]] = {}
    for q in irqs:
        if isinstance(q, dict):
            where = "CPU ?" if not q.get("cpus") else f"CPU {_cpu_list(q['cpus'])}"
            by_cpus.setdefault(where, []).append(f"{q.get('irq')} {q.get('actions') or ''}".strip())
    return f"{len(irqs)} IRQs; " + "; ".join(f"{where}: {', '.join(names)}" for where, names in
                                             sorted(by_cpus.items()))


# sysinfo values shown in their unit (sysctl settings such as rt_runtime_us stay as written)
_UNITS = {"uptime_s": "s", "cpu_dma_latency_us": "us"}
NO_QOS_REQUEST_US = 2_000_000_000  # what /dev/cpu_dma_latency reads when nobody holds a request


def plain_value(value: object) -> str:
    """Any value as words: dicts as "key value" pairs, lists joined, never Python's repr."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, dict):
        return "; ".join(f"{k} {plain_value(v)}" for k, v in value.items()) or "none"
    if isinstance(value, list | tuple):
        return ", ".join(plain_value(v) for v in value) or "none"
    if isinstance(value, float):
        return format_value(value, "")
    return str(value)


def sysinfo_text(key: str, value: object) -> str:
    """A sysinfo value for people: lists joined, booleans yes/no, CPUs as governor and MHz, idle
    states with their exit latency, IRQs by the CPUs they run on, SMT siblings by core; never a
    Python dict or list."""
    if key == "cpuidle_states" and isinstance(value, list):
        return _idle_states_text(value)
    if key == "thread_siblings" and isinstance(value, dict):
        return _siblings_text(value)
    if key == "irqs" and isinstance(value, list):
        return _irqs_text(value)
    if key in ("cpus_online", "isolcpus", "nohz_full", "rcu_nocbs") and isinstance(value, list):
        return _cpu_list(value) if value else "none"
    if key in ("mem_total_kb", "mem_available_kb") and isinstance(value, int):
        return format_value(value * 1024.0, "bytes")  # /proc/meminfo's kB are KiB
    if key == "cpu_dma_latency_us" and value == NO_QOS_REQUEST_US:
        return "no request held"
    if key == "bogomips" and isinstance(value, list) and value:
        same = len(set(value)) == 1
        return (f"{plain_value(value[0])} on each of {len(value)} CPUs" if same
                else "; ".join(plain_value(v) for v in value))
    if key in _UNITS and isinstance(value, int | float) and not isinstance(value, bool):
        return format_value(value, _UNITS[key])
    if key == "cpus" and isinstance(value, list):
        governors = sorted({str(c["governor"]) for c in value if isinstance(c, dict) and c.get("governor")})
        mhz = [float(c["cur_mhz"]) for c in value if isinstance(c, dict) and c.get("cur_mhz")]
        text = "governor " + ", ".join(governors) if governors else "no cpufreq governor"
        if mhz:
            low, high = round(min(mhz)), round(max(mhz))
            text += f"; {low} MHz" if low == high else f"; {low}–{high} MHz"
        return text
    if key == "tuning_checks" and isinstance(value, list):
        return _tuning_checks_text(value)
    if key == "runtimes" and isinstance(value, dict):
        return "; ".join(f"{name} {v.get('version') or '?'} ({v.get('path')})"
                         for name, v in value.items() if isinstance(v, dict)) or "none"
    return plain_value(value)


def _tuning_checks_text(checks: list) -> str:
    """"irq-away (CPU 1): can be applied; isolated (CPU 1): refused, Linux 6.1 has no ...": what each
    tuning's check said when the campaign ran, for the program's CPUs it was asked about."""
    parts = []
    for c in checks:
        if not isinstance(c, dict):
            continue
        cpus = [*(c.get("program_cpus") or []), *(c.get("probe_cpus") or [])]
        where = f" (CPUs {_cpu_list(cpus)})" if cpus else ""
        said = f"refused, {c['refused']}" if c.get("refused") else "can be applied"
        parts.append(f"{c.get('tuning') or '?'}{where}: {said}")
    return "; ".join(parts) or "none asked"


def _shown_key(key: str) -> str:
    """A sysinfo key as its value is shown: mem_available_kb reads "24.54 GB", so its name drops the kB."""
    if key == "cpus":
        return "frequency"
    return key.removesuffix("_kb") if key in ("mem_total_kb", "mem_available_kb") else key


def sysinfo_table(facts: SystemFacts) -> Table:
    """The target's sysinfo as the run saw it, grouped: system, kernel, CPUs, other; each fact under
    the name it is stored by."""
    table = Table(title="sysinfo", show_header=False)
    table.add_column("group")
    table.add_column("key")
    table.add_column("value", overflow="fold")
    stored = facts.as_json()
    listed = {k for keys in SYSINFO_GROUPS.values() for k in keys}
    groups = [*SYSINFO_GROUPS.items(), ("other", tuple(sorted(k for k in stored if k not in listed)))]
    for group, keys in groups:
        first = True
        for key in keys:
            value = stored.get(key)
            if value in (None, "", []):
                continue
            table.add_row(group if first else "", _shown_key(key), Text(sysinfo_text(key, value)))
            first = False
    return table


def metric_order(name: str) -> str:
    """Sort key that puts percentiles in their order: p50, p99, p99.9 (p999), p99.99 (p9999)."""
    def pct(m: re.Match) -> str:
        digits = m.group(1)
        return f"p{float(digits[:2] + '.' + digits[2:]) if len(digits) > 2 else float(digits):08.4f}"

    return re.sub(r"(?<![a-z])p(\d{2,})(?=_|$)", pct, name)


def run_detail(run: RunRecord, warnings: list, sysinfo: SystemFacts | None,
               moments: Collection = ()) -> list:
    """Renderables describing one run completely; `moments` (report.why_late) under its head."""
    head = Table.grid(padding=(0, 2))
    for key, value in (
        ("run", run.id),
        ("cell", f"{run.target} {run.benchmark} {run.load} {cells.params_text(run.cell, defaults=True)}"),
        ("repetition", run.repetition + 1),
        ("status", run.status),
        ("probe", "" if watched_program_pin(run) else
         f"{subject_of(run)}: {NOT_WATCHED} (its figures describe another signal, see the warnings)"),
        ("error", run.error or ""),
        ("labels", ", ".join(f"{k}={v}" for k, v in run.labels.items())),
        ("raw", f"{run.raw_path} (sha256 {run.raw_sha256[:16]}…)" if run.raw_path else ""),
        ("attachments", ", ".join(run.attachments.values())),
        ("wall time", f"{run.wall_s:.2f} s"),
    ):
        if value != "":
            head.add_row(Text(key, style="bold"), Text(str(value)))
    foreign = sorted(probe for (probe, name), m in run.metrics.items() if name == PIN_WATCHED and not m.value)
    metrics = Table(title="metrics" + "".join(f" ({p}: {NOT_WATCHED}, another signal's figures)"
                                              for p in foreign))
    for name in ("probe", "metric", "value", "direction"):
        metrics.add_column(name, justify="right" if name == "value" else "left")
    for (probe, name), m in sorted(run.metrics.items(), key=lambda kv: (kv[0][0], metric_order(kv[0][1]))):
        way = direction_of(m)
        metrics.add_row(probe or "-", name, format_value(m.value, m.unit),
                        {"lower": "lower is better", "higher": "higher is better"}.get(way, ""))
    parts: list = [head, *moments, metrics]
    if sysinfo:
        parts.append(sysinfo_table(sysinfo))
    if warnings:
        parts.append(warnings_table([Note(RUN, run.id, w) for _, w in warnings], "warnings"))
    return parts


def warnings_table(notes: list[Note], title: str = "warnings, grouped by cause") -> WarningList:
    """Each cause once: what, how many runs or cells (or which target), the remedy; a table when
    piped or when it fits, else a list whose remedies are never broken inside a word."""
    return WarningList(title, [(g.message, _affects(g), g.remedy) for g in grouped(notes)])


def _affects(g: Group) -> str:
    if g.scope == SYSTEM:
        return g.affected
    return f"{g.affected} ({g.examples})" if g.count > 1 else g.examples


def stored_notes(stored: list[tuple[str | None, Warning_]], campaign: str) -> list[Note]:
    """Notes of the warnings a store holds for a campaign (run-level and campaign-level)."""
    return [Note(RUN, run_id, w) if run_id else Note(SYSTEM, f"campaign {campaign}", w)
            for run_id, w in stored]


def show_warnings(runs: list[RunRecord], stored: list[tuple[str | None, Warning_]], campaign: str) -> list:
    """The campaign's warnings for `show`: stored ones and what the sections tell, grouped."""
    from jitterlab.report.sections import section_notes

    notes = stored_notes(stored, campaign) + section_notes(runs)
    return [warnings_table(notes)] if notes else []
