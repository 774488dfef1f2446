"""VCD import keeps the file's resolution: a 1 ps capture is analysed in ps."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.importers import read_capture, store_capture
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store

PERIOD_NS = 250_000  # 250 us
HALF_PS = 125_000_000


def vcd(path, times, values, timescale="1 ps"):
    lines = ["$timescale " + timescale + " $end", "$scope module libsigrok $end",
             "$var wire 1 ! D0 $end", "$upscope $end", "$enddefinitions $end", "#0 0!"]
    lines += [f"#{t}\n{v}!" for t, v in zip(times, values, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_1ps_capture_keeps_its_sub_ns_resolution(tmp_path):
    n = 400
    t_ps = 1_000_000 + np.arange(n, dtype=np.int64) * HALF_PS
    t_ps[200] += 32_768_532  # 32768.532 ns late: rounding to ns made it 32769
    t_ps[300] -= 1_250  # 1.25 ns early
    path = vcd(tmp_path / "fine.vcd", t_ps, (np.arange(n) + 1) % 2)
    cap = read_capture(path)
    assert (cap.ticks_per_ns, cap.resolution) == (1000, "1 ps")
    assert np.array_equal(cap.t_ticks, t_ps)
    assert cap.t_ns[200] == (t_ps[200] + 500) // 1000  # the stored series: nearest ns
    store = Store(tmp_path / "r")
    try:
        run = store_capture(store, cap, period_ns=PERIOD_NS, warmup_ns=0, labels={})
    finally:
        store.close()
    got = {name: m.value for (_, name), m in run.metrics.items()}
    assert got["max_rel_period_error"] == 32_768_532 / 250_000_000
    assert got["max_period_ns"] == pytest.approx(282_768.532, abs=1e-9)
    assert got["min_period_ns"] == pytest.approx(217_231.468, abs=1e-9)
    assert got["max_early"] == 32_768_532 / 250_000_000
    assert got["p9999_rel_period_error"] == 32_768_532 / 250_000_000
    assert got["warmup_ns"] == 500_000.0
    assert run.settings.imported.time_resolution == "1 ps"


def test_coarse_timescales_are_whole_ns(tmp_path):
    path = vcd(tmp_path / "us.vcd", [10, 20, 30], [1, 0, 1], timescale="10 us")
    cap = read_capture(path)
    assert cap.ticks_per_ns == 1 and list(cap.t_ns) == [100_000, 200_000, 300_000]


def test_other_signals_vectors_and_comments_are_skipped(tmp_path):
    path = tmp_path / "mixed.vcd"
    path.write_text("$timescale 1 ns $end\n$var wire 1 ! D0 $end\n$var wire 4 # bus $end\n"
                    "$var wire 1 !! D1 $end\n$enddefinitions $end\n#0 $dumpvars 0! b0000 # 1!! $end\n"
                    "#100 1! b1010 # 0!!\n$comment a note $end\n#200 x! z!\n#250 0! 1!!\n#300 1!\n")
    cap = read_capture(path)
    assert list(cap.t_ns) == [100, 250, 300] and list(cap.level) == [1, 0, 1]
    with pytest.raises(UserError, match=r"mixed\.vcd: signal .bus. has 4 bits; .*--signal"):
        read_capture(path, signal="bus")


def test_a_damaged_body_is_named_by_line_with_a_short_excerpt(tmp_path):
    path = tmp_path / "bad.vcd"
    path.write_text("$timescale 1 ns $end\n$var wire 1 ! D0 $end\n$enddefinitions $end\n"
                    "#10 1!\n#20 0!\n" + "?" * (1 << 20) + "\n")
    with pytest.raises(UserError) as err:
        read_capture(path)
    assert "bad.vcd:6: cannot read '????" in str(err.value) and len(str(err.value)) < 300


def test_a_second_timescale_is_refused_naming_both_lines(tmp_path):
    # the second one won: a 1 ns capture read in ps, and an error of 100,284 % stored without a word
    path = tmp_path / "two.vcd"
    path.write_text("$timescale 1 ns $end\n$scope module libsigrok $end\n$var wire 1 ! D0 $end\n"
                    "$upscope $end\n$timescale\n  1 ps\n$end\n$enddefinitions $end\n#0 0!\n#500 1!\n"
                    "#1000 0!\n")
    with pytest.raises(UserError) as err:
        read_capture(path)
    assert str(err.value) == (f"{path}: $timescale on lines 1 and 5 (1 ns, then 1 ps); a VCD has one time "
                              "scale: keep the one the instrument used and import again")
