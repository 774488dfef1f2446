"""A traced run on the emulated arm64 board (qemu's virt, Debian's arm64 kernel and root, TCG) watched
from outside by the emulator probe: its edges reach the trace's clock through the program's own
toggles (program-log, with the alignment's residual), and its late periods are explained, marked
emulated. Functional evidence only: no figure is a timing claim."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model import explanation as ex

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None
    or shutil.which("trace-cmd") is None,
    reason="qemu-system-arm, mmdebstrap and trace-cmd are not installed (scripts/install-deps test)")]
CAMPAIGN = """
[campaign]
name = "arm-traced"
repetitions = 1
duration = "3000ms"
warmup = "100ms"
[[target]]
name = "board"
kind = "qemu"
machine = "virt-arm64"
packages = ["mount"]   # tracefs is mounted for the run: the board's minimal root has no mount
[pins.gpiod]
chip = "9030000.pl061"
line = 2
[probes.emulator]
line = 2
[[matrix]]
impl = "c-gpiod"
pin = "gpiod"
period = "200ms"
probe = "emulator"
trace = "sched"
"""


def test_an_outside_probe_on_an_emulated_board_is_explained_through_the_program_log(tmp_path: Path):
    path = tmp_path / "arm.toml"
    path.write_text(CAMPAIGN)
    assert main(["run", str(path), "--results", str(tmp_path / "results")]) in (0, 1)
    [kept] = list((tmp_path / "results" / "attachments").glob(f"*/{ex.ATTACHMENT}"))
    got = ex.Explanation.from_json(json.loads(kept.read_text()))
    assert got.refused is None and got.aligned_by == ex.PROGRAM_LOG and got.residual_ns is not None
    assert got.emulated is True and got.events and got.pids
    assert got.periods and any(p.parts for p in got.periods)  # at least one period explained
    for p in got.periods:
        assert sum(part.duration_ns for part in p.parts) + p.remainder_ns == p.lateness_ns
