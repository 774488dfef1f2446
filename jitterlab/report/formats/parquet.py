"""Parquet: a directory of runs.parquet (wide, as CSV), metrics.parquet (long: run_id, probe, name,
value, unit, direction), envelope.parquet, raw.parquet (every edge series, with run_id and series
columns) and samples.parquet (every sample series: run_id, series, value, unit)."""

from __future__ import annotations

import json
from pathlib import Path

from jitterlab.analysis.direction import direction_of
from jitterlab.model.errors import UserError
from jitterlab.report.formats.base import EXPORTERS, no_trend
from jitterlab.report.formats.rows import ExportData


class ParquetExporter:
    directory = True
    tables = ("runs",)
    trend = False

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        if out is None:
            raise UserError("--format parquet: give -o DIR (it writes runs, metrics and raw .parquet)")
        _write(data, Path(out))
        return None

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        raise no_trend()


def _write(data: ExportData, out: Path) -> None:
    # pyarrow and numpy are imported here, not with the module: the command line lists the formats
    # at start, and `jitterlab --help` should not wait for them
    import pyarrow as pa
    import pyarrow.parquet as pq

    from jitterlab.model.series import Samples

    out.mkdir(parents=True, exist_ok=True)
    columns, flat = data.flat
    table = pa.table({c: _column(pa, [_scalar(r.get(c)) for r in flat]) for c in columns})
    pq.write_table(table, out / "runs.parquet", compression="zstd")
    metrics = [(r.id, m.subject, m.name, m.value, m.unit, direction_of(m))
               for r in data.runs for m in r.metrics.values()]
    pq.write_table(pa.table({k: pa.array(list(v), type=t) for k, v, t in zip(
        ("run_id", "probe", "name", "value", "unit", "direction"), zip(*metrics, strict=True) if metrics
        else ([],) * 6, (pa.string(), pa.string(), pa.string(), pa.float64(), pa.string(), pa.string()),
        strict=True)}), out / "metrics.parquet", compression="zstd")
    schema = pa.schema([("target", pa.string()), ("impl", pa.string()), ("load", pa.string()),
                        ("probe", pa.string()), ("rule", pa.string()), ("metric", pa.string()),
                        ("threshold", pa.float64()), ("shortest_period_ns", pa.int64()),
                        ("outcome", pa.string()), ("periods_ns", pa.list_(pa.int64())),
                        ("min_repetitions", pa.int64())])
    pq.write_table(pa.Table.from_pylist(data.envelope, schema=schema), out / "envelope.parquet",
                   compression="zstd")
    edges = pa.schema([("run_id", pa.string()), ("series", pa.string()), ("t_ns", pa.int64()),
                       ("level", pa.uint8())])
    samples = pa.schema([("run_id", pa.string()), ("series", pa.string()), ("value", pa.int64()),
                         ("unit", pa.string())])
    with (pq.ParquetWriter(out / "raw.parquet", edges, compression="zstd") as edge_writer,
          pq.ParquetWriter(out / "samples.parquet", samples, compression="zstd") as sample_writer):
        for r in data.runs:
            if not r.raw_path:
                continue
            try:
                series = data.store.read_series(r)
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


def _column(pa, values: list):
    """One column; a key whose runs hold values of different types (iperf3's bitrate: "auto" in
    one cell, 100000000 in another) becomes a column of their text."""
    try:
        return pa.array(values)
    except (pa.ArrowTypeError, pa.ArrowInvalid):
        return pa.array([None if v is None else str(v) for v in values], type=pa.string())


def _scalar(value):
    return json.dumps(value) if isinstance(value, dict | list) else value


EXPORTERS.add("parquet", "a directory: runs, metrics (long, with units and directions), envelope, raw "
              "edges and samples", ParquetExporter())
