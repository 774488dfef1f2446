"""Each tuning on this machine, for real, where it allows it: what check() said holds (a refused
tuning changes nothing and fails with that reason; an applied one changed its files to what it
recorded), and restore() puts back every file it touched, byte for byte. No timing is asserted.

This machine's kernel files are shared with everything running here: each tuning is applied for
the fraction of a second the test takes, and put back at once.
"""

from __future__ import annotations

import contextlib
import glob
import os
import subprocess
from pathlib import Path

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import Changed, Cpus, Held
from jitterlab.targets.local import LocalTarget
from jitterlab.tunings.base import TUNINGS

WATCHED = ("/proc/irq/*/smp_affinity_list", "/proc/irq/default_smp_affinity",
           "/proc/sys/kernel/sched_rt_runtime_us", "/sys/devices/system/cpu/cpu*/cpufreq/scaling_governor",
           "/sys/fs/cgroup/cgroup.subtree_control", "/sys/fs/cgroup/unified/cgroup.subtree_control")
CELL = Cpus(program=(max(os.sched_getaffinity(0)),))


def _files() -> dict[str, bytes]:
    """What the tunings may change here, byte for byte."""
    out = {}
    for pattern in WATCHED:
        for path in glob.glob(pattern):
            with contextlib.suppress(OSError):
                out[path] = Path(path).read_bytes()
    return out


def _latency_us() -> int | None:
    argv = ["od", "-An", "-td4", "-N4", "/dev/cpu_dma_latency"]
    done = subprocess.run(argv, capture_output=True, text=True)
    return int(done.stdout) if done.returncode == 0 and done.stdout.strip() else None


@pytest.fixture
def here(tmp_path) -> LocalTarget:
    return LocalTarget("local", str(tmp_path / "work"))


@pytest.mark.parametrize("name", TUNINGS.names())
def test_on_this_machine_it_does_what_check_said_and_restores_every_byte(here, name):
    tuning = TUNINGS.get(name, "test")
    before, latency = _files(), _latency_us()
    why = tuning.check(here, CELL)
    print(f"{name}: {why or 'can be applied here'}")
    if why is not None:
        with pytest.raises(RunFailed) as failed:
            tuning.apply(here, CELL)
        assert (failed.value.reason, failed.value.status) == (f"tuning {name}: {why}", "unavailable")
        assert _files() == before
        return
    applied = tuning.apply(here, CELL)
    try:
        for step in applied.steps:
            if isinstance(step, Changed) and os.path.isfile(step.path):
                assert Path(step.path).read_text() == step.after
            if isinstance(step, Held):
                assert int(step.during or -1) == _latency_us() == 0
    finally:
        problems = tuning.restore(here, applied)
    assert problems == []
    assert _files() == before and _latency_us() == latency
    assert tuning.restore(here, applied) == []


def test_the_timer_slack_launcher_gives_the_program_its_slack(here):
    tuning = TUNINGS.get("timer-slack", "test")
    if (why := tuning.check(here, CELL)) is not None:
        pytest.skip(why)
    applied = tuning.apply(here, CELL)
    argv = [*applied.launcher, "cat", "/proc/self/timerslack_ns"]
    done = subprocess.run(argv, capture_output=True, text=True)
    assert (done.returncode, done.stdout) == (0, "1\n")
