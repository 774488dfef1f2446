"""switch: the switch-latency program's output (real ones in tests/data/switch-latency), the
metrics computed from it, keys, argv, the sibling rule, the program itself and a real run."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

import jitterlab.programs
from jitterlab.measure.benchmarks import switch
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "switch-latency"


def output(name: str) -> str:
    return (DATA / name).read_text()


def test_real_outputs_parse():
    result = switch.parse_output(output("fifo-4-threads.out"))
    assert (result.cycles, len(result.samples_ns), result.not_preempted, result.dropped) == (500, 1500, 0, 0)
    assert result.header == {"threads": "4", "cpu": "1", "prio": "80", "policy": "fifo"}
    busy = switch.parse_output(output("fifo-2-threads-busy-cpu1.out"))
    assert len(busy.samples_ns) == busy.cycles == 100 and busy.busy_loops > 0
    other = switch.parse_output(output("other-3-threads-no-rt.out"))
    assert other.header["policy"] == "other" and (other.cycles, other.not_preempted) == (100, 123)


def test_metrics_are_the_latency_metrics_of_the_samples():
    result = switch.parse_output(output("fifo-4-threads.out"))
    lines = [int(x) for x in output("fifo-4-threads.out").splitlines() if not x.startswith("#")]
    metrics = {m.name: m for m in switch.result_metrics(result)}
    x = np.array(lines, dtype=np.float64)
    assert metrics["latency_max_ns"].value == x.max() and metrics["latency_min_ns"].value == x.min()
    assert metrics["latency_p50_ns"].value == np.quantile(x, 0.5, method="inverted_cdf")
    assert metrics["latency_p99_ns"].value == np.quantile(x, 0.99, method="inverted_cdf")
    assert metrics["latency_samples"].value == 1500
    assert (metrics["not_preempted"].value, metrics["not_preempted"].direction) == (0, "lower")
    assert (metrics["cycles"].unit, metrics["cycles"].direction) == ("count", "none")
    assert switch.result_warnings(result) == []


def test_synthetic_samples_give_exact_statistics():
    text = "# jitterlab-switch v1 threads=2 cpu=0 prio=80 policy=fifo\n" + "".join(
        f"{v}\n" for v in (1000, 2000, 3000, 4000)) + \
        "# end cycles=4 samples=4 not_preempted=1 dropped=2 busy_loops=0\n"
    result = switch.parse_output(text)
    metrics = {m.name: m.value for m in switch.result_metrics(result)}
    assert [metrics[f"latency_{k}_ns"] for k in ("min", "mean", "max")] == [1000, 2500, 4000]
    assert metrics["latency_p50_ns"] == 2000 and metrics["not_preempted"] == 1
    messages = [w.message for w in switch.result_warnings(result)]
    assert messages == [
        "1 wake-up(s) of a higher-priority SCHED_FIFO thread did not preempt the waker on its CPU",
        "2 samples did not fit the program's buffer and are missing"]


def test_a_sched_other_run_says_what_it_measured():
    [warning] = switch.result_warnings(switch.parse_output(output("other-3-threads-no-rt.out")))
    assert warning.message.startswith("switch-latency ran as SCHED_OTHER")


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda t: t.split("\n", 1)[1], "first line is"),
        (lambda t: t[: t.rindex("# end")], "the '# end' line is missing"),
        (lambda t: t[:200], "the '# end' line is missing"),
        (lambda t: t.replace("\n4539\n", "\n45x9\n", 1), "a sample line is not a whole number"),
        (lambda t: t.replace("samples=1500", "samples=1501"), "1500 sample lines for samples=1501"),
        (lambda t: "", "first line is ''"),
    ],
)
def test_cut_short_and_garbled_outputs_fail_with_the_output(mangle, reason):
    text = mangle(output("fifo-4-threads.out"))
    with pytest.raises(RunFailed) as info:
        switch.parse_output(text)
    assert reason in info.value.reason
    assert info.value.attachments == {"switch.out": text.encode()}


def campaign_of(matrix: str = ""):
    return campaign_from_toml("switch", matrix, duration="1s")


def test_keys():
    [cell] = campaign_of().cells
    assert dict(cell.params) == {"threads": 4, "cpu": "auto", "priority": 80, "interval": 1_000_000,
                                 "sibling_load": False}
    assert switch.Switch().label(cell) == "switch x4 fifo:80 cpu auto every 1ms idle"
    assert switch.Switch().programs(cell) == {"switch-latency": ""} and switch.Switch().needs_rt(cell)
    with pytest.raises(UserError, match=r"^c.toml: matrix.priority: 8 threads from priority 95 reach 102"):
        campaign_of("threads = 8\npriority = 95")
    with pytest.raises(UserError, match=r"^c.toml: matrix.interval: 1us is out of range"):
        campaign_of('interval = "1us"')
    assert len(campaign_of("threads = [2, 8]\nsibling_load = [false, true]").cells) == 4


UNPLACED = Placement(None, None)


def run_fake(tmp_path: Path, matrix: str, *, placement=UNPLACED, rt: bool = True,
             siblings: str = "1,3\n", out: str | None = None):
    [cell] = campaign_of(matrix).cells
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(parents=True), local.mkdir(parents=True)
    target = FakeTarget()
    target.respond(["cat", "/sys/devices/system/cpu/online"], "0-3\n")
    target.respond(["cat", "/sys/devices/system/cpu/cpu3/topology/thread_siblings_list"], siblings)
    text = out if out is not None else output("fifo-2-threads-busy-cpu1.out")
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=1, files={f"{scratch}/switch.out": text}))
    ctx = RunContext(target, campaign_of(matrix).settings, cell, 0, str(scratch), local, "/b", placement, rt)
    return switch.Switch().execute(ctx), target


def launched(target: FakeTarget) -> list[str]:
    [call] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    return list(call[call.index("/b/c/switch-latency"):])


def test_argv_cpu_and_siblings(tmp_path):
    measurement, target = run_fake(tmp_path / "a", "threads = 2\nsibling_load = true")
    assert launched(target) == [
        "/b/c/switch-latency", "--threads", "2", "--cpu", "3", "--prio", "80", "--interval-ns", "1000000",
        "--duration-ns", "1000000000", "--warmup-ns", "50000000", "--out", f"{tmp_path}/a/s/switch.out",
        "--busy-cpus", "1"]  # fmt: skip
    assert measurement.series["switch"].unit == "ns" and len(measurement.series["switch"].values) == 100
    assert {m.name: m.value for m in measurement.metrics}["cpu"] == 3
    _, target = run_fake(tmp_path / "b", "threads = 2", placement=Placement((2, 0), None), rt=False)
    argv = launched(target)
    assert argv[argv.index("--cpu") + 1] == "2" and argv[-1] == "--allow-no-rt" and "--busy-cpus" not in argv


def test_a_cpu_without_siblings_is_unavailable(tmp_path):
    with pytest.raises(RunFailed) as info:
        run_fake(tmp_path, "cpu = 3\nsibling_load = true", siblings="3\n")
    assert info.value.status == "unavailable"
    assert info.value.reason.startswith("CPU 3 has no hyperthread sibling to load")


def test_a_sibling_load_that_never_ran_fails(tmp_path):
    with pytest.raises(RunFailed, match="the sibling load never ran"):
        run_fake(tmp_path, "threads = 2\nsibling_load = true", out=output("fifo-4-threads.out"))


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    src = Path(jitterlab.programs.__file__).parent / "c"
    dst = tmp_path_factory.mktemp("switch") / "c"
    shutil.copytree(src, dst)
    done = subprocess.run(["make", "-C", str(dst), "switch-latency"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return dst / "switch-latency"


def test_the_program_refuses_bad_flags(program, tmp_path):
    base = [str(program), "--cpu", "0", "--interval-ns", "1000000", "--duration-ns", "1000000",
            "--warmup-ns", "0", "--out", str(tmp_path / "o")]
    for extra, message in ((["--threads", "1", "--prio", "80"], "bad flag or value: --threads 1"),
                           (["--threads", "30", "--prio", "80"], "--prio + --threads - 1 must stay <= 99"),
                           (["--threads", "2"], "every flag but --busy-cpus")):
        done = subprocess.run(base + extra, capture_output=True, text=True)
        assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "o").exists()


def test_the_program_chains_its_threads(program, tmp_path):
    out = tmp_path / "o"
    argv = [str(program), "--threads", "5", "--cpu", "0", "--prio", "70", "--interval-ns", "2000000",
            "--duration-ns", "100000000", "--warmup-ns", "10000000", "--out", str(out), "--busy-cpus", "0",
            "--allow-no-rt"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    result = switch.parse_output(out.read_text())
    assert result.cycles == 50 and len(result.samples_ns) == 4 * 50  # threads-1 samples per chain
    assert (result.samples_ns > 0).all() and result.busy_loops > 0


@pytest.mark.slow
def test_real_run(tmp_path):
    rc, store = run_local_campaign(tmp_path, '[matrix]\nbenchmark = "switch"\nthreads = 3\n',
                                   name="sw", duration="500ms", on_missing_rt="fallback")
    assert rc == 0
    [run] = store.runs()
    assert run.status == "ok", run.error
    assert units_and_directions(run, "latency_max_ns", "latency_p99_ns", "not_preempted", "cycles") == {
        "latency_max_ns": ("ns", "lower"), "latency_p99_ns": ("ns", "lower"),
        "not_preempted": ("count", "lower"), "cycles": ("count", "none")}
    assert run.metric("latency_samples", "") == 2 * run.metric("cycles", "") > 0
