"""CSV import: the kind is declared, lost edges are warned and counted, times are exact, errors
are short, and the bulk reader agrees with the line reader."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.synthetic import square_wave
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
        [(run_id, stored)] = store.warnings(store.latest_campaign("import")["id"])
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
