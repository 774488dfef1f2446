"""Every registered tuning in a qemu guest (the standard Debian kernel, 2 CPUs; under TCG here:
functional evidence, never timing), for real, in one boot: what check() says holds there (a refused
tuning changes nothing and fails with that reason), an accepted one is applied around a short run of
a program pinned to the cell's CPU and reaches it (its launcher and flags), and restore() puts back
every file it touched, byte for byte, leaving no journal entry. No timing is asserted.

Which tunings the guest accepts is printed (`-s` shows it): the guest's kernel decides, not this test.
"""

from __future__ import annotations

import shutil

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import Changed, Cpus, Held, Made
from jitterlab.targets.qemu.options import parse_options
from jitterlab.targets.qemu.target import QemuTarget
from jitterlab.tunings import files
from jitterlab.tunings.base import TUNINGS
from jitterlab.tunings.journal import JOURNAL_DIR

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None,
    reason="qemu-system-x86 is not installed (scripts/install-deps test)")]

CELL = Cpus(program=(1,))  # the guest's second CPU: the first keeps the rest (irq-away, isolated)
FILES = ["/proc/irq/default_smp_affinity", "/proc/sys/kernel/sched_rt_runtime_us",
         "/sys/fs/cgroup/cgroup.subtree_control", "/sys/fs/cgroup/cgroup.procs"]
# the short run: 200 sleeps of 1 ms on the cell's CPU, then what the program's process is
# (its timer slack, its cgroup, its locked memory); --mlock (the tuning's flag) locks its memory
PROGRAM = r"""
import ctypes, sys, time
if "--mlock" in sys.argv and ctypes.CDLL(None, use_errno=True).mlockall(3) != 0:
    sys.exit(69)
for _ in range(200):
    time.sleep(0.001)
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
print("slack", open("/proc/self/timerslack_ns").read().strip())
print("cgroup", open("/proc/self/cgroup").read().strip())
print("locked", status["VmLck"].split()[0])
"""


@pytest.fixture(scope="module")
def guest():
    target = QemuTarget("guest", parse_options({"kernel": "standard", "cpus": 2, "memory": "1G",
                                                "boot_timeout": "300s"}, "test"))
    try:
        yield target.boot()
    finally:
        target.close()


def _state(guest) -> dict[str, str | None]:
    """What the tunings may change in the guest, byte for byte: the kernel files, whether the
    partition directory is there, what /dev/cpu_dma_latency holds, and the journal's entries."""
    found = files.read(guest, FILES, under=("/proc/irq", "smp_affinity_list"))
    found |= files.read(guest, [], under=("/sys/devices/system/cpu", "cpufreq/scaling_governor"))
    state = {path: f.text for path, f in found.items() if path != "/sys/fs/cgroup/cgroup.procs"}
    state["latency"] = guest.run(["od", "-An", "-td4", "-N4", "/dev/cpu_dma_latency"]).stdout.strip()
    state["partition"] = guest.run(["ls", "-d", "/sys/fs/cgroup/jitterlab-isolated"]).stdout
    return state


def _journal(guest) -> str:
    return guest.run(["sh", "-c", 'ls -A -- "$1" 2>/dev/null; exit 0', "sh", JOURNAL_DIR]).stdout


def _short_run(guest, launcher: tuple[str, ...], flags: tuple[str, ...]) -> dict[str, str]:
    argv = ["taskset", "-c", str(CELL.program[0]), *launcher, "python3", "-c", PROGRAM, *flags]
    done = guest.run(argv, timeout_s=120)
    assert done.rc == 0, done.stderr
    return dict(line.split(" ", 1) for line in done.stdout.splitlines())


def test_every_tuning_in_the_guest_does_what_check_said_and_restores_every_byte(guest):
    said: dict[str, str] = {}
    for name in TUNINGS.names():
        tuning = TUNINGS.get(name, "test")
        before = _state(guest)
        why = tuning.check(guest, CELL)
        said[name] = why or "applied"
        print(f"\nin the x86 guest: {name}: {said[name]}")
        if why is not None:
            with pytest.raises(RunFailed) as failed:
                tuning.apply(guest, CELL)
            assert (failed.value.reason, failed.value.status) == (f"tuning {name}: {why}", "unavailable")
            assert _state(guest) == before, name
            continue
        applied = tuning.apply(guest, CELL)
        try:
            during = _state(guest)
            for step in applied.steps:
                if isinstance(step, Changed) and step.path in during:
                    assert during[step.path] == step.after, (name, step.path)
                if isinstance(step, Held):
                    assert int(step.during or -1) == int(during["latency"]) == 0, name
                if isinstance(step, Made):
                    assert during["partition"].strip() == step.path, name
            if applied.steps and tuning.changes_machine:
                assert _journal(guest), f"{name}: no journal entry while applied"
            got = _short_run(guest, applied.launcher, applied.flags)
            if name == "timer-slack":
                assert got["slack"] == "1"
            if name == "isolated":
                assert "jitterlab-isolated" in got["cgroup"]
            if name == "mlock":
                assert int(got["locked"]) > 0
        finally:
            problems = tuning.restore(guest, applied)
        assert problems == [], name
        assert _state(guest) == before, name
        assert tuning.restore(guest, applied) == []  # restoring twice is restoring once
        assert _journal(guest) == "", name
    assert said["none"] == "applied"
