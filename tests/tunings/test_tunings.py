"""Each tuning against a fake machine's files (tests/tunings/machine.py): what check() says, what
apply() changes and records, what the kernel refused, and restore() putting back every byte."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import (
    MLOCK_ITSELF,
    MLOCK_NEVER,
    MLOCK_ON_FLAG,
    Applied,
    Changed,
    Cpus,
    Made,
    ProgramTraits,
    Refused,
    applied_from_json,
)
from jitterlab.targets import processes
from jitterlab.targets.local import LocalTarget
from jitterlab.tunings import files
from jitterlab.tunings.base import TUNINGS
from jitterlab.tunings.isolated import _JOIN
from tests.tunings.machine import REFUSING, Machine, carries

CELL = Cpus(program=(1,), probe=(2,))
MACHINE_TUNINGS = ["irq-away", "cpu-dma-latency", "isolated", "rt-unthrottled", "governor-performance"]


def tuning(name: str, machine: Machine):
    return TUNINGS.get(name, "test").at(machine.root)


@pytest.fixture
def machine(tmp_path) -> Machine:
    return Machine(tmp_path)


def test_the_tunings_are_named_as_a_campaign_file_names_things():
    assert set(TUNINGS.names()) >= {"none", *MACHINE_TUNINGS, "timer-slack", "mlock"}
    for entry in TUNINGS:
        assert re.fullmatch(r"[a-z][a-z0-9]*(-[a-z0-9]+)*", entry.name)
        assert entry.help and "\n" not in entry.help


@pytest.mark.parametrize("name", TUNINGS.names())
def test_check_says_it_can_and_changes_nothing(machine, name):
    before = machine.snapshot()
    why = tuning(name, machine).check(machine.target, CELL)
    if name != "mlock" or os.geteuid() == 0:  # mlock: this user's memlock limit may refuse it
        assert why is None
    assert machine.snapshot() == before and machine.journal() == []
    assert not any(c[:3] == ("sh", "-c", files._WRITE) for c in machine.target.calls)


def test_irq_away_moves_every_irq_off_the_cells_cpus_and_names_those_the_kernel_refused(machine):
    if 1 not in (processes_cpus := _cpus(REFUSING.read_text())):
        pytest.skip(f"{REFUSING} has no CPU 1 here: no write to refuse")
    machine.refusing("proc/irq/77/smp_affinity_list")  # like a managed IRQ: the kernel says EACCES/EIO
    before = machine.snapshot()
    away = tuning("irq-away", machine)
    applied = away.apply(machine.target, CELL)
    irq = f"{machine.root}/proc/irq"
    assert {s.path: (s.before, s.after) for s in applied.changed} == {
        f"{irq}/8/smp_affinity_list": ("0-3\n", "0,3\n"),
        f"{irq}/9/smp_affinity_list": ("1-2\n", "0,3\n"),  # only the cell's CPUs: every other one
        f"{irq}/24/smp_affinity_list": ("1\n", "0,3\n"),
        f"{irq}/30/smp_affinity_list": ("2-3\n", "3\n"),
        f"{irq}/default_smp_affinity": ("f\n", "9\n"),
    }  # IRQ 0 was on CPU 0 only: untouched
    wanted = ",".join(str(c) for c in processes_cpus if c not in (1, 2))
    assert applied.refused == (Refused(f"{irq}/77/smp_affinity_list", wanted, "Permission denied"),)
    assert "4 IRQ(s) moved to CPUs 0,3" in applied.note
    assert "IRQ 77 (nvme0q1): Permission denied" in applied.note
    assert machine.read("proc/irq/9/smp_affinity_list") == "0,3\n"
    assert len(machine.journal()) == 1
    assert away.restore(machine.target, applied) == []
    assert machine.snapshot() == before and machine.journal() == []
    assert away.restore(machine.target, applied) == [] and machine.snapshot() == before  # idempotent


def test_irq_away_refuses_where_it_has_nothing_to_do_or_nowhere_to_go(machine):
    away = tuning("irq-away", machine)
    assert away.check(machine.target, Cpus((0, 1), (2, 3))) == (
        "CPUs 0-3 are every online CPU: none is left to take the IRQs")
    assert away.check(machine.target, Cpus(())) == (
        "the cell's program and probe have no CPUs of their own: there is nothing to move IRQs off")
    machine.remove("proc/irq")
    assert away.check(machine.target, CELL) == (
        "no /proc/irq/*/smp_affinity_list here: this kernel cannot set IRQ affinity")
    with pytest.raises(RunFailed, match="^tuning irq-away: no /proc/irq") as failed:
        away.apply(machine.target, CELL)
    assert failed.value.status == "unavailable" and machine.journal() == []


def test_rt_unthrottled_lifts_and_puts_back_the_value_it_found(machine):
    before = machine.snapshot()
    lift = tuning("rt-unthrottled", machine)
    applied = lift.apply(machine.target, CELL)
    assert machine.read("proc/sys/kernel/sched_rt_runtime_us") == "-1\n"
    [step] = applied.steps
    assert step == Changed(f"{machine.root}/proc/sys/kernel/sched_rt_runtime_us", "950000\n", "-1\n")
    assert lift.restore(machine.target, applied) == [] and machine.snapshot() == before
    machine.write("proc/sys/kernel/sched_rt_runtime_us", "-1\n")
    already = lift.apply(machine.target, CELL)
    assert already.steps == () and "is -1 already" in already.note and machine.journal() == []
    machine.remove("proc/sys/kernel/sched_rt_runtime_us")
    assert lift.check(machine.target, CELL) == (
        "/proc/sys/kernel/sched_rt_runtime_us cannot be read (a kernel without RT throttling)")


def test_governor_performance_sets_each_policy_of_the_cells_cpus_and_puts_it_back(machine):
    before = machine.snapshot()
    governor = tuning("governor-performance", machine)
    applied = governor.apply(machine.target, CELL)
    cpufreq = f"{machine.root}/sys/devices/system/cpu/cpu{{}}/cpufreq/scaling_governor"
    assert [(s.path, s.before, s.after) for s in applied.changed] == [
        (cpufreq.format(cpu), "schedutil\n", "performance\n") for cpu in (1, 2)]
    assert machine.read("sys/devices/system/cpu/cpu0/cpufreq/scaling_governor") == "schedutil\n"
    assert governor.restore(machine.target, applied) == [] and machine.snapshot() == before
    machine.write("sys/devices/system/cpu/cpu1/cpufreq/scaling_available_governors", "powersave\n")
    assert governor.check(machine.target, CELL) == "CPU 1 has no performance governor (it offers: powersave)"
    machine.remove("sys/devices/system/cpu/cpu2/cpufreq")
    assert governor.check(machine.target, CELL) == (
        "CPU 2 has no cpufreq here (no frequency scaling driver: a VM, or a fixed clock): there is no "
        "governor to set")


def test_isolated_makes_the_programs_cpus_a_partition_the_program_joins_and_removes_it(machine, tmp_path):
    before = machine.snapshot()
    isolated = tuning("isolated", machine)
    applied = isolated.apply(machine.target, CELL)
    control = f"{machine.root}/sys/fs/cgroup/cgroup.subtree_control"
    assert applied.steps[:2] == (Changed(control, "cpu memory pids\n", "cpuset cpu memory pids\n", "-cpuset"),
                                 Made(machine.group))
    assert [(s.path, s.after) for s in applied.steps[2:]] == [
        (f"{machine.group}/cpuset.cpus", "1\n"), (f"{machine.group}/cpuset.cpus.partition", "isolated\n")]
    assert machine.read("sys/fs/cgroup/jitterlab-isolated/cpuset.cpus.partition") == "isolated\n"
    # the program joins the partition as it starts, then runs
    assert applied.launcher == ("sh", "-c", _JOIN, "jitterlab-isolated", f"{machine.group}/cgroup.procs")
    done = subprocess.run([*applied.launcher, "sh", "-c", "echo $$"], capture_output=True, text=True)
    assert done.returncode == 0
    assert machine.read("sys/fs/cgroup/jitterlab-isolated/cgroup.procs") == done.stdout
    assert isolated.restore(machine.target, applied) == []
    assert machine.snapshot() == before and machine.journal() == []


def test_isolated_undoes_what_it_did_when_the_kernel_will_not_make_the_partition(machine):
    before = machine.snapshot()
    invalid = "isolated invalid (Cpu list in cpuset.cpus not exclusive)\n"
    machine.effects[f"{machine.group}/cpuset.cpus.partition"] = lambda now, value: invalid
    with pytest.raises(RunFailed, match=re.escape(
            "tuning isolated: the kernel would not make CPUs 1 an isolated partition: "
            "isolated invalid (Cpu list in cpuset.cpus not exclusive)")) as failed:
        tuning("isolated", machine).apply(machine.target, CELL)
    assert failed.value.status == "unavailable"
    assert machine.snapshot() == before and machine.journal() == []


@pytest.mark.parametrize(("edit", "why"), [
    (lambda m: m.write("proc/self/mounts", "cgroup /sys/fs/cgroup/cpuset cgroup rw,cpuset 0 0\n"),
     "no cgroup v2 hierarchy is mounted here (cgroup v1 only: boot with systemd.unified_cgroup_hierarchy=1)"),
    (lambda m: m.write("sys/fs/cgroup/cgroup.controllers", "cpu io memory\n"),
     "cgroup v2 at {root}/sys/fs/cgroup has no cpuset controller (a cgroup v1 hierarchy holds it, as in "
     "a hybrid setup or a container, or the kernel lacks CONFIG_CPUSETS)"),
    (lambda m: m.write("proc/sys/kernel/osrelease", "5.10.0-28-amd64\n"),
     "Linux 5.10.0-28-amd64 has no isolated cpuset partitions (6.2 and later): boot with isolcpus= instead"),
    (lambda m: m.path("sys/fs/cgroup/jitterlab-isolated").mkdir(),
     "{root}/sys/fs/cgroup/jitterlab-isolated exists already (left by a jitterlab run that could not "
     "remove it?): rmdir it as root"),
])
def test_isolated_is_refused_with_its_reason(machine, edit, why):
    edit(machine)
    assert tuning("isolated", machine).check(machine.target, CELL) == why.format(root=machine.root)


def test_isolated_keeps_the_probe_off_the_partition(machine):
    assert tuning("isolated", machine).check(machine.target, Cpus((1,), (1,))) == (
        "the probe's CPU is one of the program's: it could not run beside an isolated program")


def test_cpu_dma_latency_is_held_by_a_recorded_process_and_released(machine):
    target = LocalTarget("local", str(machine.workdir))  # the holder is a real process
    hold = tuning("cpu-dma-latency", machine)
    applied = hold.apply(target, CELL)
    [held] = applied.steps
    assert (held.path, held.before, held.during) == (f"{machine.root}/dev/cpu_dma_latency", "2000000000", "0")
    assert machine.path("dev/cpu_dma_latency").read_bytes() == b"\0\0\0\0"
    pid = int(Path(held.pidfile).read_text())
    assert carries(pid, held.marker)
    assert os.readlink(f"/proc/{pid}/fd/3") == held.path  # the request stays while this is open
    assert hold.restore(target, applied) == []
    assert not os.path.exists(held.pidfile) and not carries(pid, held.marker) and machine.journal() == []
    assert hold.restore(target, applied) == []
    machine.remove("dev/cpu_dma_latency")
    assert hold.check(target, CELL) == "no /dev/cpu_dma_latency here (a kernel without PM QoS)"


def test_the_program_tunings_reach_the_program_and_change_nothing_on_the_machine(machine):
    before = machine.snapshot()
    slack = tuning("timer-slack", machine).apply(machine.target, CELL)
    assert slack.launcher[-2:] == ("1", f"{machine.root}/proc/self/timerslack_ns") and slack.flags == ()
    assert [(s.what, s.before, s.after) for s in slack.steps] == [("timerslack_ns", "50000", "1")]
    mlock = tuning("mlock", machine).apply(machine.target, CELL)
    assert mlock.flags == ("--mlock",) and mlock.launcher == ()
    assert machine.snapshot() == before and machine.journal() == []
    assert TUNINGS.get("timer-slack", "t").restore(machine.target, slack) == []


@pytest.mark.parametrize(("name", "program", "why"), [
    ("timer-slack", ProgramTraits(realtime=True, name="c-fifo"),
     "c-fifo runs at SCHED_FIFO, which has no timer slack"),
    ("timer-slack", ProgramTraits(realtime=False, mlock=MLOCK_NEVER, name="bash"), None),
    ("timer-slack", None, "the impl runs no Linux program of its own"),
    ("mlock", ProgramTraits(realtime=True, mlock=MLOCK_ITSELF, name="c-fifo"),
     "c-fifo locks its memory itself"),
    ("mlock", ProgramTraits(realtime=False, mlock=MLOCK_NEVER, name="node"),
     "node cannot lock its memory (mlockall cannot be called from it)"),
    ("mlock", ProgramTraits(realtime=False, mlock=MLOCK_ON_FLAG, name="c-file"), None),
    ("irq-away", None, None),
])
def test_a_tuning_says_which_programs_it_does_nothing_for(name, program, why):
    assert TUNINGS.get(name, "test").skips(program) == why


@pytest.mark.parametrize("name", MACHINE_TUNINGS)
def test_a_tuning_another_jitterlab_has_applied_here_is_refused(machine, name):
    other = f"{processes.host_tag()}~{os.getppid()}~{processes.owner_start_ticks(os.getppid())}"
    machine.write(f"run/jitterlab-tunings/{other}~{name}.json", "boot\n{}\n")
    assert tuning(name, machine).check(machine.target, CELL) == (
        f"another jitterlab (pid {os.getppid()}) has it applied on this machine now")


def test_what_a_tuning_did_is_a_record_that_reads_back_from_json(machine):
    applied = tuning("isolated", machine).apply(machine.target, CELL)
    try:
        again = applied_from_json(json.loads(json.dumps(applied.as_json())))
        assert again == applied and isinstance(again, Applied)
    finally:
        TUNINGS.get("isolated", "t").restore(machine.target, applied)
    with pytest.raises(ValueError, match="not a record of an applied tuning"):
        applied_from_json({"tuning": "irq-away"})


def _cpus(text: str) -> tuple[int, ...]:
    from jitterlab.model.units import parse_cpu_list

    return parse_cpu_list(text) or ()
