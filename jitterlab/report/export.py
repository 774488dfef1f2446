"""Runs with parameters, labels, a sysinfo summary and metrics as CSV, JSON or Parquet, and the
operational envelope. Machine formats: values are raw, in the metric's unit (ns, ratio, count,
...), which JSON and metrics.parquet name beside each value; nothing is formatted for people.

CSV and JSON hold one row/object per run; metric columns are `<probe>.<name>` (units in JSON,
and in `metrics.parquet`). JSON also holds the envelope (`envelope`: one object per target x impl
x load x probe x rule x threshold); CSV writes it with `table="envelope"`. Parquet writes a
directory: runs.parquet (wide, as CSV), metrics.parquet (long: run_id, probe, name, value, unit,
direction), envelope.parquet, raw.parquet (every edge series, with run_id and series columns)
and samples.parquet (every sample series: run_id, series, value, unit). The cell's parameters
are columns `param.<key>`; metric directions (lower/higher is better, or none) are in JSON and
metrics.parquet.
"""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from jitterlab.analysis import envelope as env
from jitterlab.analysis.compare import direction
from jitterlab.campaign import cells
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.model.series import Samples
from jitterlab.store.catalog import Store
from jitterlab.store.raw import read_raw

FORMATS = ("csv", "json", "parquet")
SYSINFO_SUMMARY = ("hostname", "kernel_release", "preemption", "cpu_model", "n_cpus",
                   "clocksource", "virtualization", "rt_permission")
_FIELDS = ("id", "campaign", "campaign_id", "cell_key", "repetition", "target", "benchmark", "impl",
           "load", "period_ns", "probe", "pin", "status", "error", "started_ns", "wall_s",
           "raw_path", "raw_sha256")
# columns of earlier exports that are squarewave cell keys now: column -> (key, value when absent)
_SQUAREWAVE = {"impl": ("impl", ""), "period_ns": ("period", 0), "probe": ("probe", ""), "pin": ("pin", "")}


def _rows(store: Store, runs: list[RunRecord]) -> list[dict]:
    names = {c["id"]: c["name"] for c in store.campaigns()}
    cache: dict[int, dict] = {}
    rows = []
    for r in runs:
        row = {f: _field(r, f, names) for f in _FIELDS}
        row["cell"] = dict(r.cell.params)
        row["params"] = dict(r.settings)
        row["labels"] = r.labels
        if r.sysinfo_id is not None and r.sysinfo_id not in cache:
            info = store.sysinfo(r.sysinfo_id)
            cache[r.sysinfo_id] = {k: info.get(k) for k in SYSINFO_SUMMARY}
        row["sysinfo"] = cache.get(r.sysinfo_id, {})
        row["metrics"] = {
            f"{m.probe}.{m.name}" if m.probe else m.name: {"value": m.value, "unit": m.unit,
                                                           "direction": m.direction or direction(m.name)}
            for m in r.metrics.values()
        }
        rows.append(row)
    return rows


def _field(r: RunRecord, name: str, campaign_names: dict) -> object:
    if name == "campaign":
        return campaign_names.get(r.campaign_id)
    if name in _SQUAREWAVE:  # squarewave's keys keep their columns of earlier exports
        key, empty = _SQUAREWAVE[name]
        return r.param(key, empty)
    return getattr(r, name)


def _flat(rows: list[dict]) -> tuple[list[str], list[dict]]:
    """Wide rows: params/labels/sysinfo as `params.x`, `label.x`, `sysinfo.x`; metrics by name."""
    flat = []
    for row in rows:
        out = {k: v for k, v in row.items() if k not in ("cell", "params", "labels", "sysinfo", "metrics")}
        out.update({f"param.{k}": v for k, v in row["cell"].items()})
        out.update({f"params.{k}": json.dumps(v) if isinstance(v, dict | list) else v
                    for k, v in row["params"].items()})
        out.update({f"label.{k}": v for k, v in row["labels"].items()})
        out.update({f"sysinfo.{k}": v for k, v in row["sysinfo"].items()})
        out.update({k: m["value"] for k, m in row["metrics"].items()})
        flat.append(out)
    keys = {k for r in flat for k in r} - set(_FIELDS)
    grouped = [sorted(k for k in keys if k.startswith(p))
               for p in ("param.", "params.", "label.", "sysinfo.")]
    rest = sorted(keys - {k for g in grouped for k in g})  # the metrics
    columns = [*_FIELDS, *(k for g in grouped for k in g), *rest]
    return columns, flat


def envelope_records(runs: list[RunRecord]) -> list[dict]:
    """The operational envelope of the squarewave runs, by the rules their campaigns chose; the
    impl carries the labels that tell cells apart ("c-fifo [image=1.10]")."""
    identity = cells.identity_labels(runs)

    def impl_of(r: RunRecord) -> str:
        impl = str(r.param("impl", ""))
        return f"{impl} [{cells.labels_text(r, identity)}]" if identity else impl

    rows = env.envelope(runs, rules=env.rules_of(runs), impl_of=impl_of)
    return env.records(rows)


