"""timerlat, osnoise and hwlat: keys, argv, tracefs handling (on a directory laid out like tracefs),
the kernel option named where a tracer is missing, settings put back, and real runs on this host."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import hwlat, rtla
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import LAUNCH
from jitterlab.tracing import changes
from jitterlab.tracing.tracefs import Tracefs
from tests.support import campaign_from_toml, run_local_campaign

DATA = Path(__file__).parent.parent / "data" / "rtla"
SETTINGS = {"current_tracer": "function", "tracing_thresh": "0", "tracing_on": "1", "available_tracers":
            "hwlat osnoise timerlat function nop", "tracing_max_latency": "7", "trace": "old\n",
            "hwlat_detector/width": "500000", "hwlat_detector/window": "1000000"}


@pytest.fixture(autouse=True)
def _records(tmp_path, monkeypatch):
    """Restore records of the tracing changes go to the test's directory, not this machine's /run."""
    monkeypatch.setattr(changes, "RECORD_DIR", str(tmp_path / "run" / "tracing"))


def fake_tracefs(root: Path, **files: str) -> Path:
    """A directory laid out like tracefs with these files (SETTINGS by default)."""
    for name, value in {**SETTINGS, **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(value + ("\n" if value and not value.endswith("\n") else ""))
    return root


def context(tmp_path: Path, benchmark: str, matrix: str = "", tracefs: Path | None = None, log: str = "",
            placement: Placement | None = None, duration: str = "2s", files: dict | None = None):
    campaign = campaign_from_toml(benchmark, matrix, duration=duration)
    target = FakeTarget(fallback_local=True)
    root = tracefs or fake_tracefs(tmp_path / "tracing")
    target.respond(["cat", "/proc/mounts"], f"proc /proc proc rw 0 0\nnodev {root} tracefs rw 0 0\n")
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=1, log=log, files=files or {}))
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(), local.mkdir()
    return RunContext(target, campaign.settings, campaign.cells[0], 0, str(scratch), local, "/b",
                      placement or Placement(None, None), True), target


def launched(target: FakeTarget) -> list[str]:
    [call] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    return list(call[call.index("env") + 2:])


def test_keys_and_labels():
    [cell] = campaign_from_toml("timerlat", "").cells
    assert dict(cell.params) == {"period": 1_000_000, "priority": 95, "cpus": "", "histogram": 1000}
    assert rtla.Timerlat().label(cell) == "timerlat every 1ms fifo:95 cpus program CPUs idle"
    assert rtla.Timerlat().tools(cell) == {"rtla": "rtla"}
    [cell] = campaign_from_toml("osnoise", 'cpus = "1-3"').cells
    assert rtla.Osnoise().label(cell) == "osnoise 900ms/1s cpus 1-3 idle"
    [cell] = campaign_from_toml("hwlat", "").cells
    assert hwlat.Hwlat().label(cell) == "hwlat >10us 500ms/1s idle"
    for bench, matrix, message in (
        ("timerlat", 'period = "1500ns"', "matrix.period: 1.5us is out of range"),
        ("timerlat", 'period = "100500ns"', "matrix.period: rtla takes whole microseconds"),
        ("timerlat", 'cpus = "1;2"', 'matrix.cpus: expected a CPU list like "1"'),
        ("osnoise", 'runtime = "2s"', "matrix.runtime: 2s is longer than the period 1s"),
        ("osnoise", 'duration = "1s"', r"matrix.period: rtla osnoise runs 1 s, fewer than two of its 1s "
                                       r"periods: .* give a duration of at least 2s \(campaign.duration, "
                                       r"or the table's duration\)"),
        ("hwlat", 'width = "1s"', "matrix.width: 1s must be shorter than the window 1s"),
    ):
        with pytest.raises(UserError, match=message):
            campaign_from_toml(bench, matrix)


def test_timerlat_argv_and_metrics(tmp_path):
    doc = (DATA / "timerlat-hist-doc-5cpus.txt").read_text()
    ctx, target = context(tmp_path, "timerlat", 'period = "500us"\nhistogram = 256', log=doc,
                          placement=Placement((1, 2), None), duration="1500ms")
    measurement = rtla.Timerlat().execute(ctx)
    assert launched(target) == ["rtla", "timerlat", "hist", "-d", "2", "-p", "500", "-P", "f:95", "-E", "256",
                                "-b", "1", "-c", "1,2"]
    by = {(m.subject, m.name): m.value for m in measurement.metrics}
    assert by[("", "thread_latency_max_ns")] == 58_000 and by[("", "irq_latency_max_ns")] == 24_000
    assert len(measurement.series) == 10
    assert [w.message for w in measurement.warnings] == [
        "rtla timerlat runs whole seconds: it ran 2 s for a campaign.duration of 1.5 s"]


def test_osnoise_argv_and_metrics(tmp_path):
    doc = (DATA / "osnoise-top-doc-4cpus.txt").read_text()
    ctx, target = context(tmp_path, "osnoise", 'priority = 1\ncpus = "0-3"', log=doc)
    measurement = rtla.Osnoise().execute(ctx)
    assert launched(target) == ["rtla", "osnoise", "top", "-q", "-d", "2", "-p", "1000000", "-r", "900000",
                                "-P", "f:1", "-c", "0-3"]
    by = {(m.subject, m.name): m.value for m in measurement.metrics}
    assert by[("", "hw_noise_events")] == 2093
    [warning] = measurement.warnings
    assert warning.message.startswith("osnoise saw 2093 hardware/firmware interruption(s) (HW)")


def test_an_unparsable_output_is_attached(tmp_path):
    ctx, _ = context(tmp_path, "timerlat", log="something else\n")
    with pytest.raises(RunFailed) as info:
        rtla.Timerlat().execute(ctx)
    assert info.value.attachments == {"rtla.log": b"something else\n"}


@pytest.mark.parametrize(("bench", "tracer", "option"), [
    (rtla.Timerlat(), "timerlat", "CONFIG_TIMERLAT_TRACER"),
    (rtla.Osnoise(), "osnoise", "CONFIG_OSNOISE_TRACER"),
    (hwlat.Hwlat(), "hwlat", "CONFIG_HWLAT_TRACER")])
def test_a_kernel_without_the_tracer_makes_the_cell_unavailable(tmp_path, bench, tracer, option):
    this_host = (DATA / "available_tracers-this-host.txt").read_text().strip()
    ctx, target = context(tmp_path, tracer, tracefs=fake_tracefs(tmp_path / "t", available_tracers=this_host))
    with pytest.raises(RunFailed) as info:
        bench.execute(ctx)
    assert info.value.status == "unavailable"
    assert info.value.reason == (f"this kernel has no {tracer} tracer (available: blk function nop); it "
                                 f"needs a kernel built with {option}=y")
    assert not [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]  # nothing was started


def test_tracefs_is_mounted_for_the_run_and_unmounted_again():
    target = FakeTarget()
    target.respond(["cat", "/proc/mounts"], "proc /proc proc rw 0 0\n")
    target.respond(["mount"], "")
    target.respond(["sh", "-c"], "")
    target.respond(["rm"], "")
    with Tracefs(target) as fs:
        assert fs.path == "/sys/kernel/tracing"
    mounted = target.calls.index(("mount", "-t", "tracefs", "nodev", "/sys/kernel/tracing"))
    [kept] = [i for i, c in enumerate(target.calls) if c[2:3] == (changes._KEEP,)]
    assert kept < mounted  # recorded first: a killed run's mount is undone by the next sweep
    assert target.calls[-2] == ("sh", "-c", changes.UNDO, "sh", "umount", "/sys/kernel/tracing", "-")
    refused = FakeTarget()
    refused.respond(["cat", "/proc/mounts"], "")
    refused.respond(["sh", "-c"], "")
    refused.respond(["mount"], rc=32, stderr="mount: only root can do that")
    with pytest.raises(RunFailed) as info, Tracefs(refused):
        pass
    assert info.value.status == "unavailable" and "only root can do that" in info.value.reason


def test_hwlat_sets_the_tracer_up_and_puts_every_setting_back(tmp_path):
    root = fake_tracefs(tmp_path / "tracing")
    doc = (DATA / "hwlat-trace-doc-ftrace-rst.txt").read_text()  # what the kernel writes meanwhile
    ctx, target = context(tmp_path, "hwlat", 'threshold = "20us"\nwidth = "100ms"\nwindow = "200ms"',
                          tracefs=root, files={str(root / "trace"): doc})
    measurement = hwlat.Hwlat().execute(ctx)
    writes = [c[-2:] for c in target.calls if c[:2] == ("sh", "-c") and c[2] != LAUNCH and len(c) == 5]
    written = [(Path(path).relative_to(root).as_posix(), value) for path, value in writes]
    start = written.index(("current_tracer", "hwlat"))
    assert written[:start + 2] == [
        ("tracing_on", "0"), ("current_tracer", "nop"), ("hwlat_detector/width", "1"),
        ("hwlat_detector/window", "200000"), ("hwlat_detector/width", "100000"), ("tracing_thresh", "20"),
        ("tracing_max_latency", "0"), ("current_tracer", "hwlat"), ("tracing_on", "1")]
    assert launched(target)[:3] == ["sh", "-c", hwlat.RUN] and launched(target)[3:] == [str(root), "2"]
    for name, value in SETTINGS.items():  # everything as it was (the trace aside: it was cleared)
        if name not in ("trace", "tracing_max_latency", "available_tracers"):
            assert (root / name).read_text().strip() == value, name
    by = {m.name: m.value for m in measurement.metrics}
    assert (by["hwlat_events"], by["hwlat_max_ns"], by["hwlat_threshold_ns"]) == (12, 18_000, 20_000)
    assert measurement.attachments == {"hwlat-trace.txt": doc.encode()}
    assert measurement.warnings[0].remedy.startswith("never run hwlat on a machine in production")


def test_the_hwlat_run_switches_the_tracer_off_however_it_ends(tmp_path):
    target = LocalTarget(workdir=str(tmp_path / "wd"))
    ended = fake_tracefs(tmp_path / "a", current_tracer="hwlat")
    assert target.run(["sh", "-c", hwlat.RUN, str(ended), "0"]).ok
    assert (ended / "tracing_on").read_text() == "0\n" and (ended / "current_tracer").read_text() == "hwlat\n"
    stopped = fake_tracefs(tmp_path / "b", current_tracer="hwlat")
    proc = target.spawn(["sh", "-c", hwlat.RUN, str(stopped), "600"])
    time.sleep(0.3)
    proc.signal(signal.SIGTERM)
    assert proc.wait(10) == 0
    assert (stopped / "tracing_on").read_text() == "0\n"
    assert (stopped / "current_tracer").read_text() == "nop\n"
    target.close()


@pytest.mark.slow
def test_real_runs_on_this_host(tmp_path):
    """On this machine the kernel may lack the tracers: each cell is then unavailable, naming the option;
    where it has them, each is measured."""
    rc, store = run_local_campaign(tmp_path, """
[[matrix]]
benchmark = "timerlat"
[[matrix]]
benchmark = "osnoise"
period = "500ms"   # two periods in the 1 s run: rtla reports only the periods that ended
runtime = "250ms"
[[matrix]]
benchmark = "hwlat"
width = "100ms"
""", name="tracers", duration="1s")
    assert rc in (0, 1)
    tracers = Path("/sys/kernel/tracing/available_tracers")
    have = tracers.read_text().split() if tracers.exists() else []
    for run in store.runs():
        if run.benchmark in have:
            assert run.status == "ok", run.error
        else:
            assert run.status == "unavailable", run.error
            assert "CONFIG_" in run.error or "tracefs" in run.error or "rtla" in run.error
