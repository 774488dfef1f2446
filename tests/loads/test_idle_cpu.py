"""The idle and cpu loads: registration, options, metrics, and that nothing is left running."""

from __future__ import annotations

import os
import shutil
import signal
import time
import types

import pytest

import jitterlab.measure.loads  # noqa: F401  (registers the built-in loads)
from jitterlab.measure.loads import cpu, idle
from jitterlab.measure.loads.base import GROUP_SCRIPT, LOADS, LoadContext, ProcGroup, Sustained, parse_group
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.local import LocalTarget
from tests.support import eventually, group_commands

needs_stress_ng = pytest.mark.skipif(shutil.which("stress-ng") is None, reason="no stress-ng")


def proc_stat_text(uptime_s: float, ctxt: int, cpu_ticks: dict[str, list[int]]) -> str:
    cpus = "".join(f"{k} {' '.join(map(str, v))}\n" for k, v in cpu_ticks.items())
    return f"{uptime_s} 1.0\n0.75 0.5 0.25 1/100 42\n{cpus}intr 1 2\nctxt {ctxt}\nbtime 1\n"


def test_registry_knows_both_loads_and_their_tools():
    assert {"idle", "cpu"} <= set(LOADS.names())
    assert LOADS.get("cpu", "test").tools == {"stress-ng": "stress-ng"}
    assert LOADS.get("idle", "test").tools == {}
    assert LOADS.get("cpu", "test").factory is cpu.CpuLoad
    assert LOADS.get("cpu", "test").params is cpu.PARAMS
    assert LOADS.get("cpu", "test").validate({}, "w") == cpu.validate_options({}, "w")


# --- options -----------------------------------------------------------------------------


def test_cpu_options_get_defaults():
    assert cpu.validate_options({}, "c.toml:loads.cpu") == {
        "workers": "auto",
        "cpu_load": 100,
        "method": "all",
    }
    opts = cpu.validate_options({"workers": 3, "cpu_load": 40, "method": "matrixprod"}, "w")
    assert opts == {"workers": 3, "cpu_load": 40, "method": "matrixprod"}


@pytest.mark.parametrize(
    ("options", "expected"),
    [
        ({"wrokers": 2}, "c.toml:loads.cpu.wrokers: unknown option of load 'cpu'; did you mean 'workers'?"),
        ({"workers": 0}, "c.toml:loads.cpu.workers: 0 is out of range"),
        ({"workers": -1}, "c.toml:loads.cpu.workers: "),
        ({"workers": True}, "c.toml:loads.cpu.workers: expected a whole number"),
        ({"workers": 1.5}, "c.toml:loads.cpu.workers: expected a whole number"),
        ({"cpu_load": 0}, "c.toml:loads.cpu.cpu_load: 0 is out of range; give a value between 1 and 100"),
        ({"cpu_load": 101}, "c.toml:loads.cpu.cpu_load: 101 is out of range"),
        ({"cpu_load": "50"}, "c.toml:loads.cpu.cpu_load: expected a whole number"),
        ({"method": "--all"}, "c.toml:loads.cpu.method: expected a stress-ng --cpu-method name"),
    ],
)
def test_cpu_option_errors_name_where_and_key(options, expected):
    with pytest.raises(UserError) as err:
        cpu.validate_options(options, "c.toml:loads.cpu")
    assert str(err.value).startswith(expected)


def test_idle_takes_no_options():
    assert idle.validate_options({}, "w") == {}
    with pytest.raises(UserError, match=r"^c.toml:loads.idle.workers: unknown option of load 'idle'; "
                       "load 'idle' takes no options"):
        idle.validate_options({"workers": 1}, "c.toml:loads.idle")


# --- idle ----------------------------------------------------------------------------------


def test_idle_measures_the_local_machine(tmp_path):
    load = idle.IdleLoad()
    load.start(LoadContext(LocalTarget(workdir=str(tmp_path)), str(tmp_path)))
    load.check()
    time.sleep(0.05)  # /proc/uptime has 10 ms resolution
    metrics = {m.name: m for m in load.stop()}
    assert set(metrics) == {"load_loadavg_1m", "load_ctxt_switches_per_s", "load_cpu_busy_fraction"}
    assert 0.0 <= metrics["load_cpu_busy_fraction"].value <= 1.0
    assert metrics["load_ctxt_switches_per_s"].value >= 0


