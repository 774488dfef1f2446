"""The leftover sweep: stops what a killed run recorded, and nothing else."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterlab.execution import sweep
from jitterlab.targets import processes
from jitterlab.targets.local import LocalTarget
from tests.support import eventually, group_alive

needs_stress_ng = pytest.mark.skipif(shutil.which("stress-ng") is None, reason="no stress-ng")


def orphan_marker() -> str:
    """A marker as a dead owner (this pid, another start time) would have written it."""
    return f"{processes.host_tag()}~{os.getpid()}~1~{secrets.token_hex(8)}"


@needs_stress_ng
def test_a_recorded_leftover_is_stopped_and_named(tmp_path, monkeypatch):
    target = LocalTarget(workdir=str(tmp_path))
    monkeypatch.setattr(processes, "new_marker", orphan_marker)
    proc = processes.spawn_recorded(target, ["stress-ng", "--cpu", "1", "--timeout", "60s"])
    while proc.pgid() is None:
        time.sleep(0.01)
    pgid = proc.pgid()
    stopped = sweep.sweep(target)
    assert any(f"pid {pgid}: stress-ng --cpu 1" in line for line in stopped), stopped
    assert not group_alive(pgid)
    assert os.listdir(tmp_path / "live") == []
    assert sweep.sweep(target) == []


def test_running_owners_and_unrecorded_processes_are_left_alone(tmp_path):
    target = LocalTarget(workdir=str(tmp_path))
    mine = processes.spawn_recorded(target, ["sleep", "30"])  # owner (this process) is alive
    stranger = subprocess.Popen(["sleep", "30"], start_new_session=True)
    fake_marker = orphan_marker()  # carries a marker nobody recorded
    impostor = subprocess.Popen(["sleep", "30"], start_new_session=True,
                                env={**os.environ, processes.MARKER_VAR: fake_marker})
    try:
        while mine.pgid() is None:
            time.sleep(0.01)
        assert sweep.sweep(target) == []
        assert mine.poll() is None and stranger.poll() is None and impostor.poll() is None
    finally:
        mine.stop()
        for p in (stranger, impostor):
            p.kill()
            p.wait()
    processes.remove_records(target)  # what the end of a run does
    assert os.listdir(tmp_path / "live") == []


_RUNNER = """
import sys, time
import jitterlab.measure.loads
from jitterlab.measure.loads.base import LOADS, LoadContext
from jitterlab.targets.local import LocalTarget
target = LocalTarget(workdir=sys.argv[1])
load = LOADS.get("cpu", "t").factory()
load.start(LoadContext(target, sys.argv[1] + "/scratch", options={"workers": 1, "cpu_load": 10}))
print(load.pidfile, flush=True)
time.sleep(60)
"""


@needs_stress_ng
@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGINT])
def test_a_runner_killed_mid_load_leaves_nothing_after_the_sweep(tmp_path, signum):
    runner = subprocess.Popen([sys.executable, "-c", _RUNNER, str(tmp_path)],
                              stdout=subprocess.PIPE, text=True)
    pidfile = runner.stdout.readline().strip()
    pgid = int(Path(pidfile).read_text())
    runner.send_signal(signum)
    runner.wait(10)
    if signum == signal.SIGKILL:
        assert group_alive(pgid)  # the leftover an earlier killed run would leave
    stopped = sweep.sweep(LocalTarget(workdir=str(tmp_path)))
    assert not group_alive(pgid)
    assert all("stress-ng" in line for line in stopped)
    assert os.listdir(tmp_path / "live") == []


def test_a_recorded_process_carries_its_marker_and_its_record_names_it(tmp_path):
    """What the sweep finds: the launcher writes the record and exports the marker itself, so the
    recorded pid is the program's own (no `env` or shell left in between) and carries the marker."""
    target = LocalTarget(workdir=str(tmp_path))
    proc = processes.spawn_recorded(target, ["sleep", "30"])
    try:
        record = Path(proc.pidfile)
        assert eventually(lambda: not (record.exists() and record.read_text().strip()), timeout_s=10) is False
        pid = int(record.read_text())
        eventually(lambda: Path(f"/proc/{pid}/comm").read_text().strip() != "sleep", timeout_s=10)
        assert Path(f"/proc/{pid}/comm").read_text().strip() == "sleep"
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        assert f"{processes.MARKER_VAR}={proc.marker}".encode() in environ
    finally:
        proc.stop()
