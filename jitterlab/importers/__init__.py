"""External captures (CSV of time,level; sigrok VCD) brought into the store as squarewave runs: read
into a Capture (edges_csv.py, vcd.py), analysed and described as a run (record.py), committed by the
store's one commit path like a measured run."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING

from jitterlab.importers.capture import CAMPAIGN, FINGERPRINT, FORMATS, KINDS, PROBE, Capture, excerpt
from jitterlab.model.errors import UserError, shown
from jitterlab.model.records import RunRecord

if TYPE_CHECKING:
    from jitterlab.store.catalog import Store

__all__ = ["CAMPAIGN", "FINGERPRINT", "FORMATS", "KINDS", "PROBE", "Capture", "excerpt", "read_capture",
           "store_capture"]


def read_capture(path: Path, fmt: str = "auto", *, signal: str | None = None,
                 time_unit: str = "auto", kind: str = "auto") -> Capture:
    """Read a CSV or VCD capture; the format is taken from the suffix when `fmt` is auto.

    `time_unit` and `kind` are for CSV, `signal` for VCD; given for the other format, they are refused.
    `kind`: "edges" (every row is an edge), "samples" (rows are samples, an edge
    is where the level changes) or "auto" (from the header; edges unless it says samples).
    """
    from jitterlab.importers import edges_csv, vcd  # numba and pyarrow's CSV reader: when reading

    path = Path(path)
    if fmt == "auto":
        fmt = "vcd" if path.suffix.lower() == ".vcd" else "csv"
    if not path.is_file():
        raise UserError(f"{path}: no such file; give the path of a CSV or VCD capture")
    if fmt == "vcd":
        # an option of the other format would be ignored without a word: refused, named
        if time_unit != "auto":
            raise UserError(f"--time-unit {time_unit}: only for CSV files (a VCD's $timescale gives the "
                            f"unit); leave out --time-unit for {path}")
        if kind != "auto":
            raise UserError(f"--kind {kind}: only for CSV files (a VCD holds value changes); leave out "
                            f"--kind for {path}")
        return vcd.read_vcd(path, signal=signal)
    if signal is not None:
        raise UserError(f"--signal {shown(signal)}: only for VCD files (a CSV holds one signal: time,level); "
                        f"leave out --signal for {path}")
    return edges_csv.read_edges_csv(path, time_unit=time_unit, kind=kind)


def store_capture(store: Store, capture: Capture, *, period_ns: int, warmup_ns: int,
                  labels: dict[str, str], campaign: str = CAMPAIGN) -> RunRecord:
    """Analyse a capture like a measured run and commit it (raw series + metrics) to `store`."""
    from jitterlab.importers.record import capture_run  # the analysis: when importing, not at start

    imported = capture_run(capture, period_ns=period_ns, warmup_ns=warmup_ns, labels=labels)
    campaign_id = store.campaign_named(campaign, FINGERPRINT, capture.source, "", {})
    record = dataclasses.replace(imported.record, campaign_id=campaign_id)
    # the repetition is the next free one, counted in the commit's own transaction
    return store.commit_run(record, imported.warnings, series=imported.series, next_repetition=True)
