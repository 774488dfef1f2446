"""A capture described as a run, exactly as a measured one is: its squarewave metrics (the same
analysis and blind rule), its raw series, its cell, settings and warnings. Pure: the store writes
the series and the rows (Store.commit_run)."""

from __future__ import annotations

import hashlib
import math
import re
import time
import uuid
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.importers.capture import PROBE, Capture, to_ns
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Cell, ImportedFrom, RunRecord, StoredSettings, Warning_
from jitterlab.model.series import EdgeSeries, Series, blind_series
from jitterlab.model.units import format_ns

NO_CAMPAIGN = 0  # until the store names the campaign the run goes into
UNKNOWN = "unknown"  # the target and load of a capture whose labels do not name them
# the edges' median period this many times off --period (either way) is a wrong --period, not a bad
# wave: every period metric would measure the option, so the run is stored with a warning
PERIOD_FACTOR = 1.5


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
    cell = Cell(labels.get("target", UNKNOWN), "squarewave", labels.get("load", UNKNOWN),
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
        settings=StoredSettings.given(duration_ns=span_ns, warmup_ns=warmup_ns, imported=ImportedFrom(
            source=capture.source, source_sha256=source_sha, time_resolution=capture.resolution)),
        labels=dict(labels), status="ok", error=None, started_ns=time.time_ns(), wall_s=0.0,
        raw_path=None, raw_sha256=None, sysinfo_id=None,
        metrics={(m.subject, m.name): m for m in metrics})
    warnings = [Warning_(w, "check the instrument's sample rate and the export; the periods across the "
                            "gap are excluded") for w in capture.warnings]
    if (wrong := _period_off(capture, period_ns)) is not None:
        warnings.append(wrong)
    return ImportedRun(record, series, warnings)


def _period_off(capture: Capture, period_ns: int) -> Warning_ | None:
    """A warning when the edges' median period (edge to the next edge of the same polarity) is
    more than PERIOD_FACTOR times off the period given, with the --period that fits them."""
    t = capture.t_ticks
    if len(t) < 3:
        return None
    median_ns = float(np.median(t[2:] - t[:-2])) / capture.ticks_per_ns
    if median_ns <= 0 or 1 / PERIOD_FACTOR <= median_ns / period_ns <= PERIOD_FACTOR:
        return None
    fitting_ns = round(median_ns, 2 - math.floor(math.log10(median_ns)))  # 3 significant digits
    return Warning_(f"the edges' median period is {_spaced(fitting_ns)}, not the {_spaced(period_ns)} given "
                    "with --period", f"import again with --period {format_ns(fitting_ns)}")


def _spaced(value_ns: float) -> str:
    """A period as people read it: "1 ms", "600 µs" (format_ns writes what --period takes)."""
    return re.sub(r"([\d.]+)(\D+)$", r"\1 \2", format_ns(value_ns)).replace("us", "µs")
