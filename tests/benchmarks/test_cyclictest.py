"""cyclictest: its --json output (real ones in tests/data/cyclictest), breaktrace, and real runs."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from jitterlab.measure.benchmarks import cyclictest as ct
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.store.catalog import Store
from jitterlab.store.raw import read_raw
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH
from jitterlab.tracing import changes, global_buffer
from jitterlab.tracing.tracefs import DEBUGFS, TRACEFS
from tests.support import campaign_from_toml, processes_mentioning, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "cyclictest"


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    """Restore records of the tracing changes go to the test's directory, not this machine's /run."""
    monkeypatch.setattr(changes, "RECORD_DIR", str(tmp_path / "run" / "tracing"))


def data(name: str) -> bytes:
    return (DATA / name).read_bytes()


def by_key(metrics) -> dict[tuple[str, str], tuple[float, str, str]]:
    return {(m.subject, m.name): (m.value, m.unit, m.direction) for m in metrics}


# --- parsing real outputs ---------------------------------------------------------------------


def test_two_threads_with_overflow():
    threads = ct.parse_json(data("two-threads.json"), 100)
    assert [(t.cycles, t.min_us, t.max_us, t.avg_us, t.cpu, t.overflow) for t in threads] == [
        (1000, 5, 190, 11.59, 0, 1),
        (1000, 5, 449, 19.88, 1, 3),
    ]
    assert threads[0].counts[99] == 1 and threads[0].counts[5] == 69 and len(threads[0].counts) == 100
    metrics, series = ct.metrics_of(threads)
    got = by_key(metrics)
    for i, (lo, mean, hi, over) in enumerate([(5000, 11590, 190000, 1), (5000, 19880, 449000, 3)]):
        probe = f"thread{i}"
        assert got[(probe, "latency_min_ns")] == (lo, "ns", "lower")
        assert got[(probe, "latency_mean_ns")] == (mean, "ns", "lower")
        assert got[(probe, "latency_max_ns")] == (hi, "ns", "lower")
        assert got[(probe, "latency_samples")] == (1000, "count", "none")
        assert got[(probe, "latency_overflow")] == (over, "count", "lower")
        assert series[f"{probe}.histogram_1us"].unit == "count per 1us bucket"
        assert series[f"{probe}.histogram_1us"].values.tolist() == threads[i].counts.tolist()
    # all threads together, from the summed histogram; the 4 overflows count at the max
    assert {name: got[("", name)][0] for probe, name in got if probe == ""} == {
        "latency_min_ns": 5000,
        "latency_mean_ns": 15735,
        "latency_max_ns": 449000,
        "latency_p50_ns": 13000,
        "latency_p99_ns": 41000,
        "latency_p999_ns": 449000,
        "latency_p9999_ns": 449000,
        "latency_std_ns": pytest.approx(20776.176356586886),
        "latency_samples": 2000,
        "latency_overflow": 4,
    }
    assert all(m.unit and m.direction for m in metrics)
    [warning] = ct._warnings(threads, 100)
    assert warning.message.startswith("4 wake-up(s) were later than the histogram's 100 µs")


def test_a_thread_that_never_woke_is_nan_in_the_json():
    # a real -b run that stopped before thread 1's first wake-up: "avg": -nan, "min": 1000000
    assert b'"avg": -nan' in data("never-woke.json")
    threads = ct.parse_json(data("never-woke.json"), 1000)
    assert [(t.cycles, t.avg_us) for t in threads] == [(1, 15.0), (0, None)]
    got = by_key(ct.metrics_of(threads)[0])
    assert ("thread1", "latency_max_ns") not in got
    assert got[("thread1", "latency_samples")] == (0, "count", "none")
    assert got[("", "latency_max_ns")][0] == 15000 and got[("", "latency_samples")][0] == 1
    assert "thread(s) 1 never woke up" in ct._warnings(threads, 1000)[0].message


def test_break_lines():
    assert ct.parse_break(data("break.log").decode()) == ct.Break(thread=0, value_us=36)
    assert ct.parse_break(data("never-woke.log").decode()) == ct.Break(thread=0, value_us=15)
    assert ct.parse_break(data("two-threads.log").decode()) is None
    two = "# Thread Ids: 100 101\n# Break thread: 101\n# Break value: 80\n"
    assert ct.parse_break(two) == ct.Break(thread=1, value_us=80)


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda b: b[: len(b) // 2], "cyclictest --json output is not JSON"),
        (lambda b: b"", "cyclictest --json output is not JSON"),
        (lambda b: b.replace(b'"thread"', b'"threads"'), 'has no "thread" results'),
        (lambda b: b.replace(b'"num_threads": 2', b'"num_threads": 3'), "do not match num_threads"),
        (lambda b: b.replace(b'"99": 1', b'"100": 1'), "histogram is not {bucket (0..99): count}"),
        (lambda b: b.replace(b'"cycles": 1000', b'"cycles": 10', 1), "histogram holds 999 samples, over 10"),
        (lambda b: b.replace(b'"max": 190', b'"max": "x"'), "wants cycles, min, max, avg and cpu"),
        (lambda b: b.replace(b'"resolution_in_ns": 0', b'"resolution_in_ns": 1'), "is in ns (-N)"),
    ],
)
def test_garbled_json_fails_clearly(mangle, reason):
    with pytest.raises(RunFailed) as err:
        ct.parse_json(mangle(data("two-threads.json")), 100)
    assert reason in err.value.reason


# --- keys --------------------------------------------------------------------------------------


def campaign_of(matrix: str, duration: str = "2s"):
    return campaign_from_toml("cyclictest", matrix, duration=duration)


def test_defaults_and_values():
    [cell] = campaign_of("").cells
    assert dict(cell.params) == {"interval": 1_000_000, "priority": 95, "threads": 1, "policy": "fifo",
                                 "affinity": "", "mlock": True, "histogram": 1000, "breaktrace": 0}
    assert ct.Cyclictest().label(cell) == "cyclictest 1ms fifo:95 x1 idle"
    assert ct.Cyclictest().needs_rt(cell)
    [cell] = campaign_of('policy = "other"\nbreaktrace = "150us"\naffinity = "0-1, 3"').cells
    assert (cell.param("breaktrace"), cell.param("affinity")) == (150_000, "0-1,3")
    assert ct.Cyclictest().label(cell) == "cyclictest 1ms other x1 break>150us idle"
    assert not ct.Cyclictest().needs_rt(cell)


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ('interval = "1500ns"', "c.toml: matrix.interval: cyclictest takes whole microseconds"),
        ("priority = 100", "c.toml: matrix.priority: 100 is out of range"),
        ('policy = "deadline"', "c.toml: matrix.policy: unknown value 'deadline'"),
        ('affinity = "cpu1"', 'c.toml: matrix.affinity: expected a CPU list like "1"'),
        ('breaktrace = "1500ns"', "c.toml: matrix.breaktrace: cyclictest takes the threshold in whole "),
    ],
)
def test_bad_keys_are_user_errors(matrix, message):
    with pytest.raises(UserError) as err:
        campaign_of(matrix)
    assert str(err.value).startswith(message)


# --- execute against a fake target ---------------------------------------------------------------


def context(tmp_path: Path, matrix: str, target: FakeTarget, rt: bool = True) -> RunContext:
    campaign = campaign_of(matrix, "1s")
    [cell] = campaign.cells
    scratch, local = tmp_path / "scratch", tmp_path / "local"
    scratch.mkdir(), local.mkdir()
    return RunContext(
        target, campaign.settings, cell, 0, str(scratch), local, "/b", Placement((1,), None), rt)


def fake_cyclictest(target: FakeTarget, ctx: RunContext, json_name: str, log_name: str) -> None:
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(
        duration_s=1.0, log=data(log_name).decode(),
        files={f"{ctx.scratch}/cyclictest.json": data(json_name).decode()}))


def spawned(target: FakeTarget) -> list[str]:
    [argv] = [list(call) for call in target.calls if call[:3] == ("sh", "-c", LAUNCH)]
    return argv[argv.index("cyclictest"):]


def test_argv_and_metrics(tmp_path):
    target = FakeTarget()
    ctx = context(tmp_path, "threads = 2\nhistogram = 100", target)
    fake_cyclictest(target, ctx, "two-threads.json", "two-threads.log")
    measurement = ct.Cyclictest().execute(ctx)
    assert spawned(target) == [
        "cyclictest", "--quiet", "--interval=1000", "--loops=1000", "--threads=2", "--distance=0",
        "--histogram=100",
        f"--histfile={ctx.scratch}/histogram.txt", f"--json={ctx.scratch}/cyclictest.json",
        "--policy=fifo", "--priority=95", "--mlockall", "--affinity=1"]  # fmt: skip
    assert by_key(measurement.metrics)[("", "latency_p99_ns")] == (41000, "ns", "lower")
    assert set(measurement.series) == {"thread0.histogram_1us", "thread1.histogram_1us"}


def test_without_rt_permission_it_runs_as_sched_other_and_says_so(tmp_path):
    target = FakeTarget()
    ctx = context(tmp_path, "mlock = false", target, rt=False)
    fake_cyclictest(target, ctx, "two-threads.json", "two-threads.log")
    measurement = ct.Cyclictest().execute(ctx)
    argv = spawned(target)
    assert "--policy=other" in argv and not any(a.startswith(("--priority", "--mlockall")) for a in argv)
    assert measurement.warnings[0].message.startswith("the target does not permit SCHED_FIFO")


def test_unparsable_json_fails_with_the_raw_output_attached(tmp_path):
    target = FakeTarget()
    ctx = context(tmp_path, "histogram = 100", target)
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(
        duration_s=1.0, log="# /dev/cpu_dma_latency set to 0us\n",
        files={f"{ctx.scratch}/cyclictest.json": data("two-threads.json").decode()[:300]}))
    with pytest.raises(RunFailed) as err:
        ct.Cyclictest().execute(ctx)
    assert err.value.reason.startswith("cyclictest --json output is not JSON")
    assert err.value.attachments["cyclictest.json"] == data("two-threads.json")[:300]
    assert err.value.attachments["cyclictest.log"] == b"# /dev/cpu_dma_latency set to 0us\n"


def test_a_failing_cyclictest_is_a_failed_run(tmp_path):
    target = FakeTarget()
    ctx = context(tmp_path, "", target)
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(rc=1, duration_s=0.1, log="FATAL: mlockall: nope\n"))
    with pytest.raises(RunFailed) as err:
        ct.Cyclictest().execute(ctx)
    assert err.value.reason == "cyclictest failed (exit status 1): FATAL: mlockall: nope"
    assert err.value.attachments == {"cyclictest.log": b"FATAL: mlockall: nope\n"}


def test_breaktrace_without_tracefs_runs_without_it_and_warns(tmp_path):
    target = FakeTarget()
    target.respond(["cat", "/proc/mounts"], "proc /proc proc rw 0 0\n")
    target.respond(["mount"], rc=32, stderr="mount: /sys/kernel/tracing: permission denied.\n")
    target.respond(["sh", "-c"], "")  # the restore record is kept
    ctx = context(tmp_path, 'breaktrace = "50us"\nhistogram = 100', target)
    fake_cyclictest(target, ctx, "two-threads.json", "two-threads.log")
    measurement = ct.Cyclictest().execute(ctx)
    assert not any(a.startswith("--breaktrace") for a in spawned(target))
    assert "breaktrace_fired" not in {m.name for m in measurement.metrics}
    [warning] = [w for w in measurement.warnings if "breaktrace" in w.message]
    assert warning.message.startswith(
        "breaktrace is off for this run: tracefs is not mounted at /sys/kernel/tracing and mounting "
        "it failed: mount: /sys/kernel/tracing: permission denied."
    )


def test_breaktrace_fired_keeps_the_trace_and_restores_the_tracer(tmp_path):
    target = FakeTarget()
    mounts = f"nodev {TRACEFS} tracefs rw 0 0\nd {DEBUGFS} debugfs rw 0 0\n"
    target.respond(["cat", "/proc/mounts"], mounts)
    target.respond(["test", "-w"], "")
    saved = {"tracing_on": "1\n", "current_tracer": "function\n", "buffer_size_kb": "7 (expanded: 1408)\n",
             "set_event": "irq:irq_handler_entry\n"}  # fmt: skip
    for name, text in saved.items():
        target.respond(["cat", f"{TRACEFS}/{name}"], text)
    target.respond(["sh", "-c"], "")  # every write to tracefs succeeds
    target.respond(["tail"], "cyclictest-1 [001] ...1. 1.000000: tracing_mark_write: hit latency threshold\n")
    ctx = context(tmp_path, 'breaktrace = "30us"', target)
    fake_cyclictest(target, ctx, "break.json", "break.log")
    measurement = ct.Cyclictest().execute(ctx)
    assert spawned(target)[-2:] == ["--breaktrace=30", "--tracemark"]
    got = by_key(measurement.metrics)
    assert got[("", "breaktrace_fired")] == (1, "bool", "none")
    assert got[("thread0", "breaktrace_latency_ns")] == (36000, "ns", "lower")
    assert got[("", "latency_samples")][0] == 410
    assert measurement.attachments["trace-tail.txt"].endswith(b"hit latency threshold\n")
    messages = [w.message for w in measurement.warnings]
    assert any(m.startswith("breaktrace fired: a wake-up was 36 µs late") for m in messages)
    shell = [c for c in target.calls if c[:2] == ("sh", "-c") and c[3].startswith(TRACEFS)]
    writes = [(c[3].rsplit("/", 1)[1], c[4] if len(c) > 4 else "") for c in shell]
    set_up = writes.index(("tracing_on", "1"))
    assert writes[set_up - 2:set_up] == [("buffer_size_kb", str(global_buffer.BUFFER_KB)), ("trace", "")]
    # the settings as they were, recorded before the first change and put back in this order
    [kept] = [c[6:] for c in target.calls if c[:3] == ("sh", "-c", changes._KEEP)]
    [undone] = [c[4:] for c in target.calls if c[:3] == ("sh", "-c", changes.UNDO)]
    assert kept == undone == (
        "write", f"{TRACEFS}/tracing_on", "0", "write", f"{TRACEFS}/trace", "",
        "events", f"{TRACEFS}/set_event", "irq:irq_handler_entry",
        "write", f"{TRACEFS}/current_tracer", "function", "write", f"{TRACEFS}/buffer_size_kb", "1408",
        "write", f"{TRACEFS}/tracing_on", "1")
    first_write = next(i for i, c in enumerate(target.calls) if c[:2] == ("sh", "-c") and c[3:4] == (
        f"{TRACEFS}/tracing_on",))
    assert next(i for i, c in enumerate(target.calls) if c[2:3] == (changes._KEEP,)) < first_write
    assert not any(c[0] in ("mount", "umount") for c in target.calls)  # both were mounted already


# --- real runs ---------------------------------------------------------------------------------


def run_campaign(tmp_path: Path, matrix: str) -> Store:
    rc, store = run_local_campaign(tmp_path, f'[matrix]\nbenchmark = "cyclictest"\n{matrix}', name="ct",
                                   duration="1s", run_timeout="10s")
    assert rc in (0, 1)
    return store


@pytest.mark.slow
def test_real_run_two_threads(tmp_path):
    store = run_campaign(tmp_path, 'threads = 2\nhistogram = 200\npolicy = "fifo"')
    [run] = store.runs()
    assert run.status == "ok", run.error
    probes = {probe for probe, _ in run.metrics}
    assert {"", "thread0", "thread1"} <= probes
    # cyclictest ends every thread when the first one has done its loops: on a busy machine the
    # others may have fewer samples, so only the bookkeeping is exact
    per_thread = [run.metric("latency_samples", p) for p in ("thread0", "thread1")]
    assert run.metric("latency_samples", "") == sum(per_thread)
    assert max(per_thread) == 1000 and min(per_thread) > 0
    for probe in ("thread0", "thread1"):
        assert units_and_directions(run, "latency_max_ns", probe=probe) == {"latency_max_ns": ("ns", "lower")}
    names = ("latency_p50_ns", "latency_p99_ns", "latency_p999_ns", "latency_p9999_ns", "latency_std_ns")
    assert units_and_directions(run, *names) == dict.fromkeys(names, ("ns", "lower"))
    series = read_raw(tmp_path / "results" / run.raw_path, expected_sha256=run.raw_sha256)
    assert sorted(series) == ["thread0.histogram_1us", "thread1.histogram_1us"]
    counts = series["thread0.histogram_1us"].values
    assert len(counts) == 200
    assert counts.sum() + run.metric("latency_overflow", "thread0") == per_thread[0]
    assert np.all(counts >= 0)
    assert processes_mentioning(str(tmp_path)) == []


def tracing_state() -> tuple[list[str], dict[str, str]]:
    lines = Path("/proc/mounts").read_text().splitlines()
    mounts = [line for line in lines if "tracefs" in line or "debugfs" in line]
    settings = {}
    if Path(TRACEFS, "tracing_on").exists():
        for name in ("tracing_on", "current_tracer", "set_event"):
            settings[name] = Path(TRACEFS, name).read_text()
    return sorted(mounts), settings


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="tracing needs root")
def test_real_breaktrace_keeps_the_trace_and_leaves_tracing_as_it_was(tmp_path):
    before = tracing_state()
    store = run_campaign(tmp_path, 'breaktrace = "1us"')
    assert tracing_state() == before
    [run] = store.runs()
    assert run.status == "ok", run.error
    messages = [w.message for _, w in store.warnings(run.campaign_id, run.id)]
    if run.metric("breaktrace_fired", "") is None:  # this kernel cannot trace: said so
        assert any(m.startswith("breaktrace is off for this run") for m in messages)
        return
    assert run.metrics[("", "breaktrace_fired")].unit == "bool"
    if run.metric("breaktrace_fired", "") == 1:
        trace = (tmp_path / "results" / run.attachments["trace-tail.txt"]).read_text()
        assert "tracing_mark_write: hit latency threshold" in trace
        assert any(m.startswith("breaktrace fired") for m in messages)
    else:
        assert run.attachments == {}
