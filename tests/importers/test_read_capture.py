"""What read_capture takes: the options that apply to the file's format; the others are refused,
naming the option, whatever the format (they were ignored without a word on a VCD)."""

from __future__ import annotations

import pytest

from jitterlab.cli.main import main
from jitterlab.importers import read_capture
from jitterlab.model.errors import UserError

VCD = "$timescale 1 us $end\n$var wire 1 ! D0 $end\n$enddefinitions $end\n#0 0!\n" + "".join(
    f"#{500 * k} {k % 2}!\n" for k in range(1, 40))
CSV = "time_ns,level\n" + "".join(f"{500_000 * k},{k % 2}\n" for k in range(1, 40))


@pytest.mark.parametrize(("suffix", "option", "says"), [
    (".vcd", {"time_unit": "ns"}, "--time-unit ns: only for CSV files (a VCD's $timescale gives the unit); "
                                  "leave out --time-unit for {path}"),
    (".vcd", {"kind": "samples"}, "--kind samples: only for CSV files (a VCD holds value changes); leave out "
                                  "--kind for {path}"),
    (".vcd", {"kind": "edges"}, "--kind edges: only for CSV files (a VCD holds value changes); leave out "
                                "--kind for {path}"),
    (".csv", {"signal": "D0"}, "--signal 'D0': only for VCD files (a CSV holds one signal: time,level); "
                               "leave out --signal for {path}"),
])
def test_an_option_of_the_other_format_is_refused_naming_it(tmp_path, suffix, option, says):
    path = tmp_path / f"cap{suffix}"
    path.write_text(VCD if suffix == ".vcd" else CSV)
    with pytest.raises(UserError) as err:
        read_capture(path, **option)
    assert str(err.value) == says.format(path=path)
    assert len(read_capture(path).t_ns) == 39  # without it the file reads


def test_the_command_line_refuses_them_with_exit_2(tmp_path, capsys):
    (tmp_path / "cap.vcd").write_text(VCD)
    argv = ["import", "edges", str(tmp_path / "cap.vcd"), "--period", "1ms", "--results", str(tmp_path / "r")]
    assert main([*argv, "--time-unit", "us"]) == 2
    assert capsys.readouterr().err.startswith("error: --time-unit us: only for CSV files")
    assert not (tmp_path / "r").exists()
    assert main(argv) == 0
