"""A board's device tree with the machine profile's edits: made once on a copy with fdtput, the
original left alone, and an edit the tree cannot take refused in one line."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.devicetree import describe, edited
from jitterlab.targets.qemu.machines.profile import DtEdit

pytestmark = pytest.mark.skipif(shutil.which("dtc") is None or shutil.which("fdtget") is None,
                                reason="device-tree-compiler is not installed (scripts/install-deps test)")

DTS = """/dts-v1/;
/ { soc { timer@a00600 { compatible = "arm,cortex-a9-twd-timer"; status = "okay"; };
          mmc@2190000 { status = "disabled"; }; }; };
"""
EDITS = (DtEdit("/soc/timer@a00600", "status", "disabled", "qemu's TWD runs sleeps long"),
         DtEdit("/soc/mmc@2190000", "non-removable", "", "qemu's card has no detect line"))


@pytest.fixture
def dtb(tmp_path):
    (tmp_path / "board.dts").write_text(DTS)
    subprocess.run(["dtc", "-I", "dts", "-O", "dtb", "-o", str(tmp_path / "board.dtb"),
                    str(tmp_path / "board.dts")], check=True, capture_output=True)
    return tmp_path / "board.dtb"


def _get(path, node, prop, *flags):
    return subprocess.run(["fdtget", *flags, str(path), node, prop], capture_output=True, text=True)


def test_the_edits_are_made_on_a_copy_once(dtb, tmp_path):
    original = dtb.read_bytes()
    out = edited(dtb, EDITS, tmp_path, "t")
    assert out != dtb and out.parent == tmp_path and dtb.read_bytes() == original
    assert _get(out, "/soc/timer@a00600", "status").stdout.strip() == "disabled"
    assert _get(out, "/soc/mmc@2190000", "non-removable").returncode == 0  # present, empty
    assert _get(dtb, "/soc/timer@a00600", "status").stdout.strip() == "okay"
    stamp = out.stat().st_mtime_ns
    assert edited(dtb, EDITS, tmp_path, "t") == out and out.stat().st_mtime_ns == stamp
    assert edited(dtb, (), tmp_path, "t") == dtb


def test_a_node_the_tree_lacks_is_one_line(dtb, tmp_path):
    with pytest.raises(UserError) as e:
        edited(dtb, (DtEdit("/soc/timer@ffff", "status", "disabled", "x"),), tmp_path, "target 'b'")
    assert str(e.value).startswith("target 'b': cannot set status of /soc/timer@ffff in board.dtb: ")
    assert "\n" not in str(e.value) and not list(tmp_path.glob("*.part"))


def test_the_record_names_each_edit_and_why():
    assert describe(EDITS) == ("/soc/timer@a00600 status=disabled (qemu's TWD runs sleeps long); "
                               "/soc/mmc@2190000 non-removable (qemu's card has no detect line)")
