"""Reading a trace file (tracing/reader.py through libtracecmd, tracing/report_text.py through trace-cmd
report) on a recording of this machine (tests/data/trace/README.md), and refusing what is not one."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.trace import Kind
from jitterlab.tracing import reader, recorder, report_text

DAT = Path(__file__).parent.parent / "data" / "trace" / "burst-cpu1.dat"
HAS_LIBTRACECMD = shutil.which("pkg-config") is not None and subprocess.run(
    ["pkg-config", "--exists", "libtracecmd"], check=False).returncode == 0
pytestmark = pytest.mark.skipif(not HAS_LIBTRACECMD or shutil.which("trace-cmd") is None,
                                reason="apt install trace-cmd libtracecmd-dev libtraceevent-dev "
                                       "libtracefs-dev")


@pytest.fixture(scope="module")
def cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(scope="module")
def events(cache):
    return reader.read(DAT, cache=cache)


def test_the_helper_is_built_once_per_source(cache):
    first = reader.helper(cache)
    assert first.name.startswith("trace-events-") and reader.helper(cache) == first
    assert [p.name for p in cache.iterdir()] == [first.name]


def test_the_recording_reads_as_rows_with_its_span_and_names(events):
    rows = events.rows
    report = subprocess.run(["trace-cmd", "report", str(DAT)], capture_output=True, text=True, check=True)
    assert report.stdout.startswith("cpus=2\n") and len(events) == report.stdout.count("\n") - 1
    assert np.all(np.diff(rows["time_ns"]) >= 0)
    kinds = {Kind(k).name: int(n) for k, n in zip(*np.unique(rows["kind"], return_counts=True), strict=True)}
    assert kinds["MARK"] == 2 and kinds["SWITCH"] > 100 and kinds["HRTIMER_START"] > 100
    assert set(kinds) <= {k.name for k in Kind}
    marks = rows[rows["kind"] == Kind.MARK]
    assert [events.names[i] for i in marks["name"]] == [recorder.START_MARK, recorder.STOP_MARK]
    assert events.covered_ns == ((int(marks["time_ns"][0]), int(marks["time_ns"][1])),) * 2
    for cpu, breaks in ((0, 2), (1, 1)):  # a switch leaves the task the one before on its CPU switched to
        switches = rows[(rows["kind"] == Kind.SWITCH) & (rows["cpu"] == cpu)]
        assert len(switches) > 1000
        # but for a few in this recording (trace-cmd report shows them too: e.g. 1905.676054 on CPU 0,
        # rcu_preempt switched out without a switch to it after tokio-rt-worker's)
        assert np.count_nonzero(switches["prev_pid"][1:] != switches["pid"][:-1]) == breaks
    assert events.names[0] == "" and "jl-burst" in events.names


def test_the_disturbers_bursts_are_found(events):
    rows = events.rows[(events.rows["kind"] == Kind.SWITCH) & (events.rows["cpu"] == 1)]
    burst = events.names.index("jl-burst")
    ins = np.flatnonzero(rows["name"] == burst)
    assert np.all(rows["prev_name"][ins + 1] == burst) and set(rows["prio"][ins]) == {89}  # SCHED_FIFO 10
    slept = ins[rows["number"][ins + 1] == 1]  # each burst ends in its sleep (S); the last runs end its life
    lengths_ms = (rows["time_ns"][slept + 1] - rows["time_ns"][slept]) / 1e6
    assert len(slept) == 9 and np.all((lengths_ms > 2.9) & (lengths_ms < 3.5)), lengths_ms  # 3 ms bursts


def test_trace_cmd_reports_text_reads_the_same_events(events):
    text = report_text.read_report(DAT)
    assert len(text) == len(events)
    for column in ("time_ns", "cpu", "kind", "pid", "prio", "prev_pid", "prev_prio", "number", "number2",
                   "timer", "expires_ns", "soft_ns"):
        assert np.array_equal(text.rows[column], events.rows[column]), column
    for column in ("name", "prev_name"):
        assert [text.names[i] for i in text.rows[column]] == [events.names[i] for i in events.rows[column]]
    assert text.covered_ns == events.covered_ns


def test_what_is_not_a_trace_file_is_refused_in_one_line_naming_it(tmp_path, cache):
    damaged = tmp_path / "damaged.dat"
    damaged.write_bytes(DAT.read_bytes()[:3000])
    for path in (damaged, tmp_path / "nothing.dat"):
        with pytest.raises(UserError) as info:
            reader.read(path, cache=cache)
        assert str(info.value).startswith(f"{path}: ") and "\n" not in str(info.value)
    with pytest.raises(UserError, match=f"^{damaged}: trace-cmd report cannot read this trace file"):
        report_text.read_report(damaged)
