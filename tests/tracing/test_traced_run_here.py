"""A traced run on this machine's kernel (root), end to end through `jitterlab run`: a disturbance of
known name and size (tests/data/tracing/burst.c: 3 ms of every 30 ms at SCHED_FIFO 10 on the program's
CPU) is named in the run's explained.json as what ran instead of a SCHED_OTHER impl (c-mmap), with a
burst of its order of magnitude, and never as what ran instead of a SCHED_FIFO 80 impl (c-fifo) above
it. And a traced run that fails or is interrupted leaves no tracing instance and no restore record.
Structure and orders of magnitude, never a timing bound."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import traced
from jitterlab.measure.context import Placement, RunContext
from jitterlab.model import explanation as ex
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Cell, RunSettings
from jitterlab.targets.local import LocalTarget
from tests.tracing.test_recording_here import tracing_state

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="tracing needs root"),
    pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)"),
    pytest.mark.skipif((os.cpu_count() or 1) < 2, reason="the program and the probe each need a CPU"),
]
BURST_US, EVERY_US, CPU = 3000, 30000, 1
BURST = Path(__file__).parents[1] / "data" / "tracing" / "burst.c"
CAMPAIGN = """
[campaign]
name = "traced"
duration = "2s"
repetitions = 1
[campaign.cpus]
program = "{cpu}"
probe = "0"
[[target]]
name = "local"
kind = "local"
[matrix]
benchmark = "squarewave"
impl = "{impl}"
period = "1ms"
trace = "sched"
"""


@pytest.fixture(scope="module")
def burst(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("burst") / "burst"
    subprocess.run(["cc", "-std=c11", "-Wall", "-Wextra", "-Werror", "-O2", "-o", str(out), str(BURST)],
                   check=True)
    return out


def explained_run(tmp_path: Path, impl: str, burst: Path) -> ex.Explanation:
    path = tmp_path / f"{impl}.toml"
    path.write_text(CAMPAIGN.format(cpu=CPU, impl=impl))
    results = tmp_path / f"{impl}-results"
    disturber = subprocess.Popen([str(burst), str(CPU), "10", str(BURST_US), str(EVERY_US), "600"])
    try:
        assert main(["run", str(path), "--results", str(results)]) in (0, 1)  # 1: a cell judged, not failed
    finally:
        disturber.kill()
        disturber.wait()
    [kept] = list((results / "attachments").glob(f"*/{ex.ATTACHMENT}"))
    assert (kept.parent / ex.TRACE_FILE).stat().st_size > 0
    return ex.Explanation.from_json(json.loads(kept.read_text()))


def test_a_real_time_burst_is_named_above_a_sched_other_impl_and_absent_below_a_fifo_one(tmp_path, burst):
    other = explained_run(tmp_path, "c-mmap", burst)
    assert other.refused is None and other.aligned_by == ex.DIRECT and other.program_cpus == (CPU,)
    assert other.periods, "the burst made no period late: nothing explained"
    for p in other.periods:
        assert sum(part.duration_ns for part in p.parts) + p.remainder_ns == p.lateness_ns
    assert [p for p in other.periods if p.chosen == ex.WORST and p.spans] != []  # the worst's timeline
    by_burst = [part for p in other.periods for part in p.parts if part.who and part.who.comm == "jl-burst"]
    preempted = [part for part in by_burst if part.cause == "wakeup"]
    assert preempted, [p.parts for p in other.periods]
    assert {(part.who.policy, part.who.priority) for part in preempted} == {("SCHED_FIFO/RR", 10)}
    longest_ms = max(part.duration_ns for part in preempted) / 1e6
    assert BURST_US / 1e4 < longest_ms < BURST_US / 1e2  # of the order of its 3 ms burst

    fifo = explained_run(tmp_path, "c-fifo", burst)
    assert fifo.refused is None and fifo.pids
    ran_instead = {part.who.comm for p in fifo.periods for part in p.parts
                   if part.cause == "wakeup" and part.who}
    assert "jl-burst" not in ran_instead, ran_instead


def context(tmp_path: Path, target: LocalTarget) -> RunContext:
    cell = Cell("local", "squarewave", "idle", (("impl", "c-fifo"), ("period", 1_000_000), ("probe", "vpin"),
                                                 ("pin", "vpin"), ("trace", "sched")))
    scratch = f"{tmp_path}/wd/run"
    os.makedirs(scratch)
    return RunContext(target, RunSettings(duration_ns=1_000_000_000), cell, 0, scratch, tmp_path / "local",
                      "", Placement(None, None), rt_permitted=True)


@pytest.mark.parametrize("ending", [RunFailed("the program exited with status 1"), KeyboardInterrupt()])
def test_a_failed_or_interrupted_traced_run_leaves_tracing_as_it_was(tmp_path, ending):
    before = tracing_state()
    target = LocalTarget(workdir=str(tmp_path / "wd"))
    try:
        with pytest.raises(type(ending)), traced.recording(context(tmp_path, target)) as trace:
            assert any(name.startswith("jitterlab-") for name in tracing_state()[1])  # recording meanwhile
            raise ending
    finally:
        target.close()
    assert trace.raw is None
    assert tracing_state() == before
