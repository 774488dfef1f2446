"""The recorder on this machine's kernel (root): a known disturbance recorded, its .dat read by
trace-cmd and by jitterlab's reader, and tracing left exactly as it was — after a good run, a failed
one, and a killed jitterlab (the sweep's restore)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from jitterlab.model.trace import Kind, TraceEvents
from jitterlab.targets.local import LocalTarget
from jitterlab.tracing import changes, datfile, reader, recorder, report_text
from jitterlab.tracing.recorder import Recorder
from jitterlab.tracing.tracefs import TRACEFS

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="tracing needs root"),
    pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)"),
]

BURST_MS, EVERY_MS = 3, 30
# spins BURST_MS of every EVERY_MS on CPU $1 as "jl-burst", at SCHED_FIFO 10 where it may
DISTURBER = f"""
import os, sys, time
os.sched_setaffinity(0, {{int(sys.argv[1])}})
try:
    os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(10))
except OSError:
    pass
open("/proc/self/comm", "w").write("jl-burst")
end = time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t0 = time.monotonic()
    while time.monotonic() - t0 < {BURST_MS / 1000}:
        pass
    time.sleep({(EVERY_MS - BURST_MS) / 1000})
"""


def tracing_state() -> tuple[list[str], list[str], list[str]]:
    """tracefs' mounts, its instances and jitterlab's restore records on this machine."""
    mounts = sorted(line for line in Path("/proc/mounts").read_text().splitlines() if " tracefs " in line)
    instances = Path(TRACEFS, "instances")
    records = Path(changes.RECORD_DIR)
    return (mounts, sorted(p.name for p in instances.iterdir()) if instances.is_dir() else [],
            sorted(p.name for p in records.iterdir()) if records.is_dir() else [])


@pytest.fixture
def target(tmp_path):
    local = LocalTarget(workdir=str(tmp_path / "wd"))
    yield local
    local.close()


def runs_of(events: TraceEvents, comm: str, cpu: int) -> np.ndarray:
    """(start, end) of each stretch `comm` ran on `cpu`, preemptions shorter than 1 ms joined."""
    rows = events.rows[(events.rows["kind"] == Kind.SWITCH) & (events.rows["cpu"] == cpu)]
    name = events.names.index(comm)
    runs = []
    for i in np.flatnonzero(rows["name"] == name)[:-1]:
        runs.append((int(rows["time_ns"][i]), int(rows["time_ns"][i + 1])))
    joined: list[list[int]] = []
    for start, end in runs:
        if joined and start - joined[-1][1] < 1_000_000:
            joined[-1][1] = end
        else:
            joined.append([start, end])
    return np.array(joined, dtype=np.int64).reshape(-1, 2)


def test_a_known_disturbance_is_recorded_read_and_everything_put_back(target, tmp_path):
    before = tracing_state()
    assert recorder.check(target) is None
    local = tmp_path / "trace"
    with Recorder(target, str(tmp_path / "wd"), duration_ns=1_500_000_000, period_ns=EVERY_MS * 10**6) as rec:
        assert Path(rec.instance_dir).is_dir()
        assert Path(rec.instance_dir, "trace_clock").read_text().split().count("[mono]") == 1
        subprocess.run([sys.executable, "-c", DISTURBER, "1", "1.5"], check=True)
        raw = rec.stop(local)
    assert tracing_state() == before
    assert raw.cpus >= (os.cpu_count() or 1) and raw.buffer_kb >= recorder.MIN_BUFFER_KB
    assert raw.mounted == (not before[0])
    dat = datfile.build(raw, local / "run.dat")
    assert tracing_state() == before  # trace-cmd mounted nothing here
    report = subprocess.run(["trace-cmd", "report", str(dat)], capture_output=True, text=True,
                            check=True).stdout
    assert f"cpus={raw.cpus}" in report and "jl-burst" in report and "sched_switch" in report

    events = reader.read(dat)
    marks = [events.names[i] for i in events.rows["name"][events.rows["kind"] == Kind.MARK]]
    assert marks == [recorder.START_MARK, recorder.STOP_MARK]
    start, stop = events.covered_ns[1]
    assert 1.4e9 < stop - start < 60e9  # the run's own span, between the marks
    bursts = runs_of(events, "jl-burst", 1)
    lengths_ms = (bursts[:, 1] - bursts[:, 0]) / 1e6
    # structure, not timing: the bursts are there, each of the order of BURST_MS (not of µs, not of s)
    assert len(bursts) >= 10, lengths_ms
    assert BURST_MS / 10 < float(np.median(lengths_ms)) < BURST_MS * 10, lengths_ms
    assert not runs_of(events, "jl-burst", 0).size  # pinned: never on CPU 0
    assert {int(k) for k in np.unique(events.rows["kind"])} >= {Kind.SWITCH, Kind.WAKING, Kind.WAKEUP,
                                                                 Kind.HRTIMER_START, Kind.MARK}

    # trace-cmd report's text: the same events. Where the ring buffer overran (a loaded machine),
    # `trace-cmd report` once printed a drop marker on a CPU at which libtracecmd's record carried no
    # missed count: the events are compared, the readers' loss markers are not
    text = report_text.read_report(dat)
    text_rows = text.rows[text.rows["kind"] != Kind.LOST]
    rows = events.rows[events.rows["kind"] != Kind.LOST]
    assert len(text_rows) == len(rows)
    for column in ("time_ns", "cpu", "kind", "pid", "prio", "prev_pid", "number", "timer", "expires_ns"):
        assert np.array_equal(text_rows[column], rows[column]), column
    assert [text.names[i] for i in text_rows["name"]] == [events.names[i] for i in rows["name"]]


def test_a_failed_run_puts_everything_back(target, tmp_path):
    before = tracing_state()
    recording = Recorder(target, str(tmp_path), duration_ns=10**9)
    with pytest.raises(RuntimeError, match="the run failed"), recording:
        assert tracing_state() != before
        raise RuntimeError("the run failed")
    assert tracing_state() == before


def test_what_a_killed_jitterlab_left_is_undone_by_the_next_sweep(target, tmp_path, monkeypatch):
    # its records in a directory of the test's: a campaign another test runs meanwhile sweeps this
    # machine's /run/jitterlab-tracing, and would undo it first
    records = str(tmp_path / "records")
    monkeypatch.setattr(changes, "RECORD_DIR", records)
    monkeypatch.setattr(changes, "LEGACY_DIRS", ())
    before = tracing_state()
    script = ("import time, sys\nfrom jitterlab.targets.local import LocalTarget\n"
              "from jitterlab.tracing import changes\nfrom jitterlab.tracing.recorder import Recorder\n"
              f"changes.RECORD_DIR = {records!r}\n"
              f"rec = Recorder(LocalTarget(workdir={str(tmp_path / 'k')!r}), {str(tmp_path / 'k')!r}, "
              "duration_ns=10**9)\nrec.start()\nprint(rec.instance_dir, flush=True)\ntime.sleep(600)\n")
    killed = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        instance = killed.stdout.readline().strip()
        assert instance and Path(instance).is_dir()
    finally:
        killed.send_signal(signal.SIGKILL)
        killed.wait()
    assert len(tracing_state()[2]) == len(before[2]) + 1  # its record is there
    said = changes.restore_orphaned(target)
    [undid] = said
    assert undid.startswith(f"undid the tracing changes of a killed jitterlab run: rmdir {instance}")
    deadline = time.monotonic() + 10
    while tracing_state() != before and time.monotonic() < deadline:
        time.sleep(0.1)
    assert tracing_state() == before
