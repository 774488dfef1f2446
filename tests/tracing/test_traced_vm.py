"""A traced run in a qemu guest (the standard Debian kernel; under TCG here: functional evidence, never
timing): the guest records its own trace, the trace file is made here, and the run's late periods
are explained on the guest's clock, marked emulated. Structure only: no figure is a timing claim."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model import explanation as ex
from jitterlab.tracing import reader

pytestmark = [
    pytest.mark.vm,
    pytest.mark.skipif(shutil.which("qemu-system-x86_64") is None,
                       reason="qemu-system-x86 is not installed (scripts/install-deps test)"),
    pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)"),
]
CAMPAIGN = """
[campaign]
name = "vm-traced"
repetitions = 1
duration = "3s"
run_timeout = "120s"
[[target]]
name = "standard"
kind = "qemu"
kernel = "standard"
[[matrix]]
impl = "c-mmap"
period = "50ms"
probe = "self"   # a polling vpin is blind most of the time in an emulated guest
trace = "sched"
"""


def test_a_guest_traces_its_run_and_its_late_periods_are_explained(tmp_path: Path):
    path = tmp_path / "vm.toml"
    path.write_text(CAMPAIGN)
    assert main(["run", str(path), "--results", str(tmp_path / "results")]) in (0, 1)
    [kept] = list((tmp_path / "results" / "attachments").glob(f"*/{ex.ATTACHMENT}"))
    got = ex.Explanation.from_json(json.loads(kept.read_text()))
    assert got.refused is None and got.aligned_by == ex.DIRECT and got.emulated is True and got.pids
    events = reader.read(kept.parent / ex.TRACE_FILE)
    assert got.events == len(events) > 0
    assert got.periods  # an emulated guest is late somewhere: each late period explained
    for p in got.periods:
        assert sum(part.duration_ns for part in p.parts) + p.remainder_ns == p.lateness_ns
    assert any(p.parts for p in got.periods)  # the trace covers them: not all remainder
