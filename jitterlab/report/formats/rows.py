"""The runs as the exporters see them: one row per run with its fields, cell parameters, run
settings, labels, a sysinfo summary and metrics (value, unit, direction); the same rows flattened
to columns; and the operational envelope of the squarewave runs. Values are raw, in the metric's
unit; nothing is formatted for people. Repetitions count from 1, as `show` and the report count
them (the store counts from 0).
"""

from __future__ import annotations

import json
from functools import cached_property
from typing import TYPE_CHECKING

from jitterlab.analysis import envelope as env
from jitterlab.analysis.direction import direction_of
from jitterlab.campaign import cells
from jitterlab.model.records import RunRecord
from jitterlab.report.traits import period_ns, periodic, subject_of

if TYPE_CHECKING:
    from jitterlab.store.catalog import Store

SYSINFO_SUMMARY = ("hostname", "kernel_release", "preemption", "cpu_model", "n_cpus",
                   "clocksource", "virtualization", "rt_permission")
FIELDS = ("id", "campaign", "campaign_id", "cell_key", "repetition", "target", "benchmark", "impl",
          "load", "period_ns", "probe", "pin", "status", "error", "started_ns", "wall_s",
          "raw_path", "raw_sha256")
_NESTED = ("cell", "settings", "labels", "sysinfo", "metrics")  # the row's parts that flat() spreads
# columns of earlier exports that are squarewave cell keys now: column -> (key, value when absent)
PREFIXES = ("param.", "setting.", "label.", "sysinfo.")  # the column groups of flat(), in order
_SQUAREWAVE = {"impl": ("impl", ""), "period_ns": ("period", 0), "probe": ("probe", ""), "pin": ("pin", "")}


class ExportData:
    """The runs of a store to export; their rows, columns and envelope are made once, when asked."""

    def __init__(self, store: Store, runs: list[RunRecord]) -> None:
        self.store = store
        self.runs = runs

    @cached_property
    def rows(self) -> list[dict]:
        """One object per run: fields, then cell, settings, labels, sysinfo and metrics nested."""
        names = {c.id: c.name for c in self.store.campaigns()}
        cache: dict[int, dict] = {}
        rows = []
        for r in self.runs:
            row = {f: _field(r, f, names) for f in FIELDS}
            row["cell"] = dict(r.cell.params)
            row["settings"] = r.settings.as_json()
            row["labels"] = r.labels
            if r.sysinfo_id is not None and r.sysinfo_id not in cache:
                facts = self.store.sysinfo(r.sysinfo_id)
                stored = facts.as_json() if facts is not None else {}  # as every export names them
                cache[r.sysinfo_id] = {k: stored.get(k) for k in SYSINFO_SUMMARY}
            row["sysinfo"] = cache.get(r.sysinfo_id, {})
            row["metrics"] = {
                f"{m.subject}.{m.name}" if m.subject else m.name: {"value": m.value, "unit": m.unit,
                                                               "direction": direction_of(m)}
                for m in r.metrics.values()
            }
            rows.append(row)
        return rows

    @cached_property
    def explanations(self) -> dict[str, dict]:
        """Per traced run (id): its explanation as stored, with its causes' shares beside it
        (report.causes.as_export); a damaged one as {"damaged": why}."""
        from jitterlab.report.causes import Explanations, as_export, traced

        found = Explanations(self.store.root)
        out = {}
        for r in self.runs:
            if traced(r):
                e = found.of(r)
                out[r.id] = dict(as_export(e, found.damaged.get(r.id)) or {})
        return out

    @cached_property
    def flat(self) -> tuple[list[str], list[dict]]:
        """Wide rows: cell parameters, run settings, labels and sysinfo as `param.x`, `setting.x`,
        `label.x`, `sysinfo.x`; metrics by name; and the columns in order (fields, those groups by
        name, the metrics)."""
        flat = []
        for row in self.rows:
            out = {k: v for k, v in row.items() if k not in _NESTED}
            out.update({f"param.{k}": v for k, v in row["cell"].items()})
            out.update({f"setting.{k}": json.dumps(v) if isinstance(v, dict | list) else v
                        for k, v in row["settings"].items()})
            out.update({f"label.{k}": v for k, v in row["labels"].items()})
            out.update({f"sysinfo.{k}": v for k, v in row["sysinfo"].items()})
            out.update({k: m["value"] for k, m in row["metrics"].items()})
            flat.append(out)
        keys = {k for r in flat for k in r} - set(FIELDS)
        grouped = [sorted(k for k in keys if k.startswith(p))
                   for p in PREFIXES]
        rest = sorted(keys - {k for g in grouped for k in g})  # the metrics
        return [*FIELDS, *(k for g in grouped for k in g), *rest], flat

    @cached_property
    def envelope(self) -> list[dict]:
        return envelope_records(self.runs)


def _field(r: RunRecord, name: str, campaign_names: dict) -> object:
    if name == "campaign":
        return campaign_names.get(r.campaign_id)
    if name == "repetition":
        return r.repetition + 1
    if name in _SQUAREWAVE:  # squarewave's keys keep their columns of earlier exports
        key, empty = _SQUAREWAVE[name]
        return r.param(key, empty)
    return getattr(r, name)


def envelope_records(runs: list[RunRecord]) -> list[dict]:
    """The operational envelope of the runs of periodic benchmarks (the squarewave's), by the rules
    their campaigns chose; the impl carries the labels that tell cells apart ("c-fifo [image=1.10]")."""
    identity = cells.identity_labels(runs)

    def impl_of(r: RunRecord) -> str:
        impl = str(r.param("impl", ""))
        labels = cells.labels_text(r, identity)
        return f"{impl} [{labels}]" if labels else impl

    runs = periodic(runs)
    rows = env.envelope(runs, rules=env.rules_of(runs), impl_of=impl_of, period_of=period_ns,
                        subject_of=subject_of)
    return env.records(rows)