def test_idle_metrics_are_computed_from_proc_deltas():
    samples = iter(
        [
            # user nice system idle iowait irq softirq steal guest guest_nice
            proc_stat_text(
                100.0,
                5000,
                {
                    "cpu": [10, 0, 10, 80, 0, 0, 0, 0, 0, 0],
                    "cpu0": [5, 0, 5, 40, 0, 0, 0, 0, 0, 0],
                    "cpu1": [5, 0, 5, 40, 0, 0, 0, 0, 0, 0],
                },
            ),
            proc_stat_text(
                102.0,
                6000,
                {
                    "cpu": [60, 0, 20, 100, 10, 5, 5, 0, 0, 0],
                    "cpu0": [50, 0, 10, 40, 0, 0, 0, 0, 0, 0],
                    "cpu1": [10, 0, 10, 60, 10, 5, 5, 0, 0, 0],
                },
            ),
        ]
    )
    target = FakeTarget()
    target.respond(
        ["cat", "/proc/uptime"], response=lambda argv: Completed(tuple(argv), 0, next(samples), "")
    )
    load = idle.IdleLoad()
    load.start(LoadContext(target, target.workdir, cpus=(0,)))
    metrics = {m.name: m.value for m in load.stop()}
    assert metrics == {
        "load_loadavg_1m": 0.75,
        "load_ctxt_switches_per_s": 500.0,
        "load_cpu_busy_fraction": 50 / 50,  # cpu0: 50 busy ticks of 50
    }


def test_idle_stays_up_between_runs_and_each_reading_is_its_own_runs():
    """Kept between runs (Sustained): a run's reading spans mark() to snapshot(); what happened
    between two runs belongs to neither. Exact answers from four readings of /proc."""
    uptimes_ctxt = [(100.0, 1000), (101.0, 1100), (105.0, 9999), (107.0, 10399)]
    samples = iter(proc_stat_text(u, c, {"cpu": [0, 0, 0, int(u), 0, 0, 0, 0]}) for u, c in uptimes_ctxt)
    target = FakeTarget()
    target.respond(["cat", "/proc/uptime"],
                   response=lambda argv: Completed(tuple(argv), 0, next(samples), ""))
    load = idle.IdleLoad()
    assert isinstance(load, Sustained)
    load.start(LoadContext(target, target.workdir))
    first = {m.name: m.value for m in load.snapshot()}
    load.mark()  # the next run begins after a gap of 4 s and 8899 switches, none of them its own
    second = {m.name: m.value for m in load.stop()}
    assert first["load_ctxt_switches_per_s"] == 100.0 and second["load_ctxt_switches_per_s"] == 200.0
    reads = [c for c in target.calls if c[0] == "cat"]
    assert len(reads) == 4 and len(target.calls) == 4  # /proc read at each end of each run, nothing else


