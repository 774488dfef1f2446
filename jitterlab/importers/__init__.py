"""External captures (CSV of time,level; sigrok VCD) brought into the store as squarewave runs."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.errors import RunFailed, UserError
from jitterlab.records import Cell
from jitterlab.store.catalog import RunRecord, Store
from jitterlab.store.raw import EdgeSeries, write_raw

PROBE = "import"
CAMPAIGN = "import"
FORMATS = ("auto", "csv", "vcd")


@dataclass(frozen=True)
class Capture:
    """Edges of one digital signal: times (int64 ns, as the instrument counted them) and level."""

    t_ns: np.ndarray
    level: np.ndarray
    source: str


def edges_from_samples(t_ns: np.ndarray, values: np.ndarray, *, first_is_edge: bool) -> tuple[
        np.ndarray, np.ndarray]:
    """Keep the samples where the (thresholded) level changes; the first sample is an edge only
    when `first_is_edge` (an edge list), else it is the initial state."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) and not np.isin(values, (0.0, 1.0)).all():
        # an analog export (volts): threshold halfway between the rails seen
        values = (values > (values.min() + values.max()) / 2).astype(np.float64)
    level = values.astype(np.uint8)
    change = np.ones(len(level), dtype=bool)
    change[1:] = level[1:] != level[:-1]
    change[0] = first_is_edge
    return np.asarray(t_ns, dtype=np.int64)[change], level[change]


def read_capture(path: Path, fmt: str = "auto", *, signal: str | None = None,
                 time_unit: str = "auto") -> Capture:
    """Read a CSV or VCD capture; the format is taken from the suffix when `fmt` is auto."""
    from jitterlab.importers import edges_csv, vcd

    path = Path(path)
    if fmt == "auto":
        fmt = "vcd" if path.suffix.lower() == ".vcd" else "csv"
    if not path.is_file():
        raise UserError(f"{path}: no such file; give the path of a CSV or VCD capture")
    if fmt == "vcd":
        return vcd.read_vcd(path, signal=signal)
    if signal is not None:
        raise UserError("--signal: only for VCD files (a CSV holds one signal: time,level)")
    return edges_csv.read_edges_csv(path, time_unit=time_unit)


def store_capture(store: Store, capture: Capture, *, period_ns: int, warmup_ns: int,
                  labels: dict[str, str], campaign: str = CAMPAIGN) -> RunRecord:
    """Analyse a capture like a measured run and commit it (raw series + metrics) to `store`."""
    try:
        metrics = squarewave_metrics(capture.t_ns, capture.level, period_ns, warmup_ns=warmup_ns,
                                     probe=PROBE)
    except RunFailed as exc:
        raise UserError(f"{capture.source}: {exc.reason}; check --period and the file") from None
    campaign_id = store.campaign_named(campaign, "import", capture.source, "", {})
    # a real cell: labels name its target, impl and load; the others keep the runs apart
    cell = Cell(labels.get("target", "external"), "squarewave", labels.get("load", "unknown"),
                (("impl", labels.get("impl", "external")), ("period", period_ns), ("probe", PROBE),
                 ("pin", "external")))
    others = ",".join(f"{k}={v}" for k, v in sorted(labels.items()) if k not in ("target", "impl", "load"))
    cell_key = f"{cell.key} import={others}"
    run_id = uuid.uuid4().hex[:12]
    raw_path = f"raw/{run_id}.parquet"
    with open(capture.source, "rb") as f:
        source_sha = hashlib.file_digest(f, "sha256").hexdigest()
    sha = write_raw(store.root / raw_path, {PROBE: EdgeSeries(capture.t_ns, capture.level)})
    span_ns = int(capture.t_ns[-1] - capture.t_ns[0]) if len(capture.t_ns) else 0
    record = RunRecord(
        id=run_id, campaign_id=campaign_id, cell=cell, cell_key=cell_key, repetition=0,
        settings={"duration_ns": span_ns, "warmup_ns": warmup_ns, "source": capture.source,
                  "source_sha256": source_sha},
        labels=dict(labels), status="ok", error=None, started_ns=time.time_ns(), wall_s=0.0,
        raw_path=raw_path, raw_sha256=sha, sysinfo_id=None,
        metrics={(m.probe, m.name): m for m in metrics})
    try:  # the repetition is the next free one, counted in the commit's own transaction
        return store.commit_run(record, next_repetition=True)
    except BaseException:
        (store.root / raw_path).unlink(missing_ok=True)  # no row names it: not an orphan
        raise
