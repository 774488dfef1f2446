"""A traced cell (trace = "sched"): its key, its refusal where the target cannot trace, the periods it
explains and how it names who took the time. Synthetic and fake: nothing is timed here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitterlab.analysis import attribution
from jitterlab.analysis.alignment import FIT_NAMES
from jitterlab.analysis.watched import PIN_WATCHED
from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.execution import traced
from jitterlab.measure.benchmarks.base import Measurement
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.impls.base import PROGRAM_PID
from jitterlab.model import explanation as ex
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Cell, Metric, RunSettings
from jitterlab.model.series import EdgeSeries
from jitterlab.model.trace import TraceBuilder
from jitterlab.targets.fake import FakeTarget
from jitterlab.tracing.recorder import CpuStats, RawTrace

CAMPAIGN = """
[campaign]
name = "t"
duration = "1s"
repetitions = 1
[[target]]
name = "f"
kind = "fake"
[matrix]
benchmark = "squarewave"
impl = ["c-fifo"]
period = "1ms"
{trace}
"""


def write(tmp_path, trace: str):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(trace=trace))
    return path


def test_trace_is_part_of_the_cell_only_when_asked(tmp_path):
    untraced = load_campaign(write(tmp_path, "")).cells
    both = load_campaign(write(tmp_path, 'trace = ["off", "sched"]')).cells
    assert [c.param("trace") for c in untraced] == [None]  # a cell stored before the key keeps its identity
    assert both[0].key == untraced[0].key
    assert both[1].key == f"{untraced[0].key} trace=sched"  # never pooled with the untraced one


def test_a_bad_trace_value_is_one_line(tmp_path, capsys):
    assert main(["run", str(write(tmp_path, 'trace = "sched_switch"')), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "matrix.trace" in err and "known: off, sched" in err and len(err.strip().splitlines()) == 1


def test_dry_run_says_per_cell_why_its_target_cannot_trace(tmp_path, capsys):
    assert main(["run", str(write(tmp_path, 'trace = ["sched", "off"]')), "--dry-run"]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "cannot trace" in line]
    assert len(said) == 1  # the traced cell only
    assert "trace=sched" in said[0] and "target 'f'" in said[0] and "CONFIG_TRACING" in said[0]


def test_refusal_names_the_target_and_why():
    fake = FakeTarget("box")
    fake.respond(["sh", "-c"], "uid 1000\nkernel tracefs\nmounted\n")
    assert traced.refusal(fake) == ("cannot trace on target 'box': tracing needs root: run jitterlab as "
                                    "root on the target (or give the target's user root)")


def test_the_worst_periods_and_those_past_the_envelope_are_chosen():
    rel = np.array([0.5, -0.2, 0.05, 0.3, 0.0, 0.2, 0.15, 0.01, 0.9])
    used = np.ones(len(rel), dtype=bool)
    used[8] = False  # excluded (blind): never explained
    assert traced.chosen(rel, used, worst_n=2) == {0: ex.WORST, 3: ex.WORST, 5: ex.ENVELOPE, 6: ex.ENVELOPE}
    assert traced.chosen(rel, used, worst_n=10) == {0: "worst", 2: "worst", 3: "worst", 5: "worst",
                                                     6: "worst", 7: "worst"}  # late ones only
    assert traced.chosen(np.zeros(3), np.ones(3, dtype=bool)) == {}


@pytest.mark.parametrize(("who", "text"), [
    (attribution.Task("stress-ng-cpu", 812, 120), "stress-ng-cpu [SCHED_OTHER nice 0] pid 812"),
    (attribution.Task("jl-burst", 9, 89), "jl-burst [SCHED_FIFO/RR 10] pid 9"),
    (attribution.Irq(11, "virtio0"), "IRQ 11 virtio0"),
    (attribution.Irq(-1, ""), "hrtimer callback"),
    (attribution.Softirq(3), "softirq NET_RX"),
    (attribution.Move(0, 1), "moved from CPU 0 to CPU 1"),
])
def test_who_reads_as_a_person_reads_it_and_survives_json(who, text):
    kept = traced.who(who)
    assert kept is not None and kept.text == text
    assert ex.Who.from_json(json.loads(json.dumps(kept.as_json()))) == kept


US = 1000
PERIOD_NS = 1_000_000
DUE = 40_000 * US
PROG, BURST, IDLE = ("c-fifo", 100, 120), ("burst", 77, 9), ("swapper/1", 0, 120)


def wave() -> EdgeSeries:
    """A 1 ms wave from t = 0 whose period starting at DUE - 1 ms ends 1 ms late (at DUE + 1 ms)."""
    t = list(range(0, DUE, PERIOD_NS // 2))  # ..., DUE - 1 ms, DUE - 0.5 ms
    t += [DUE + 1000 * US + k * PERIOD_NS // 2 for k in range(20)]
    return EdgeSeries(np.array(t, dtype=np.int64), (np.arange(len(t)) % 2).astype(np.uint8))


def synthetic_trace():
    """700 µs of a SCHED_FIFO task + 200 µs of an IRQ + 100 µs with no event, from DUE."""
    trace = TraceBuilder().switch(DUE - 400 * US, 1, PROG, IDLE, prev_state=1)
    trace.waking(DUE + 100 * US, 1, PROG, target_cpu=1)
    trace.waking(DUE + 100 * US, 1, BURST, target_cpu=1)
    trace.switch(DUE + 100 * US, 1, IDLE, BURST, prev_state=0)
    trace.irq(DUE + 800 * US, DUE + 1000 * US, 1, 11, "virtio0", by=77)
    trace.switch(DUE + 1000 * US, 1, BURST, PROG, prev_state=1)
    return trace.events(0, DUE + 20_000 * US, cpus=2)


def wave_context(tmp_path, probe: str = "vpin", pid: str | None = "100\n") -> RunContext:
    fake = FakeTarget("box", quiet=True)
    # idle states that exit at once: idle with the timer due is unaccounted
    fake.respond(["sh", "-c", traced._IDLE_EXIT[2]], "0\n0\n")
    (tmp_path / "local").mkdir(exist_ok=True)
    if pid is not None:
        (tmp_path / "local" / PROGRAM_PID).write_text(pid)
    cell = Cell("box", "squarewave", "idle", (("impl", "c-fifo"), ("period", PERIOD_NS), ("probe", probe),
                                               ("pin", "vpin"), ("trace", "sched")))
    return RunContext(fake, RunSettings(duration_ns=10**9, warmup_ns=0), cell, 0, "/scratch",
                      tmp_path / "local", "", Placement((1,), 0), rt_permitted=True)


def raw_trace(tmp_path) -> RawTrace:
    return RawTrace(tmp_path, (CpuStats(0, 10, 0, 0), CpuStats(1, 10, 3, 0)), (), 1024, False)


def test_a_late_period_is_explained_exactly_on_the_trace_clock(tmp_path, monkeypatch):
    monkeypatch.setattr(traced.reader, "read", lambda dat: synthetic_trace())
    m = Measurement(metrics=[], series={"vpin": wave()})
    got = traced.explain(wave_context(tmp_path), tmp_path / "x.dat", raw_trace(tmp_path), m)
    assert (got.refused, got.aligned_by, got.residual_ns, got.pids, got.program_cpus) == (
        None, ex.DIRECT, 0, (100,), (1,))
    assert got.lost_events == 3 and got.events == len(synthetic_trace()) and got.emulated is False
    first = got.periods[0]
    assert (first.due_ns, first.edge_ns, first.chosen, first.remainder_ns) == (
        DUE, DUE + 1000 * US, ex.WORST, 0)
    assert [(p.cause, p.who.text if p.who else None, p.duration_ns // US) for p in first.parts] == [
        ("wakeup", "burst [SCHED_FIFO/RR 90] pid 77", 700), ("irq", "IRQ 11 virtio0", 200),
        ("unaccounted", None, 100)]
    assert [p for p in got.periods if p.spans] == [first]  # the worst keeps its timeline
    assert [(s.start_ns - DUE) // US for s in first.spans] == [0, 100, 800]
    assert ex.Explanation.from_json(json.loads(json.dumps(got.as_json()))) == got


def test_an_outside_probe_is_explained_only_through_the_program_log(tmp_path, monkeypatch):
    monkeypatch.setattr(traced.reader, "read", lambda dat: synthetic_trace())
    ctx = wave_context(tmp_path, probe="sigrok")
    watched = [Metric(PIN_WATCHED, 1.0, "", "sigrok"), Metric(FIT_NAMES[3], 1234.0, "ns", "sigrok")]
    got = traced.explain(ctx, tmp_path / "x.dat", raw_trace(tmp_path),
                         Measurement(metrics=watched, series={"sigrok": wave()}))
    assert (got.aligned_by, got.residual_ns, got.refused) == (ex.PROGRAM_LOG, 1234, None) and got.periods
    unwatched = [Metric(PIN_WATCHED, 0.0, "", "sigrok")]
    got = traced.explain(ctx, tmp_path / "x.dat", raw_trace(tmp_path),
                         Measurement(metrics=unwatched, series={"sigrok": wave()}))
    assert got.periods == () and got.aligned_by is None and "program_pin_watched" in got.refused


def test_without_the_programs_pid_nothing_is_explained(tmp_path):
    got = traced.explain(wave_context(tmp_path, pid=None), tmp_path / "x.dat", raw_trace(tmp_path),
                         Measurement(metrics=[], series={"vpin": wave()}))
    assert got.periods == () and "impl c-fifo runs no program whose pid" in got.refused


def test_a_traced_run_whose_analysis_failed_keeps_its_trace_file(tmp_path, monkeypatch):
    def build(raw, out):
        out.write_bytes(b"tracing6")
        return out

    monkeypatch.setattr(traced.datfile, "build", build)
    failed = RunFailed("unmeasurable: all 163 periods touch a blind interval", status="unmeasurable")
    traced.kept_after_failure(wave_context(tmp_path), raw_trace(tmp_path), failed)
    assert failed.attachments == {ex.TRACE_FILE: b"tracing6"}

    def missing(raw, out):
        raise RunFailed("building the trace file needs trace-cmd on this machine (apt install trace-cmd)")

    monkeypatch.setattr(traced.datfile, "build", missing)
    failed = RunFailed("unmeasurable", status="unmeasurable")
    traced.kept_after_failure(wave_context(tmp_path), raw_trace(tmp_path), failed)
    assert failed.attachments == {} and failed.reason == "unmeasurable"


def test_dry_run_opens_a_target_once_to_ask_for_its_tunings_and_whether_it_can_trace(
        tmp_path, capsys, monkeypatch):
    opened: list[str] = []
    init = FakeTarget.__init__

    def counted(self, *args, **kwargs):
        init(self, *args, **kwargs)
        opened.append(self.name)

    monkeypatch.setattr(FakeTarget, "__init__", counted)
    path = write(tmp_path, 'trace = ["sched", "off"]\ntuning = ["none", "rt-unthrottled"]\nprobe = "self"')
    path.write_text(path.read_text().replace("c-fifo", "c-file"))  # no SCHED_FIFO asked of the fake
    assert main(["run", str(path), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert opened == ["f"]
    assert out.count("cannot trace on target 'f'") == 2  # each traced cell once, as `run` stores it
    assert "unavailable: f squarewave impl=c-file period=1ms probe=self tuning=rt-unthrottled idle: tuning " \
           "rt-unthrottled cannot be applied" in out