def test_idle_busy_fraction_leaves_out_the_probes_own_cpu():
    # 2 CPUs: cpu1 is the busy-polling probe's (100 % busy by design), cpu0 is idle but for 2 ticks
    before = idle.SystemSample(100.0, 0.1, 1000, {"cpu": (0, 0, 0, 0, 0, 0, 0, 0),
                                                  "cpu0": (0, 0, 0, 0, 0, 0, 0, 0),
                                                  "cpu1": (0, 0, 0, 0, 0, 0, 0, 0)})
    after = idle.SystemSample(101.0, 0.1, 1100, {"cpu": (101, 0, 1, 98, 0, 0, 0, 0),
                                                 "cpu0": (1, 0, 1, 98, 0, 0, 0, 0),
                                                 "cpu1": (100, 0, 0, 0, 0, 0, 0, 0)})

    def busy(*args) -> float:
        return {m.name: m.value for m in idle.system_metrics(before, after, *args)}["load_cpu_busy_fraction"]

    assert busy() == 102 / 200  # the probe counted: an idle machine reads half busy
    assert busy(None, 1) == 2 / 100  # all CPUs but the probe's
    assert busy((0, 1), 1) == 2 / 100  # the load's CPUs but the probe's
    only_probe = idle.system_metrics(before, after, (1,), 1)
    assert "load_cpu_busy_fraction" not in {m.name for m in only_probe}  # nothing left to tell
    # the load is told the probe's CPU by its context (the run's placement)
    samples = iter([proc_stat_text(s.uptime_s, s.ctxt, s.cpu_ticks) for s in (before, after)])
    target = FakeTarget()
    target.respond(["cat", "/proc/uptime"],
                   response=lambda argv: Completed(tuple(argv), 0, next(samples), ""))
    load = idle.IdleLoad()
    load.start(LoadContext(target, target.workdir, probe_cpu=1))
    assert {m.name: m.value for m in load.stop()}["load_cpu_busy_fraction"] == 2 / 100


def test_idle_fails_clearly_when_proc_is_unreadable():
    target = FakeTarget()  # no canned answer: rc 127
    with pytest.raises(RunFailed, match="could not read /proc"):
        idle.IdleLoad().start(LoadContext(target, target.workdir))


# --- cpu on the real machine ------------------------------------------------------------------


