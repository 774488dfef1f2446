"""import (CSV in s and ns, with/without header, VCD) with exactly known metrics; export; bad input."""

from __future__ import annotations

import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli.main import build_parser
from jitterlab.importers import read_capture
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store

PERIOD_NS = 1_000_000
T, LEVEL = square_wave(PERIOD_NS, 200, jitter_ns=3_000, seed=5, delays={100: 40_000})
EXPECTED = {m.name: m.value for m in squarewave_metrics(T, LEVEL, PERIOD_NS, warmup_ns=0)}


def run_cli(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


def write_csv(path, *, unit: str, header: str | None, delim=","):
    lines = [header] if header else []
    for t, v in zip(T, LEVEL, strict=True):
        time = f"{t // 10**9}.{t % 10**9:09d}" if unit == "s" else str(t)
        lines.append(f"{time}{delim}{v}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("unit,header", [("s", None), ("ns", None), ("s", "Time [s],D0"),
                                         ("ns", "time_ns,level")])
def test_csv_import_has_exactly_the_metrics_of_the_edges(tmp_path, unit, header):
    path = write_csv(tmp_path / "cap.csv", unit=unit, header=header)
    cap = read_capture(path)
    assert np.array_equal(cap.t_ns, T) and np.array_equal(cap.level, LEVEL)
    assert run_cli(["import", "edges", str(path), "--period", "1ms", "--label", "impl=scope",
                    "--label", "image=1.10", "--results", str(tmp_path / "r")]) == 0
    [run] = Store(tmp_path / "r").runs()
    assert (run.benchmark, run.param("impl"), run.param("probe"), run.status) == (
        "squarewave", "scope", "import", "ok")
    assert run.labels == {"impl": "scope", "image": "1.10"}
    assert {n: m.value for (_, n), m in run.metrics.items()} == EXPECTED
    assert EXPECTED["max_rel_period_error"] > 0.03  # the 40 µs delay is seen (minus jitter)


