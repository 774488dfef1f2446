"""The exporters: one module per format behind one interface, chosen by name from the registry;
what export() refuses; a trend's rows; a format added by registering it."""

from __future__ import annotations

import csv
import io
import json

import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import export as ex
from jitterlab.report.formats import EXPORTERS
from jitterlab.report.formats.base import write_text
from jitterlab.report.formats.rows import FIELDS, ExportData
from jitterlab.store.catalog import Store

TREND = [{"cell": "board squarewave impl=c-fifo idle", "probe": "vpin", "x": "6.1", "median": 0.25,
          "min": 0.2, "max": 0.3, "runs": 2, "unit": "ratio"}]


def test_the_registry_names_the_formats_and_tables():
    assert ex.formats() == ["csv", "json", "junit", "kcidb", "lava", "parquet"]
    assert ex.tables() == ["runs", "envelope"]
    assert [ex.writes_directory(f) for f in ex.formats()] == [False, False, False, True, False, True]
    with pytest.raises(UserError, match=r"--format 'xml': choose one of csv, json, junit, kcidb, lava, "
                                        r"parquet"):
        ex.writes_directory("xml")


def test_what_export_refuses(report_store, tmp_path):
    runs = report_store.runs()
    with pytest.raises(UserError, match=r"no runs to export"):
        ex.export(report_store, [], "csv", None)
    with pytest.raises(UserError) as info:
        ex.export(report_store, runs, "parquet", None, table="envelope")
    assert str(info.value) == ("--table envelope: only with --format csv (--format parquet holds the "
                               "envelope beside the runs)")
    with pytest.raises(UserError, match=r"--format parquet: give -o DIR"):
        ex.export(report_store, runs, "parquet", None)


def test_csv_columns_are_fields_then_parameters_labels_sysinfo_then_metrics(report_store):
    text = ex.export(report_store, report_store.runs(), "csv", None)
    header = next(csv.reader(io.StringIO(text)))
    assert header[:len(FIELDS)] == list(FIELDS)
    rest = header[len(FIELDS):]
    groups = [next(i for i, c in enumerate(rest) if c.startswith(p)) for p in ("param.", "setting.", "label.",
                                                                                 "sysinfo.")]
    assert groups == sorted(groups) and rest[-1].startswith(("vpin.", "self."))


def test_a_metric_without_its_own_direction_takes_the_name_tables(tmp_path):
    store = Store(tmp_path / "s")
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    store.commit_run(run_record(squarewave_cell(), campaign_id=cid, metrics=[
        Metric("max_rel_period_error", 0.1, "ratio", "vpin"), Metric("n_periods", 10.0, "count", "vpin"),
        Metric("events_per_s", 5.0, "1/s", "", "lower")]))
    try:
        [row] = json.loads(ex.export(store, store.runs(), "json", None))["runs"]
    finally:
        store.close()
    assert {k: m["direction"] for k, m in row["metrics"].items()} == {
        "vpin.max_rel_period_error": "lower", "vpin.n_periods": "none", "events_per_s": "lower"}


def test_a_trend_in_csv_and_json_not_parquet(tmp_path):
    assert ex.export_trend(TREND, "csv", None) == (
        "cell,probe,x,median,min,max,runs,unit\n"
        "board squarewave impl=c-fifo idle,vpin,6.1,0.25,0.2,0.3,2,ratio\n")
    assert json.loads(ex.export_trend(TREND, "json", None)) == {"format": "jitterlab.trend/1", "rows": TREND}
    assert ex.export_trend([], "csv", tmp_path / "t.csv") is None
    assert (tmp_path / "t.csv").read_text() == "\n"
    with pytest.raises(UserError, match=r"^--trend: export as csv or json$"):
        ex.export_trend(TREND, "parquet", tmp_path)


class _Lines:
    """A format in a few lines: one run id per line."""

    directory = False
    tables = ("runs",)
    trend = False

    def write(self, data: ExportData, table: str, out):
        return write_text("".join(f"{r.id}\n" for r in data.runs), out)

    def write_trend(self, rows, out):
        raise AssertionError("never asked: trend is False")


def test_a_new_format_is_one_registration(report_store, monkeypatch):
    monkeypatch.setattr(EXPORTERS, "_entries", dict(EXPORTERS._entries))
    EXPORTERS.add("lines", "one run id per line", _Lines())
    runs = report_store.runs()
    assert "lines" in ex.formats() and ex.tables() == ["runs", "envelope"]
    assert ex.export(report_store, runs, "lines", None).splitlines() == [r.id for r in runs]
    with pytest.raises(UserError, match=r"^--trend: export as csv or json$"):
        ex.export_trend(TREND, "lines", None)
    with pytest.raises(ValueError, match="registered twice"):
        EXPORTERS.add("csv", "again", _Lines())
    # `jitterlab export --help` says what it is and where -o puts it, as for every format
    assert "lines: one run id per line;" in _export_help()
    assert "a file (csv, json, junit, lava, lines: stdout without it) or a directory (kcidb, parquet)" in (
        _export_help())


def test_export_help_names_each_format_with_its_output_form():
    """The formats that write a directory say so (kcidb, parquet), those that write one file too."""
    text = _export_help()
    assert ("csv, json, junit and lava write one file (-o FILE), or to stdout without -o; kcidb and "
            "parquet write a directory of files (-o DIR, required)") in text
    for e in EXPORTERS:
        assert f"{e.name}: {e.help}" in text


def _export_help() -> str:
    import argparse

    from jitterlab.cli.commands import export as command

    parser = command.add_parser(argparse.ArgumentParser().add_subparsers())
    return " ".join(parser.format_help().split())