def _fields(pid: int) -> list[str]:
    """The fields of /proc/PID/stat after the command's name ([] once it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()
    except OSError:
        return []


@needs_stress_ng
def test_cpu_load_runs_reports_and_leaves_nothing(tmp_path):
    target = LocalTarget(workdir=str(tmp_path))
    load = cpu.CpuLoad()
    load.start(LoadContext(target, str(tmp_path), cpus=(0,), options={"cpu_load": 50}))
    (proc,) = target._live
    assert proc.argv[-2:] == ("--taskset", "0") and "taskset" not in proc.argv  # it places itself
    assert "stress-ng-cpu" in group_commands(proc.pid) or "stress-ng" in group_commands(proc.pid)
    # every process of its group on CPU 0 alone, as the kernel says
    members = [pid for pid in map(int, filter(str.isdigit, os.listdir("/proc")))
               if _fields(pid) and int(_fields(pid)[2]) == proc.pid]
    assert len(members) == 2 and all(os.sched_getaffinity(pid) == {0} for pid in members), members
    load.check()
    time.sleep(0.7)
    load.check()
    metrics = {m.name: m for m in load.stop()}
    assert metrics["load_bogo_ops_per_s"].value > 0
    assert metrics["load_bogo_ops_per_s"].unit == "bogo-ops/s"
    assert metrics["load_workers"].value == 1
    assert "load_cpu_busy_fraction" in metrics
    assert group_commands(proc.pid) == []
    assert proc.poll() is not None and target.live_pids() == []
    assert load.stop() == list(metrics.values())  # a second stop changes nothing


@needs_stress_ng
def test_cpu_load_killed_from_outside_fails_check_and_stop(tmp_path):
    target = LocalTarget(workdir=str(tmp_path))
    load = cpu.CpuLoad()
    load.start(LoadContext(target, str(tmp_path), options={"workers": 1, "cpu_load": 20}))
    (proc,) = target._live
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(10)
    with pytest.raises(RunFailed, match=r"stress-ng is no longer running \(killed by SIGKILL\)"):
        load.check()
    with pytest.raises(RunFailed, match="could not read stress-ng's achieved bogo-ops"):
        load.stop()
    assert group_commands(proc.pid) == []


def test_cpu_load_that_cannot_start_says_why(tmp_path):
    target = FakeTarget(workdir=str(tmp_path), fallback_local=True)
    target.respond(["cat", "/proc/uptime"], proc_stat_text(1.0, 1, {"cpu": [1] * 10}))
    target.behave(["sh"], FakeBehaviour(rc=127, duration_s=0.0, log="sh: stress-ng: not found\n"))
    with pytest.raises(RunFailed, match=r"exit status 127.*stress-ng: not found"):
        cpu.CpuLoad().start(LoadContext(target, str(tmp_path), options={"workers": 1}))


# --- cpu on a fake target: exact argv, signals and parsing --------------------------------------


def fake_group(state: str = "R", ticks: int = 0, workers: int = 2):
    lines = ["4242", f"4242 (stress-ng) S 1 4242 4242 0 -1 0 0 0 0 0 {ticks} 0 0 0"]
    lines += [
        f"{4243 + i} (stress-ng-cpu) {state} 4242 4242 4242 0 -1 0 0 0 0 0 {ticks} 0 0 0"
        for i in range(workers)
    ]
    lines.append("77 (bash) S 1 77 77 0 -1 0 0 0 0 0 999 0 0 0")  # not ours
    return "\n".join(lines) + "\n"


@pytest.fixture
def fake(tmp_path):
    target = FakeTarget(workdir=str(tmp_path), fallback_local=True)
    target.respond(["cat", "/proc/uptime"], proc_stat_text(1.0, 1, {"cpu": [1] * 10}))
    target.respond(["sh", "-c", cpu._GROUP], fake_group())
    yaml = (
        "metrics:\n    - stressor: cpu\n      bogo-ops: 2469\n"
        "      bogo-ops-per-second-usr-sys-time: 617.25\n"
        "      bogo-ops-per-second-real-time: 1234.5\n"
    )
    target.behave(["sh"], FakeBehaviour(files={f"{tmp_path}/stress-ng.yaml": yaml}))
    return target


def test_cpu_load_argv_signal_and_metrics_on_a_fake_target(fake, tmp_path):
    load = cpu.CpuLoad()
    load.start(LoadContext(fake, str(tmp_path), cpus=(1, 2), options={"cpu_load": 30}))
    (proc,) = fake.processes
    argv = proc.argv
    assert argv[:3] == ("sh", "-c", cpu._LAUNCH)
    pidfile = argv[3]  # the leftover-sweep record: <workdir>/live/<marker>.pid
    assert pidfile.startswith(f"{fake.workdir}/live/") and pidfile.endswith(".pid")
    marker = pidfile.rsplit("/", 1)[1].removesuffix(".pid")
    assert argv[4:] == (
        "env",
        f"JITTERLAB_LIVE={marker}",
        "stress-ng",
        "--cpu",
        "2",
        "--cpu-method",
        "all",
        "--cpu-load",
        "30",
        "--timeout",
        "3600s",
        "--metrics-brief",
        "--yaml",
        f"{tmp_path}/stress-ng.yaml",
        "--taskset",
        "1,2",
    )
    load.check()
    metrics = {m.name: (m.value, m.unit) for m in load.stop()}
    assert proc.signals == [signal.SIGINT]
    assert metrics["load_bogo_ops_per_s"] == (1234.5, "bogo-ops/s")
    assert metrics["load_workers"] == (2.0, "workers")


def test_cpu_workers_default_to_the_targets_cpus(fake, tmp_path):
    fake.respond(["getconf", "_NPROCESSORS_ONLN"], "2\n")
    load = cpu.CpuLoad()
    load.start(LoadContext(fake, str(tmp_path)))
    assert "taskset" not in fake.processes[0].argv
    assert load.workers == 2


def test_cpu_check_catches_stopped_and_missing_workers(fake, tmp_path):
    load = cpu.CpuLoad()
    load.start(LoadContext(fake, str(tmp_path), options={"workers": 2}))
    fake.respond(["sh", "-c", cpu._GROUP], fake_group(state="T"))
    with pytest.raises(RunFailed, match="2 stress-ng workers are stopped"):
        load.check()
    fake.respond(["sh", "-c", cpu._GROUP], fake_group(workers=1))
    with pytest.raises(RunFailed, match="only 1 of 2 stress-ng workers are running"):
        load.check()


def test_cpu_check_catches_workers_that_burn_no_cpu(fake, tmp_path, monkeypatch):
    clock = [1000.0]
    fake_time = types.SimpleNamespace(monotonic=lambda: clock[0], sleep=lambda s: None)
    monkeypatch.setattr(cpu, "time", fake_time)
    load = cpu.CpuLoad()
    load.start(LoadContext(fake, str(tmp_path), options={"workers": 2}))
    clock[0] += 5.0
    fake.respond(["sh", "-c", cpu._GROUP], fake_group(ticks=400))
    load.check()  # 2 workers x 5 s: CPU time advanced
    clock[0] += 5.0
    with pytest.raises(RunFailed, match=r"used no CPU time in the last 5\.0s"):
        load.check()


def test_bogo_ops_come_from_yaml_else_from_the_log():
    yaml = "metrics:\n - stressor: cpu\n   bogo-ops-per-second-real-time: 10.5\n"
    assert cpu.parse_bogo_ops_per_s(yaml) == 10.5
    log = (
        "stress-ng: metrc: [4318] stressor       bogo ops real time  usr time  sys time   "
        "bogo ops/s     bogo ops/s\n"
        "stress-ng: metrc: [4318] cpu                3548      1.20      2.38      0.00      "
        "2964.59        1486.24\n"
    )
    assert cpu.parse_bogo_ops_per_s("", log) == 2964.59
    assert cpu.parse_bogo_ops_per_s("", "stress-ng: info: nothing") is None


def test_the_runs_placement_tells_the_loads_the_probes_cpu(tmp_path, monkeypatch):
    """The probe's CPU reaches the load from the run's placement (execution.loads), so the busy
    fraction a run stores leaves the probe's own polling out."""
    from jitterlab.campaign.file import load_campaign
    from jitterlab.execution.loads import TargetLoads
    from jitterlab.measure.context import Placement
    from jitterlab.model.fakes import cell
    from tests.support import local_campaign

    seen: list[LoadContext] = []
    monkeypatch.setattr(idle.IdleLoad, "start", lambda self, ctx: seen.append(ctx))
    monkeypatch.setattr(idle.IdleLoad, "stop", lambda self: [])
    matrix = '[matrix]\nimpl = "c-mmap"\nperiod = "10ms"\n'
    campaign = load_campaign(local_campaign(tmp_path, matrix, name="p"))
    target = FakeTarget()
    loads = TargetLoads(campaign, target, Placement(program_cpus=(0,), probe_cpu=1), lambda *a: None)
    try:
        loads.start(cell("squarewave", target="local", load="idle"), runs=1)
    finally:
        loads.stop()
    assert [(ctx.cpus, ctx.probe_cpu) for ctx in seen] == [(None, 1)]


