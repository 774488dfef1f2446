"""A capture described as a run, exactly as a measured one is: its squarewave metrics (the same
analysis and blind rule), its raw series, its cell, settings and warnings. Pure: the store writes
the series and the rows (Store.commit_run)."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.importers.capture import PROBE, Capture, to_ns
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Cell, RunRecord, Warning_
from jitterlab.model.series import EdgeSeries, Series, blind_series

NO_CAMPAIGN = 0  # until the store names the campaign the run goes into


@dataclass(frozen=True)
class ImportedRun:
    record: RunRecord  # its campaign_id is NO_CAMPAIGN, its repetition 0 until the store counts it
    series: dict[str, Series]
    warnings: list[Warning_]


def capture_run(capture: Capture, *, period_ns: int, warmup_ns: int, labels: dict[str, str]) -> ImportedRun:
    """The run a capture is; UserError when the capture cannot be measured at that period."""
    tpn = capture.ticks_per_ns
    try:
        metrics = squarewave_metrics(capture.t_ticks, capture.level, period_ns * tpn,
                                     warmup_ns=warmup_ns * tpn, blind=capture.blind_ticks,
                                     probe=PROBE, ticks_per_ns=tpn)
    except RunFailed as exc:
        raise UserError(f"{capture.source}: {exc.reason}; check --period and the file") from None
    # a real cell: labels name its target, impl and load; the others keep the runs apart
    cell = Cell(labels.get("target", "external"), "squarewave", labels.get("load", "unknown"),
                (("impl", labels.get("impl", "external")), ("period", period_ns), ("probe", PROBE),
                 ("pin", "external")))
    others = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("target", "impl", "load"))
    series: dict[str, Series] = {PROBE: EdgeSeries(capture.t_ns, capture.level)}
    if len(capture.blind_ticks):  # the figures apply the same blind rule as the metrics
        series[f"{PROBE}.blind"] = blind_series(to_ns(capture.blind_ticks, tpn))
    with open(capture.source, "rb") as f:
        source_sha = hashlib.file_digest(f, "sha256").hexdigest()
    t_ns = capture.t_ns
    span_ns = int(t_ns[-1] - t_ns[0]) if len(t_ns) else 0
    record = RunRecord(
        id=uuid.uuid4().hex[:12], campaign_id=NO_CAMPAIGN, cell=cell, cell_key=f"{cell.key} import={others}",
        repetition=0,
        settings={"duration_ns": span_ns, "warmup_ns": warmup_ns, "source": capture.source,
                  "source_sha256": source_sha, "time_resolution": capture.resolution},
        labels=dict(labels), status="ok", error=None, started_ns=time.time_ns(), wall_s=0.0,
        raw_path=None, raw_sha256=None, sysinfo_id=None,
        metrics={(m.probe, m.name): m for m in metrics})
    warnings = [Warning_(w, "check the instrument's sample rate and the export; the periods across the "
                            "gap are excluded") for w in capture.warnings]
    return ImportedRun(record, series, warnings)
