"""Runs built with defaults, for tests and benchmarks of code that reads stored runs (the report,
compare, export, the envelope) without measuring anything."""

from __future__ import annotations

from collections.abc import Iterable

from jitterlab.model.records import Cell, Metric, ParamValue, RunRecord, StoredSettings


def squarewave_cell(impl: str = "c-fifo", period_ns: int = 1_000_000, *, target: str = "board",
                    load: str = "idle", probe: str = "vpin", pin: str = "vpin") -> Cell:
    return Cell(target, "squarewave", load, (("impl", impl), ("period", period_ns), ("probe", probe),
                                             ("pin", pin)))


def cell(benchmark: str, params: dict[str, ParamValue] | None = None, *, target: str = "board",
         load: str = "idle") -> Cell:
    return Cell(target, benchmark, load, tuple((params or {}).items()))


def run_record(cell: Cell, *, id: str = "r1", campaign_id: int = 1, repetition: int = 0,
               metrics: Iterable[Metric] = (), status: str = "ok", error: str | None = None,
               labels: dict | None = None, settings: dict | None = None, raw_path: str | None = None,
               raw_sha256: str | None = None, sysinfo_id: int | None = None, started_ns: int = 0,
               wall_s: float = 1.0, cell_key: str = "") -> RunRecord:
    return RunRecord(
        id=id, campaign_id=campaign_id, cell=cell, repetition=repetition,
        settings=StoredSettings.from_json(settings or {}),  # `settings` as a store keeps them
        labels=dict(labels or {}), status=status, error=error, started_ns=started_ns, wall_s=wall_s,
        raw_path=raw_path, raw_sha256=raw_sha256, sysinfo_id=sysinfo_id,
        metrics={(m.subject, m.name): m for m in metrics}, cell_key=cell_key,
    )