def test_csv_samples_and_volts_become_edges(tmp_path):
    # a sampled analog trace: 0 V / 3.3 V every 100 µs, period 1 ms
    t = np.arange(0, 20_000_000, 100_000)
    volts = np.where((t // 500_000) % 2 == 1, 3.3, 0.0)
    (tmp_path / "s.csv").write_text("\n".join(f"{x},{v}" for x, v in zip(t, volts, strict=True)))
    with pytest.raises(UserError, match=r"s\.csv:6: level 3\.3 in an edge list.*--kind samples"):
        read_capture(tmp_path / "s.csv")  # the kind is never guessed from the data
    cap = read_capture(tmp_path / "s.csv", kind="samples")
    assert np.array_equal(cap.t_ns, np.arange(500_000, 20_000_000, 500_000))
    assert list(cap.level[:3]) == [1, 0, 1]


def vcd_text(signal_first="clk"):
    lines = ["$date today $end", "$version libsigrok 0.5.2 $end", "$comment Acquisition $end",
             "$timescale 1 ns $end", "$scope module libsigrok $end",
             f'$var wire 1 ! {signal_first} $end', '$var wire 1 " D1 $end', "$upscope $end",
             "$enddefinitions $end", '#0 0! 0"']
    lines += [f"#{t} {v}!" for t, v in zip(T, LEVEL, strict=True)]
    return "\n".join(lines) + "\n"


def test_vcd_import_first_or_named_signal(tmp_path):
    path = tmp_path / "cap.vcd"
    path.write_text(vcd_text())
    cap = read_capture(path)
    assert np.array_equal(cap.t_ns, T) and np.array_equal(cap.level, LEVEL)
    named = read_capture(path, signal="clk")
    assert np.array_equal(named.t_ns, T)
    with pytest.raises(UserError, match=r"D1.*changes 0 times"):
        read_capture(path, signal="D1")
    with pytest.raises(UserError, match=r"--signal 'nope': no such signal; signals in the file: "
                                        r"clk \(1 bit\), D1 \(1 bit\)"):
        read_capture(path, signal="nope")
    assert run_cli(["import", "edges", str(path), "--period", "1ms",
                    "--results", str(tmp_path / "r")]) == 0
    [run] = Store(tmp_path / "r").runs()
    assert {n: m.value for (_, n), m in run.metrics.items()} == EXPECTED
    assert run.param("impl") == "external"


@pytest.mark.parametrize("text,where", [
    ("0.001,1\n0.0015,0\n0.002\n", r"bad\.csv:3: 1 field\(s\) where 2 are expected"),
    ("0.001,1\n0.0015,zero\n", r"bad\.csv:2: cannot read"),
    ("0.002,1\n0.001,0\n", r"bad\.csv:2: time does not increase"),
    ("time,level\n", r"only a header"),
])
def test_bad_csv(tmp_path, text, where):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(UserError, match=where):
        read_capture(tmp_path / "bad.csv")


@pytest.mark.parametrize("cut,where", [
    (lambda s: s[:s.index("$enddefinitions")], r"truncated VCD: no \$enddefinitions"),
    (lambda s: s.replace(f"#{T[50]} ", "#10x0 "), r"bad\.vcd:\d+: bad timestamp '#10x0'"),
    (lambda s: s.replace("$timescale 1 ns", "$timescale 3 ns"), r"bad\.vcd:4: cannot read \$timescale"),
    (lambda s: s[:s.index("$var")] + "$var wire 1", r"bad\.vcd:6: \$var without \$end"),
])
def test_bad_vcd(tmp_path, cut, where):
    (tmp_path / "bad.vcd").write_text(cut(vcd_text()))
    with pytest.raises(UserError, match=where):
        read_capture(tmp_path / "bad.vcd")


def test_import_of_an_unmeasurable_capture_and_bad_options(tmp_path):
    (tmp_path / "short.csv").write_text("0.001,1\n0.0015,0\n")
    with pytest.raises(UserError, match=r"short\.csv: unmeasurable"):
        run_cli(["import", "edges", str(tmp_path / "short.csv"), "--period", "1ms",
                 "--results", str(tmp_path / "r")])
    with pytest.raises(UserError, match="--label"):
        run_cli(["import", "edges", str(tmp_path / "short.csv"), "--period", "1ms",
                 "--label", "oops", "--results", str(tmp_path / "r")])
    with pytest.raises(UserError, match="no such file"):
        run_cli(["import", "edges", str(tmp_path / "none.csv"), "--period", "1ms"])


def test_export_csv_json_parquet(tmp_path, capsys):
    results = str(tmp_path / "r")
    path = write_csv(tmp_path / "cap.csv", unit="ns", header=None)
    for image in ("1.10", "1.11"):
        run_cli(["import", "edges", str(path), "--period", "1ms", "--label", f"image={image}",
                 "--results", results])
    capsys.readouterr()
    assert run_cli(["export", "--format", "json", "--results", results]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["labels"]["image"] for r in doc["runs"]] == ["1.10", "1.11"]
    m = doc["runs"][0]["metrics"]["import.max_rel_period_error"]
    assert m == {"value": EXPECTED["max_rel_period_error"], "unit": "ratio", "direction": "lower"}
    assert run_cli(["export", "--format", "csv", "--results", results, "-o",
                    str(tmp_path / "x.csv")]) == 0
    header, *rows = (tmp_path / "x.csv").read_text().splitlines()
    cols = header.split(",")
    assert len(rows) == 2 and {"id", "period_ns", "label.image", "setting.warmup_ns",
                               "import.max_rel_period_error"} <= set(cols)
    assert float(rows[0].split(",")[cols.index("import.n_periods")]) == EXPECTED["n_periods"]
    assert run_cli(["export", "--format", "parquet", "--results", results, "-o",
                    str(tmp_path / "pq")]) == 0
    assert pq.read_table(tmp_path / "pq" / "runs.parquet").num_rows == 2
    assert pq.read_table(tmp_path / "pq" / "metrics.parquet").num_rows == 2 * len(EXPECTED)
    raw = pq.read_table(tmp_path / "pq" / "raw.parquet")
    assert raw.num_rows == 2 * len(T) and raw.column("t_ns").to_pylist()[:3] == list(T[:3])


def test_export_counts_repetitions_as_show_does_with_one_prefix_per_group(tmp_path):
    from jitterlab.report import export as ex
    from jitterlab.report.terminal import runs_table
    from tests.report.conftest import build_store

    report_store = build_store(tmp_path / "s")
    runs = report_store.runs()
    doc = json.loads(ex.export(report_store, runs, "json", None))
    assert doc["format"] == "jitterlab.export/2"
    columns = {str(c.header): list(c.cells) for c in runs_table(runs).columns}
    shown = dict(zip(columns["run"], columns["rep"], strict=True))
    exported = {r["id"]: r["repetition"] for r in doc["runs"]}
    assert exported == {run: int(rep) for run, rep in shown.items()}  # show's "rep": from 1
    assert sorted(set(exported.values())) == [1, 2, 3, 4]
    assert set(doc["runs"][0]) >= {"cell", "settings"} and "params" not in doc["runs"][0]
    header = ex.export(report_store, runs, "csv", None).splitlines()[0].split(",")
    prefixes = {c.split(".")[0] for c in header if "." in c and not c.startswith(("vpin.", "self."))}
    assert prefixes == {"param", "setting", "label", "sysinfo"}
    assert "repetition" in header


def test_export_of_an_empty_store_and_damaged_raw(tmp_path):
    Store(tmp_path / "empty").close()
    with pytest.raises(UserError, match="no runs"):
        run_cli(["export", "--format", "csv", "--results", str(tmp_path / "empty")])
    results = tmp_path / "r"
    run_cli(["import", "edges", str(write_csv(tmp_path / "c.csv", unit="ns", header=None)),
             "--period", "1ms", "--results", str(results)])
    [run] = Store(results).runs()
    (results / run.raw_path).write_bytes(b"garbage")
    with pytest.raises(UserError, match=f"run {run.id}: .*damaged"):
        run_cli(["export", "--format", "parquet", "--results", str(results), "-o", str(tmp_path / "o")])


def test_import_cli_kind_option_and_warning(tmp_path, capsys):
    t = np.arange(0, 20_000_000, 100_000)
    level = ((t // 500_000) % 2).astype(np.uint8)
    (tmp_path / "samples.csv").write_text("\n".join(f"{x},{v}" for x, v in zip(t, level, strict=True)))
    assert run_cli(["import", "edges", str(tmp_path / "samples.csv"), "--period", "1ms", "--kind",
                    "samples", "--results", str(tmp_path / "r")]) == 0
    assert "(39 edges" in capsys.readouterr().out
    keep = np.arange(len(T)) != 120
    lost = tmp_path / "lost.csv"
    lost.write_text("".join(f"{x},{v}\n" for x, v in zip(T[keep], LEVEL[keep], strict=True)))
    assert run_cli(["import", "edges", str(lost), "--period", "1ms",
                    "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "warning:" in out and "lines 120-121" in out


def test_show_of_imported_runs_speaks_of_imports(tmp_path, capsys):
    from jitterlab.cli.main import main

    results = str(tmp_path / "r")
    path = write_csv(tmp_path / "cap.csv", unit="ns", header=None)
    assert main(["import", "edges", str(path), "--period", "2ms", "--results", results]) == 0
    assert "period 2 ms): max relative period error" in capsys.readouterr().out
    assert main(["show", "--runs", "--results", results]) == 0
    out = capsys.readouterr().out
    assert out.startswith("1 run\n")
    assert "campaign.repetitions" not in out and "external external" not in out
    assert "import 3 or more captures of the cell (the same --period and --label values)" in out
    assert "unknown external 2ms unknown (import)" in out  # target, impl, period, load (probe)
    for labels in (["impl=fpga", "image=1.0"], ["impl=fpga"]):
        assert main(["import", "edges", str(path), "--period", "1ms", "--results", results,
                     *(w for label in labels for w in ("--label", label))]) == 0
    capsys.readouterr()
    assert main(["show", "--runs", "--results", results]) == 0
    out = capsys.readouterr().out
    assert out.startswith("3 runs\n")
    # a label a run lacks is not shown as empty, nor one that repeats the impl column
    assert "fpga [image=1.0]" in out and "[image=]" not in out and "image=," not in out
    assert "impl=" not in out and "fpga " in out.replace("fpga [image=1.0]", "")
    assert "1,000 µs" not in out


def test_summary_of_imported_runs_speaks_of_imports(tmp_path, capsys):
    from jitterlab.cli.main import main

    results = str(tmp_path / "r")
    path = write_csv(tmp_path / "cap.csv", unit="ns", header=None)
    assert main(["import", "edges", str(path), "--period", "1ms", "--results", results]) == 0
    assert main(["summary", "--results", results]) == 0
    out = capsys.readouterr().out
    assert "unknown: captures imported from files (no sysinfo of the machine that made them)" in out
    assert "  1 run per cell" in out
    for image in ("1.0", "1.1", "1.0", "1.1"):
        assert main(["import", "edges", str(path), "--period", "1ms", "--label", f"image={image}",
                     "--campaign", "two", "--results", results]) == 0
    capsys.readouterr()
    assert main(["summary", "--campaign", "two", "--results", results]) == 0
    out = capsys.readouterr().out
    assert "  2 runs per cell" in out
    # the capture file is no campaign to resume
    assert "jitterlab run" not in out and str(path) not in out
    assert ("import more captures where undecided, into each group of image=1.0..image=1.1 (the same "
            "--period and --label values)") in out.replace("\n", " ")
