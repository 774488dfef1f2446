"""CSV import: the kind is declared, lost edges are warned and counted, times are exact, errors
are short, and the bulk reader agrees with the line reader."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli.main import build_parser
from jitterlab.importers import read_capture, store_capture
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store

PERIOD_NS = 1_000_000
T, LEVEL = square_wave(PERIOD_NS, 400, jitter_ns=2_000, seed=3)


def write(path, t, level, *, header="", delim=",", seconds=False):
    rows = [header] if header else []
    for x, v in zip(t, level, strict=True):
        rows.append(f"{x // 10**9}.{x % 10**9:09d}{delim}{v}" if seconds else f"{x}{delim}{v}")
    path.write_text("\n".join(rows) + "\n")
    return path


def imported(tmp_path, path, **kw) -> dict[str, float]:
    store = Store(tmp_path / "r")
    try:
        run = store_capture(store, read_capture(path, **kw), period_ns=PERIOD_NS, warmup_ns=0,
                            labels={})
    finally:
        store.close()
    return {name: m.value for (_, name), m in run.metrics.items()}


def test_a_lost_edge_in_an_edge_list_is_warned_and_counted(tmp_path):
    # edge 200 is missing: rows 199 and 200 hold equal levels. It was read as a sample trace
    # (first row and the repeat dropped), a 2T period = 100 % error, missed_edges 0, no warning
    keep = np.arange(len(T)) != 200
    path = write(tmp_path / "lost.csv", T[keep], LEVEL[keep])
    cap = read_capture(path)
    assert len(cap.t_ns) == len(T) - 1
    [warning] = cap.warnings
    assert "lost.csv: the level repeats on lines 200-201" in warning
    got = imported(tmp_path, path)
    assert got["missed_edges"] == 1
    assert got["excluded_periods"] == 2
    assert got["max_rel_period_error"] < 0.02  # the jitter, not the lost edge
    assert got["max_is_lower_bound"] == 1.0
    # the warning is stored with the run
    store = Store(tmp_path / "r")
    try:
        [(run_id, stored)] = store.warnings(store.latest_campaign("import").id)
        assert "lines 200-201" in stored.message and run_id
    finally:
        store.close()


def test_the_kind_comes_from_the_option_or_the_header(tmp_path):
    t = np.arange(0, 20_000_000, 100_000)
    level = ((t // 500_000) % 2).astype(np.uint8)  # 0/1 samples every 100 us
    edges = np.arange(500_000, 20_000_000, 500_000)
    plain = write(tmp_path / "plain.csv", t, level)
    with pytest.raises(UserError):  # levels repeat on almost every row: read as a lossy edge list
        imported(tmp_path, plain)
    assert np.array_equal(read_capture(plain, kind="samples").t_ns, edges)
    named = write(tmp_path / "named.csv", t, level, header="time_ns,sample")
    assert np.array_equal(read_capture(named).t_ns, edges)
    volts = write(tmp_path / "volts.csv", t, np.where(level == 1, 3.3, 0.1), header="t (ns),V")
    cap = read_capture(volts)
    assert np.array_equal(cap.t_ns, edges) and list(cap.level[:2]) == [1, 0]
    assert np.array_equal(read_capture(named, kind="edges").t_ns, t)


@pytest.mark.parametrize("delim", [",", " "])  # pyarrow, and the line reader
def test_decimal_seconds_are_exact_and_sub_ns_digits_rounded_half_even(tmp_path, delim):
    path = tmp_path / "fine.csv"
    rows = ["1234.567890123", "1234.5678901235", "1234.56789012650001", "1234.5678901275",
            "1234.56789013e0"]
    path.write_text("".join(f"{t}{delim}{i % 2}\n" for i, t in enumerate(rows)))
    cap = read_capture(path)
    assert list(cap.t_ns) == [1234567890123, 1234567890124, 1234567890127, 1234567890128,
                              1234567890130]
    assert any("digits below 1 ns" in w for w in cap.warnings) == (delim == ",")


def test_bulk_and_line_readers_agree(tmp_path):
    t, level = square_wave(PERIOD_NS, 3_000, jitter_ns=2_000, seed=9)
    fast = read_capture(write(tmp_path / "a.csv", t, level, seconds=True, header="Time [s],D0"))
    slow = read_capture(write(tmp_path / "b.csv", t, level, seconds=True, delim=" "))
    assert np.array_equal(fast.t_ns, t) and np.array_equal(slow.t_ns, t)
    assert np.array_equal(fast.level, level) and np.array_equal(slow.level, level)


def test_comment_lines_between_rows_and_blank_lines(tmp_path):
    path = tmp_path / "c.csv"
    path.write_text("; sigrok\n\ntime_ns,level\n1000,1\n\n# note\n1500,0\n2000,1\n")
    assert list(read_capture(path).t_ns) == [1000, 1500, 2000]


def test_errors_name_the_line_after_blank_lines(tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("time_ns,level\n1000,1\n\n1500,0\n\n\n1400,1\n")
    with pytest.raises(UserError, match=r"b\.csv:7: time does not increase \(1500 then 1400"):
        read_capture(path)


def test_error_excerpts_are_short(tmp_path):
    nul = tmp_path / "nul.csv"
    nul.write_bytes(b"\0" * (3 << 20))
    with pytest.raises(UserError) as err:
        read_capture(nul)
    assert "nul.csv" in str(err.value) and len(str(err.value)) < 300
    long_line = tmp_path / "long.csv"
    long_line.write_text("0,1\n1000," + "x" * (3 << 20) + "\n")
    with pytest.raises(UserError) as err:
        read_capture(long_line)
    assert "long.csv:2: cannot read '1000,xxx" in str(err.value)
    assert len(str(err.value)) < 300


DATA = Path(__file__).parent.parent / "data"
SIGROK = DATA / "sigrok"


def test_sigrok_clis_csv_is_read_in_the_unit_its_header_names(tmp_path):
    # `microseconds,logic`: a 10 us wave sampled at 200 kHz, one row per sample. Read as ns it was
    # a 10 ns wave: every period metric 1000 times too small, drift -999,000 ppm
    path = SIGROK / "demo-d0-200khz.csv"
    cap = read_capture(path)
    assert cap.t_ns[:3].tolist() == [10_000, 15_000, 20_000] and not cap.warnings
    store = Store(tmp_path / "r")
    try:
        run = store_capture(store, cap, period_ns=10_000, warmup_ns=0, labels={})
    finally:
        store.close()
    got = {name: m.value for (_, name), m in run.metrics.items()}
    assert (got["mean_period_ns"], got["max_rel_period_error"], got["drift_ppm"]) == (10_000, 0, 0)


@pytest.mark.parametrize(("name", "sample_ns"), [("demo-d0-1k.csv", 1_000_000), ("demo-d0-1m.csv", 1_000),
                                                 ("demo-d0-1g.csv", 1)])
def test_each_unit_sigrok_writes_is_understood(name, sample_ns):
    # the same pattern at three samplerates: milliseconds, microseconds, nanoseconds
    cap = read_capture(SIGROK / name)
    assert (cap.t_ns // sample_ns).tolist()[:6] == [2, 5, 9, 13, 18, 21]
    assert (cap.t_ns % sample_ns == 0).all()


def test_picoseconds_are_rounded_to_ns_and_said_so(tmp_path):
    ns = (SIGROK / "demo-d0-1g.csv").read_text().replace("nanoseconds,logic", "picoseconds,logic")
    path = tmp_path / "ps.csv"
    rows = (line.split(",") for line in ns.splitlines() if "," in line)
    path.write_text("\n".join(f"{int(t) * 1000 + 499},{v}" if t.isdigit() else f"{t},{v}" for t, v in rows)
                    + "\n")
    cap = read_capture(path)
    assert cap.t_ns.tolist()[:6] == [2, 5, 9, 13, 18, 21]
    assert cap.warnings == (f"{path}: times are in ps; rounded to the nearest ns (half to even)",)
    with pytest.raises(UserError, match=r"demo-d0-2g\.csv:9: time does not increase \(2 then 2 ns\); "
                                        r"times in ps less than 1 ns apart are one time at jitterlab's 1 ns "
                                        r"resolution"):
        read_capture(SIGROK / "demo-d0-2g.csv")  # 500 ps per sample


@pytest.mark.parametrize("name", ["saleae-logic2-digital.csv", "saleae-logic1-digital.csv",
                                  "keysight-infiniivision.csv"])
def test_other_tools_exports_are_read_in_their_unit(name):
    cap = read_capture(DATA / "csv-exports" / name)
    periods = cap.t_ns[2:] - cap.t_ns[:-2]
    assert set(periods.tolist()) == {10_000} and len(cap.t_ns) >= 200 and not cap.warnings


@pytest.mark.parametrize(("text", "message"), [
    ((SIGROK / "demo-d0-200khz-channel-labels.csv").read_text(),
     r"x\.csv:5: the header 'Time,D0' does not say the unit of its times; give --time-unit"),
    ((SIGROK / "demo-d0-1.csv").read_text(),
     r"x\.csv:5: the time column 'samples' holds sample numbers, not times; export the capture with times"),
    ("Time [UTC],Channel 0\n2024-01-01T00:00:00,0\n",
     r"x\.csv:1: the time column 'Time \[UTC\]' is in 'utc', a unit jitterlab does not know \(it knows "
     r"s, ms, us, ns, ps, fs, also spelt out: seconds, microseconds, \.\.\.\); give --time-unit \(s, ms, us, "
     r"ns, ps, fs\)$"),
    ("t (min),level\n1,0\n2,1\n", r"x\.csv:1: the time column 't \(min\)' is in 'min', a unit"),
    ("X,CH1,Start,Increment,\nSequence,Volt,-6.0e-03,2.0e-06,\n0,2.40e-01,\n",
     r"x\.csv:2: the time column 'Sequence' holds sample numbers"),
    ("; CSV generated by libsigrok 0.5.2\n5,0\n10,1\n",
     r"x\.csv: libsigrok's CSV without its header line does not say the unit of its times"),
])
def test_a_unit_that_is_not_said_or_not_known_is_an_error_naming_it(tmp_path, text, message):
    (tmp_path / "x.csv").write_text(text)
    with pytest.raises(UserError, match=message):
        read_capture(tmp_path / "x.csv")


@pytest.mark.parametrize(("header", "ns"), [("Time [s]", 10**9), ("Time(ms)", 10**6), ("t / us", 10**3),
                                            ("in s", 10**9), ("TIME [µs]", 10**3), ("t [μs]", 10**3),
                                            ("nanoseconds", 1), ("time_ns", 1), ("Zeit/s", 10**9)])
def test_unit_words_in_headers(tmp_path, header, ns):
    (tmp_path / "x.csv").write_text(f"{header},level\n1,0\n2,1\n3,0\n")
    assert read_capture(tmp_path / "x.csv").t_ns.tolist() == [ns, 2 * ns, 3 * ns]


def test_time_unit_option_says_what_a_header_does_not(tmp_path):
    cap = read_capture(SIGROK / "demo-d0-200khz-channel-labels.csv", time_unit="us")
    assert np.array_equal(cap.t_ns, read_capture(SIGROK / "demo-d0-200khz.csv").t_ns)


@pytest.mark.parametrize(("text", "line"), [("Time [us],level\n1,0\n2,1\n3,0\n", 1),
                                            ("x-axis,1\nmicrosecond,Volt\n1,0\n2,1\n3,0\n", 2)])
def test_a_time_unit_option_that_contradicts_the_header_is_refused_naming_both(tmp_path, text, line):
    # --time-unit ns silently won over `Time [us]`: a 1 us wave read as a 1 ns one
    (tmp_path / "x.csv").write_text(text)
    with pytest.raises(UserError) as err:
        read_capture(tmp_path / "x.csv", time_unit="ns")
    assert str(err.value).startswith(f"{tmp_path / 'x.csv'}:{line}: --time-unit ns contradicts the header, "
                                     "which says the times are in us (")
    assert str(err.value).endswith("; leave out --time-unit, or give --time-unit us")
    assert read_capture(tmp_path / "x.csv", time_unit="us").t_ns.tolist()[-2:] == [2_000, 3_000]


def test_a_time_unit_option_says_what_an_unknown_header_word_does_not(tmp_path):
    (tmp_path / "x.csv").write_text("Time [UTC],level\n1,0\n2,1\n3,0\n")
    assert read_capture(tmp_path / "x.csv", time_unit="ms").t_ns.tolist() == [10**6, 2 * 10**6, 3 * 10**6]
    (tmp_path / "f.csv").write_text("t (fs),level\n1000000,0\n2000000,1\n3000000,0\n")
    # the option takes every unit a header may name
    args = build_parser().parse_args(["import", "edges", str(tmp_path / "f.csv"), "--period", "1ns",
                                      "--time-unit", "fs"])
    assert read_capture(args.file, time_unit=args.time_unit).t_ns.tolist() == [1, 2, 3]


@pytest.mark.parametrize("row", ["minute,Volt", "(min),(V)", "Sekunde,Volt"])
def test_an_unknown_word_in_a_scopes_units_row_is_named_with_the_units_accepted(tmp_path, row):
    (tmp_path / "x.csv").write_text(f"Time,Level\n{row}\n0.000,0\n0.0005,1\n0.001,0\n")
    word = row.split(",")[0].strip("()").lower()
    with pytest.raises(UserError) as err:
        read_capture(tmp_path / "x.csv")
    assert str(err.value) == (
        f"{tmp_path / 'x.csv'}:2: the units row {row!r} gives the time column's unit as {word!r}, a unit "
        "jitterlab does not know (it knows s, ms, us, ns, ps, fs, also spelt out: seconds, microseconds, "
        "...); give --time-unit (s, ms, us, ns, ps, fs)")
    assert read_capture(tmp_path / "x.csv", time_unit="s").t_ns.tolist() == [500_000, 1_000_000]
