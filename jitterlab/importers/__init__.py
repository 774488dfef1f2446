"""External captures (CSV of time,level; sigrok VCD) brought into the store as squarewave runs."""

from __future__ import annotations

import hashlib
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Cell, RunRecord, Warning_
from jitterlab.model.series import EdgeSeries, blind_series
from jitterlab.store.catalog import Store

PROBE = "import"
CAMPAIGN = "import"
FORMATS = ("auto", "csv", "vcd")
KINDS = ("auto", "edges", "samples")
EXCERPT_CHARS = 80  # what an error message shows of the offending text, at most


def excerpt(text: str | bytes) -> str:
    """The start of `text` for an error message: at most EXCERPT_CHARS characters, quoted."""
    if isinstance(text, bytes):
        text = text[: 4 * EXCERPT_CHARS].decode("utf-8", errors="replace")
    short = text[:EXCERPT_CHARS]
    return repr(short) + ("..." if len(text) > EXCERPT_CHARS else "")


@dataclass(frozen=True)
class Capture:
    """Edges of one digital signal, as the instrument counted them.

    Times are integer ticks of 1/ticks_per_ns ns (1 for whole nanoseconds; 1000 for a 1 ps
    VCD), so a capture finer than 1 ns keeps its resolution through the analysis.
    `blind_ticks` are spans where the instrument provably lost edges (a repeated level in an
    edge list); `warnings` say so in words.
    """

    t_ticks: np.ndarray
    level: np.ndarray
    source: str
    ticks_per_ns: int = 1
    blind_ticks: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    warnings: tuple[str, ...] = ()
    resolution: str = "1 ns"  # the time resolution of the file, e.g. "1 ps" ($timescale)

    @property
    def t_ns(self) -> np.ndarray:
        """Times in int64 ns: exact for whole-ns captures, else rounded half up."""
        return _to_ns(self.t_ticks, self.ticks_per_ns)


def _to_ns(ticks: np.ndarray, ticks_per_ns: int) -> np.ndarray:
    ticks = np.asarray(ticks, dtype=np.int64)
    if ticks_per_ns == 1:
        return ticks
    return (ticks + ticks_per_ns // 2) // ticks_per_ns


def read_capture(path: Path, fmt: str = "auto", *, signal: str | None = None,
                 time_unit: str = "auto", kind: str = "auto") -> Capture:
    """Read a CSV or VCD capture; the format is taken from the suffix when `fmt` is auto.

    `kind` (CSV only): "edges" (every row is an edge), "samples" (rows are samples, an edge
    is where the level changes) or "auto" (from the header; edges unless it says samples).
    """
    from jitterlab.importers import edges_csv, vcd

    path = Path(path)
    if fmt == "auto":
        fmt = "vcd" if path.suffix.lower() == ".vcd" else "csv"
    if not path.is_file():
        raise UserError(f"{path}: no such file; give the path of a CSV or VCD capture")
    if fmt == "vcd":
        if kind == "edges":
            raise UserError("--kind edges: a VCD holds value changes; leave --kind out for VCD")
        return vcd.read_vcd(path, signal=signal)
    if signal is not None:
        raise UserError("--signal: only for VCD files (a CSV holds one signal: time,level)")
    return edges_csv.read_edges_csv(path, time_unit=time_unit, kind=kind)


def store_capture(store: Store, capture: Capture, *, period_ns: int, warmup_ns: int,
                  labels: dict[str, str], campaign: str = CAMPAIGN) -> RunRecord:
    """Analyse a capture like a measured run and commit it (raw series + metrics) to `store`."""
    tpn = capture.ticks_per_ns
    try:
        metrics = squarewave_metrics(capture.t_ticks, capture.level, period_ns * tpn,
                                     warmup_ns=warmup_ns * tpn, blind=capture.blind_ticks,
                                     probe=PROBE, ticks_per_ns=tpn)
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
    series = {PROBE: EdgeSeries(capture.t_ns, capture.level)}
    if len(capture.blind_ticks):  # the figures apply the same blind rule as the metrics
        series[f"{PROBE}.blind"] = blind_series(_to_ns(capture.blind_ticks, tpn))
    with open(capture.source, "rb") as f:
        source_sha = hashlib.file_digest(f, "sha256").hexdigest()
    raw_path, sha = store.write_series(run_id, series)
    t_ns = capture.t_ns
    span_ns = int(t_ns[-1] - t_ns[0]) if len(t_ns) else 0
    record = RunRecord(
        id=run_id, campaign_id=campaign_id, cell=cell, cell_key=cell_key, repetition=0,
        settings={"duration_ns": span_ns, "warmup_ns": warmup_ns, "source": capture.source,
                  "source_sha256": source_sha, "time_resolution": capture.resolution},
        labels=dict(labels), status="ok", error=None, started_ns=time.time_ns(), wall_s=0.0,
        raw_path=raw_path, raw_sha256=sha, sysinfo_id=None,
        metrics={(m.probe, m.name): m for m in metrics})
    warnings = [Warning_(w, "check the instrument's sample rate and the export; the periods across the "
                            "gap are excluded") for w in capture.warnings]
    try:  # the repetition is the next free one, counted in the commit's own transaction
        return store.commit_run(record, warnings, next_repetition=True)
    except BaseException:
        if not store.content_addressed:  # a hash-named file may be another run's too
            (store.root / raw_path).unlink(missing_ok=True)  # no row names it: not an orphan
        raise