def export(store: Store, runs: list[RunRecord], fmt: str, out: Path | None, *,
           table: str = "runs") -> str | None:
    """Write the export to `out` (a file; a directory for parquet); CSV/JSON text when out is None.
    `table` "envelope" makes CSV the envelope instead of the runs."""
    if not runs:
        raise UserError(f"{store.where}: no runs to export; run a campaign or import a capture first")
    if table == "envelope" and fmt != "csv":
        raise UserError(f"--table envelope: only with --format csv (--format {fmt} holds the envelope "
                        "beside the runs)")
    if fmt == "csv" and table == "envelope":
        records = envelope_records(runs)
        if not records:
            raise UserError("--table envelope: these runs have no squarewave cells, so no envelope")
        buf = io.StringIO()
        writer = csv.DictWriter(buf, list(records[0]), lineterminator="\n")
        writer.writeheader()
        writer.writerows({**r, "periods_ns": " ".join(map(str, r["periods_ns"]))} for r in records)
        return _write(buf.getvalue(), out)
    rows = _rows(store, runs)
    if fmt == "json":
        text = json.dumps({"format": "jitterlab.export/1", "runs": rows,
                           "envelope": envelope_records(runs)}, indent=1, default=str)
    elif fmt == "csv":
        columns, flat = _flat(rows)
        buf = io.StringIO()
        writer = csv.DictWriter(buf, columns, lineterminator="\n")
        writer.writeheader()
        writer.writerows(flat)
        text = buf.getvalue()
    elif fmt == "parquet":
        if out is None:
            raise UserError("--format parquet: give -o DIR (it writes runs, metrics and raw .parquet)")
        _parquet(store, runs, rows, Path(out))
        return None
    else:
        raise UserError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    return _write(text, out)


def _write(text: str, out: Path | None) -> str | None:
    if out is None:
        return text
    Path(out).write_text(text, encoding="utf-8")
    return None


def _parquet(store: Store, runs: list[RunRecord], rows: list[dict], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    columns, flat = _flat(rows)
    table = pa.table({c: _column([_scalar(r.get(c)) for r in flat]) for c in columns})
    pq.write_table(table, out / "runs.parquet", compression="zstd")
    metrics = [(r.id, m.probe, m.name, m.value, m.unit, m.direction or direction(m.name))
               for r in runs for m in r.metrics.values()]
    pq.write_table(pa.table({k: pa.array(list(v), type=t) for k, v, t in zip(
        ("run_id", "probe", "name", "value", "unit", "direction"), zip(*metrics, strict=True) if metrics
        else ([],) * 6, (pa.string(), pa.string(), pa.string(), pa.float64(), pa.string(), pa.string()),
        strict=True)}), out / "metrics.parquet", compression="zstd")
    records = envelope_records(runs)
    schema = pa.schema([("target", pa.string()), ("impl", pa.string()), ("load", pa.string()),
                        ("probe", pa.string()), ("rule", pa.string()), ("metric", pa.string()),
                        ("threshold", pa.float64()), ("shortest_period_ns", pa.int64()),
                        ("periods_ns", pa.list_(pa.int64())), ("min_repetitions", pa.int64())])
    pq.write_table(pa.Table.from_pylist(records, schema=schema), out / "envelope.parquet",
                   compression="zstd")
    edges = pa.schema([("run_id", pa.string()), ("series", pa.string()), ("t_ns", pa.int64()),
                       ("level", pa.uint8())])
    samples = pa.schema([("run_id", pa.string()), ("series", pa.string()), ("value", pa.int64()),
                         ("unit", pa.string())])
    with (pq.ParquetWriter(out / "raw.parquet", edges, compression="zstd") as edge_writer,
          pq.ParquetWriter(out / "samples.parquet", samples, compression="zstd") as sample_writer):
        for r in runs:
            if not r.raw_path:
                continue
            try:
                series = read_raw(store.root / r.raw_path, r.raw_sha256)
            except UserError as exc:
                raise UserError(f"run {r.id}: {exc}") from None
            for name, s in series.items():
                head = {"run_id": [r.id] * len(s), "series": [name] * len(s)}
                if isinstance(s, Samples):
                    sample_writer.write_table(pa.table(
                        {**head, "value": s.values, "unit": [s.unit] * len(s)}, schema=samples))
                else:
                    edge_writer.write_table(pa.table(
                        {**head, "t_ns": s.t_ns, "level": s.level}, schema=edges))


def _column(values: list) -> pa.Array:
    """One column; a key whose runs hold values of different types (iperf3's bitrate: "auto" in
    one cell, 100000000 in another) becomes a column of their text."""
    try:
        return pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _scalar(value):
    return json.dumps(value) if isinstance(value, dict | list) else value