def test_the_group_script_reads_a_recorded_group_and_no_leader_without_its_record(tmp_path):
    """One command reads the record and /proc: the leader and its children counted, a missing record
    read as a leader gone (never as one of /proc's lines)."""
    target = LocalTarget(workdir=str(tmp_path))
    proc = target.spawn(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        record = tmp_path / "leader.pid"
        record.write_text(f"{proc.pid}\n")
        read = lambda path: parse_group(target.run(["sh", "-c", GROUP_SCRIPT, str(path)]).stdout)  # noqa: E731
        eventually(lambda: (read(record) or ProcGroup(0, 0, 0)).workers < 2, timeout_s=30)
        group = read(record)
        assert group is not None and group.workers == 2 and group.stopped == 0
        assert read(tmp_path / "missing.pid") is None
    finally:
        proc.stop()


@needs_stress_ng
def test_a_stale_figures_file_in_the_loads_directory_is_never_read_as_its_own(tmp_path):
    scratch = tmp_path / "load-cpu"
    scratch.mkdir()
    (scratch / "stress-ng.yaml").write_text("    bogo-ops-per-second-real-time: 1e15\n")
    target = LocalTarget(workdir=str(tmp_path / "w"))
    load = cpu.CpuLoad()
    try:
        load.start(LoadContext(target, str(scratch), options={"workers": 1}, max_duration_s=60))
        time.sleep(0.2)
        figures = {m.name: m.value for m in load.stop()}
    finally:
        load.stop()
        target.close()
    assert 0 < figures["load_bogo_ops_per_s"] < 1e15
