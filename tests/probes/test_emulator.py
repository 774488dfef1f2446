"""The emulator probe: qemu's PL061 trace read into edges (exact, on synthetic text shaped like
qemu 7.2's), and the probe on a fake board whose trace the test writes: a slow wave matched with
the program's own log edge for edge, a trace missing edges, and its refusals."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.analysis.gpio_trace import parse_trace
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine, TracedOutput, serves
from jitterlab.measure.squarewave.probes import emulator
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.socs import SOCS
from jitterlab.model.units import format_ns
from jitterlab.targets.capabilities import GpioTrace, RecordsGpioOutputs
from jitterlab.targets.fake import FakeTarget

EMULATOR = plugins.PROBES.get("emulator", "test")
DEVICE = "/machine/unattached/device[7]"
PERIOD_NS = 100_000_000  # a slow wave: 50 ms between edges
GUEST0_NS = 5_000_000_000  # the program's first edge, on the board's CLOCK_MONOTONIC
HOST0_NS = 1_795_579_684_409_894_000  # the same edge on the controller's CLOCK_REALTIME (whole us)


def event(t_ns: int, line: int, level: int, device: str = DEVICE, tid: int = 11153) -> str:
    seconds, rest = divmod(t_ns, 1_000_000_000)
    return f"{tid}@{seconds}.{rest // 1000:06d}:pl061_set_output {device} setting output {line} to {level}\n"


RESET = "".join(event(HOST0_NS - 9_000_000_000, line, 0, tid=11151) for line in range(8))


# --- the trace reader ------------------------------------------------------------------------------

def test_a_trace_becomes_the_edges_of_one_line_and_nothing_else():
    text = (
        RESET  # the reset reports every line at 0: line 2 was 0 already, so no edge
        + event(HOST0_NS, 2, 1)
        + event(HOST0_NS + 10_000, 5, 1)  # another line
        + "11153@1795579684.409999:pl061_update_istate /machine/unattached/device[7] GPIORIS 0x0\n"
        + "pl061_write: Bad offset 4a0\n"  # a guest error qemu logs to the same file
        + event(HOST0_NS + 50_000_000, 2, 0)
        + event(HOST0_NS + 50_000_001, 2, 0)  # a repeated level is no edge (stamps are whole us)
        + event(HOST0_NS + 100_000_000, 2, 1)
    )
    partial = event(HOST0_NS + 150_000_000, 2, 0)[:40]  # qemu is still writing it
    got = parse_trace(text + partial, "pl061_set_output", 2, initial_level=0)
    assert got.t_ns.tolist() == [HOST0_NS, HOST0_NS + 50_000_000, HOST0_NS + 100_000_000]
    assert got.level.tolist() == [1, 0, 1] and got.t_ns.dtype == np.int64
    assert got.initial_level == 0 and got.devices == (DEVICE,) and got.untimed == 0
    assert got.consumed == len(text.encode()), "the partial line is left for the next read"
    other = parse_trace(text + partial, "pl061_set_output", 5, initial_level=0)
    assert other.t_ns.tolist() == [HOST0_NS + 10_000]
    # without the level before it, the reset's report is taken for the first change (a window read
    # after the boot starts with a change)
    assert parse_trace(text, "pl061_set_output", 2).t_ns[0] == HOST0_NS - 9_000_000_000


def test_the_level_before_a_window_is_the_opposite_of_its_first_change_unless_given():
    text = event(HOST0_NS, 2, 0) + event(HOST0_NS + 2_000, 2, 1)
    assert parse_trace(text, "pl061_set_output", 2).initial_level == 1
    given = parse_trace(text, "pl061_set_output", 2, initial_level=0)  # the first event repeats it
    assert given.t_ns.tolist() == [HOST0_NS + 2_000] and given.level.tolist() == [1]


def test_a_line_that_never_changed_gives_no_edges():
    got = parse_trace(RESET + event(HOST0_NS, 5, 1), "pl061_set_output", 2, initial_level=0)
    assert len(got.t_ns) == 0 and got.initial_level == 0
    none = parse_trace(event(HOST0_NS, 5, 1), "pl061_set_output", 2)
    assert len(none.t_ns) == 0 and none.initial_level is None and none.devices == ()


def test_events_without_time_stamps_are_counted_not_read():
    untimed = "".join(f"pl061_set_output {DEVICE} setting output {line} to 1\n" for line in (2, 3))
    got = parse_trace(untimed, "pl061_set_output", 2)
    assert len(got.t_ns) == 0 and got.untimed == 1


def test_two_controllers_tracing_the_line_are_both_named_and_an_unknown_event_is_refused():
    got = parse_trace(event(HOST0_NS, 2, 1) + event(HOST0_NS + 5_000, 2, 1, device="/machine/secure-gpio"),
                      "pl061_set_output", 2)
    assert got.devices == (DEVICE, "/machine/secure-gpio")
    with pytest.raises(ValueError, match="no reader for trace event 'imx_gpio_set'"):
        parse_trace("", "imx_gpio_set", 2)


# --- the probe -------------------------------------------------------------------------------------

class TracedBoard(FakeTarget, RecordsGpioOutputs):
    """An emulated board whose GPIO trace is a file the test writes."""

    def __init__(self, trace: Path) -> None:
        super().__init__(name="board")
        self.trace = trace

    def gpio_trace(self) -> GpioTrace:
        return GpioTrace(self.trace, SOCS["pl061"], "pl061_set_output")


def _ctx(tmp_path: Path, target, line: int | None = None, period_ns: int = PERIOD_NS) -> RunContext:
    """A run of the emulator probe; `line` given as [probes.emulator] line (an older campaign's), else
    the probe reads the pin's."""
    cell = squarewave_cell("c-gpiod", period_ns, probe="emulator", pin="gpiod")
    settings = RunSettings(options={"probes": {"emulator": {} if line is None else {"line": line}}})
    return RunContext(target, settings, cell, 0, "/s", tmp_path, "/b", Placement(None, None), True,
                      controller=FakeTarget())


def _own(n: int) -> SelfLog:
    t = GUEST0_NS + np.arange(n, dtype=np.int64) * (PERIOD_NS // 2)
    return SelfLog(t, (np.arange(n) % 2 == 0).astype(np.uint8), "monotonic", "c-gpiod", 0)


def _trace_of(own: SelfLog, skip: range = range(0), lag_ns: dict[int, int] | None = None) -> str:
    """The program's edges as qemu would trace them (a line of another controller line between)."""
    lines = []
    for i, (t, level) in enumerate(zip(own.t_ns.tolist(), own.level.tolist(), strict=True)):
        host = t - GUEST0_NS + HOST0_NS - (lag_ns or {}).get(i, 0)
        if i not in skip:
            lines.append(event(host, 2, level))
        lines.append(event(host + 3_000, 5, i % 2))
    return "".join(lines)


GPIOD_LINE2 = PinHandle("gpiod", (BoardLine("9030000.pl061", 2),))


def _run(tmp_path: Path, own: SelfLog, after_start: str, pin: PinHandle = GPIOD_LINE2,
         line: int | None = None) -> tuple[object, Path]:
    trace = tmp_path / "gpio-trace.log"
    earlier = event(HOST0_NS - 2_000_000_000, 2, 1) + event(HOST0_NS - 1_950_000_000, 2, 0)  # a run before
    trace.write_text(RESET + earlier + event(HOST0_NS - 1_000_000_000, 2, 1)[:30])  # a line half written
    ctx = _ctx(tmp_path, TracedBoard(trace), line=line)
    probe = EMULATOR(ctx)
    probe.start(pin)
    with trace.open("a") as f:
        f.write(event(HOST0_NS - 1_000_000_000, 2, 1)[30:] + after_start)
    try:
        return probe.stop(own), trace
    finally:
        probe.close()


def test_a_slow_wave_matches_the_programs_own_log_edge_for_edge(tmp_path):
    own = _own(40)
    # the program stamped edge 10 7 us later than usual after its write
    partial = event(HOST0_NS + 9 * 10**9, 2, 0)[:50]  # qemu is still writing it: not read
    capture, _ = _run(tmp_path, own, _trace_of(own, lag_ns={10: 7_000}) + partial)
    expected = own.t_ns.copy()
    expected[10] -= 7_000
    assert capture.t_ns.tolist() == expected.tolist(), "on the program's clock, edge for edge"
    assert capture.level.tolist() == own.level.tolist() and capture.blind.shape == (0, 2)
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics == {
        "probe_resolution_ns": 1_000, "probe_emulated": 1, "align_matched_edges": 40,
        "align_offset_ns": GUEST0_NS, "align_drift_ppm": 0, "self_lag_spread_p50_ns": 0,
        "self_lag_spread_max_ns": 7_000, "unobserved_edges": 0, "program_pin_watched": 1}
    assert all(m.subject == "emulator" for m in capture.metrics)
    assert capture.warnings == (emulator.EMULATED,)
    assert "functional evidence" in emulator.EMULATED.message and "never timing" in emulator.EMULATED.message


def test_a_trace_missing_an_event_counts_the_edges_and_is_blind_around_them(tmp_path, monkeypatch):
    monkeypatch.setattr(emulator, "CATCH_UP_S", 0.0)
    own = _own(80)
    capture, _ = _run(tmp_path, own, _trace_of(own, skip=range(30, 31)))
    # edge 30 is missing, and edge 31 repeats the level before it: both are gone from the trace
    assert len(capture.t_ns) == 78
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["program_pin_watched"] == 1 and metrics["unobserved_edges"] == 2
    quarter = PERIOD_NS // 4
    assert capture.blind.tolist() == [[int(own.t_ns[30]) - quarter, int(own.t_ns[31]) + quarter]]
    assert capture.series["emulator.blind"].t_ns.tolist() == capture.blind.reshape(-1).tolist()
    said = [w.message for w in capture.warnings]
    wanted = f"within a quarter period ({format_ns(quarter)}) of 2 of the program's"
    assert any(wanted in m for m in said), said
    # the blind rule then counts the missed edges and leaves the broken periods out, instead of a
    # period twice too long
    figures = squarewave_metrics(capture.t_ns, capture.level, PERIOD_NS, warmup_ns=0, blind=capture.blind,
                                 probe="emulator")
    got = {m.name: m.value for m in figures}
    assert (got["missed_edges"], got["excluded_periods"], got["max_rel_period_error"]) == (2, 2, 0)


def test_a_trace_that_stops_halfway_is_not_the_programs_pin(tmp_path, monkeypatch):
    monkeypatch.setattr(emulator, "CATCH_UP_S", 0.0)
    own = _own(40)
    capture, _ = _run(tmp_path, own, _trace_of(own, skip=range(20, 40)))
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["program_pin_watched"] == 0 and metrics["align_matched_edges"] == 20
    assert "align_offset_ns" not in metrics and "unobserved_edges" not in metrics
    assert any("are not the program's pin's: only 20 of the program's 40 edges" in w.message
               for w in capture.warnings)
    assert emulator.EMULATED in capture.warnings


def test_a_line_that_never_changed_is_unmeasurable_with_the_option_to_check(tmp_path, monkeypatch):
    monkeypatch.setattr(emulator, "CATCH_UP_S", 0.0)
    own = _own(40)
    with pytest.raises(RunFailed, match=r"^unmeasurable: the emulator traced no edge: the level of pl061 "
                       r"line 2 never changed during the run; check that pin 'gpiod' drives line 2 of the "
                       r"traced pl061$") as failed:
        _run(tmp_path, own, "".join(event(HOST0_NS + i * 1000, 5, i % 2) for i in range(4)))
    assert failed.value.status == "unmeasurable"


def test_a_target_that_records_no_gpio_outputs_is_refused_with_where_to_find_one(tmp_path):
    """The campaign's checks name the machines that can (from the registries, tests/test_campaign.py);
    a run that got past them says what the target lacks and where those names are."""
    probe = EMULATOR(_ctx(tmp_path, FakeTarget(name="pc")))
    with pytest.raises(RunFailed, match=r"^probes.emulator: target 'pc' cannot record its GPIO outputs "
                       r"outside the board \(an emulated board with a traced GPIO controller\): "
                       r"`jitterlab run --dry-run` names the targets that can$") as failed:
        probe.start(PinHandle("gpiod", ()))
    assert failed.value.status == "unavailable"


@pytest.mark.parametrize(("line", "says"), [
    (8, "pl061 has lines 0-7, not 8"),
    # as register-poll refuses it: qemu virt wires it to gpio-keys
    (3, "pl061 line 3 belongs to gpio-keys (qemu virt's power button); drive another line"),
])
def test_a_line_the_controller_does_not_have_is_refused(tmp_path, line, says):
    trace = tmp_path / "gpio-trace.log"
    trace.write_text("")
    probe = EMULATOR(_ctx(tmp_path, TracedBoard(trace), line=line))  # the probe's own line: its key
    with pytest.raises(RunFailed, match=rf"^probes.emulator.line: {re.escape(says)}$"):
        probe.start(PinHandle("gpiod", ()))
    probe = EMULATOR(_ctx(tmp_path, TracedBoard(trace)))  # the pin's: the pin's key
    with pytest.raises(RunFailed, match=rf"^pins.gpiod.line: {re.escape(says)}$"):
        probe.start(PinHandle("gpiod", (BoardLine("9030000.pl061", line),)))


def test_a_board_started_without_its_trace_is_told(tmp_path):
    probe = EMULATOR(_ctx(tmp_path, TracedBoard(tmp_path / "none.log")))
    with pytest.raises(RunFailed, match=r"none.log cannot be read \(No such file or directory\): the board "
                       r"was started without tracing its pl061$"):
        probe.start(GPIOD_LINE2)


def test_the_campaign_check_reads_the_line_from_the_pin_and_wants_a_period_its_stamps_resolve():
    pin = {"pins": {"gpiod": {"chip": "9030000.pl061", "line": 2}}}
    settings = RunSettings(options=pin)
    shortest = squarewave_cell(period_ns=40_000, probe="emulator", pin="gpiod")
    EMULATOR.check(shortest, settings, Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: matrix.period: 39us is too short for the emulator probe: "
                       r"its 1us time stamps give fewer than 20 per half period; use a period >= 40us$"):
        EMULATOR.check(squarewave_cell(period_ns=39_000, probe="emulator", pin="gpiod"), settings,
                       Where("c.toml", ("matrix",)))
    # an older campaign's own line: accepted when it is the pin's, refused when it is another
    own_line = {**pin, "probes": {"emulator": {"line": 2}}}
    EMULATOR.check(shortest, RunSettings(options=own_line), Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: probes.emulator.line: 3 is not the line pin 'gpiod' "
                       r"drives \(2\); remove it \(the probe reads the pin's\) or make the two agree$"):
        EMULATOR.check(shortest, RunSettings(options={**pin, "probes": {"emulator": {"line": 3}}}),
                       Where("c.toml", ("matrix",)))


def test_it_follows_the_line_of_the_pin_it_is_bound_to(tmp_path):
    """A gpiomem pin says its line in the PL061's register map, a gpiod pin its offset on the
    controller's chip: the same line 2, followed edge for edge without a line of the probe's own."""
    own = _own(40)
    for pin in (GPIOD_LINE2, PinHandle("gpiomem", (BoardLine(soc=SOCS["pl061"], soc_line=2),))):
        capture, _ = _run(tmp_path, own, _trace_of(own), pin=pin)
        assert capture.t_ns.tolist() == own.t_ns.tolist(), pin.kind
        assert {m.name: m.value for m in capture.metrics}["program_pin_watched"] == 1


@pytest.mark.parametrize(("pin", "line", "says"), [
    (GPIOD_LINE2, 5, r"^probes.emulator.line: 5 is not the line pin 'gpiod' drives \(2\); remove it"),
    (PinHandle("gpiod", ()), None, r"^probes.emulator.line: pin 'gpiod' does not say the line it drives; set "
                                   r"it, e.g. line = 2$"),
])
def test_a_line_the_pin_contradicts_or_does_not_say_is_refused_when_the_run_starts(tmp_path, pin, line, says):
    trace = tmp_path / "gpio-trace.log"
    trace.write_text("")
    probe = EMULATOR(_ctx(tmp_path, TracedBoard(trace), line=line))
    with pytest.raises(RunFailed, match=says) as failed:
        probe.start(pin)
    assert failed.value.status == "unavailable"


def test_it_watches_a_board_line_from_the_controller_never_the_virtual_pin():
    assert EMULATOR.location == "controller" and EMULATOR.independent and not EMULATOR.needs_cpu
    assert serves(EMULATOR.needs, plugins.PINS.get("gpiod", "t").offers)
    assert serves(EMULATOR.needs, plugins.PINS.get("gpiomem", "t").offers)
    assert not serves(EMULATOR.needs, plugins.PINS.get("vpin", "t").offers)


@pytest.mark.parametrize("after_start,reason", [
    (event(HOST0_NS, 2, 1) + event(HOST0_NS - 5_000, 2, 0),
     r"^the emulator's time stamps of pl061 line 2 go backwards: this machine's clock \(CLOCK_REALTIME\) was "
     r"stepped"),
    (f"pl061_set_output {DEVICE} setting output 2 to 1\n",
     r"^unmeasurable: the emulator traced no edge: qemu wrote its events without time stamps \(1 of them; "
     r"it needs -msg timestamp=on\)"),
    (event(HOST0_NS, 2, 1) + event(HOST0_NS + 5_000, 2, 0, device="/machine/secure-gpio"),
     r"^the emulator's trace holds line 2 of 2 pl061 controllers \(/machine/unattached/device\[7\], "
     r"/machine/secure-gpio\); which one the pin drives is unknown$"),
])
def test_a_trace_that_cannot_be_trusted_fails_the_run_with_why(tmp_path, monkeypatch, after_start, reason):
    monkeypatch.setattr(emulator, "CATCH_UP_S", 0.0)
    with pytest.raises(RunFailed, match=reason):
        _run(tmp_path, _own(4), after_start)


# --- an emulated unit's pin: a traced output the pin hands over, a count instead of times ---------

def _unit_run(tmp_path: Path, made: int, traced: int, monkeypatch) -> object:
    monkeypatch.setattr(emulator, "CATCH_UP_S", 0.0)
    trace = tmp_path / "unit-trace.log"
    trace.write_text(RESET)
    cell = squarewave_cell("unit", PERIOD_NS, probe="emulator", pin="unit")
    ctx = RunContext(FakeTarget(), RunSettings(), cell, 0, "/s", tmp_path, "/b", Placement(None, None), True,
                     controller=FakeTarget())
    probe = EMULATOR(ctx)  # no [probes.emulator] line: the pin names its line
    probe.start(PinHandle("unit", (TracedOutput(GpioTrace(trace, SOCS["pl061"], "pl061_set_output"), 0),)))
    with trace.open("a") as f:
        f.write("".join(event(HOST0_NS + i * PERIOD_NS // 2, 0, (i + 1) % 2) for i in range(traced)))
    try:
        return probe.stop(SelfLog(np.empty(0, np.int64), np.empty(0, np.uint8), "none", "unit", made))
    finally:
        probe.close()


def test_an_emulated_unit_s_pin_is_checked_against_the_firmware_s_count(tmp_path, monkeypatch):
    capture = _unit_run(tmp_path, 40, 40, monkeypatch)
    assert capture.t_ns.tolist() == [i * PERIOD_NS // 2 for i in range(40)], "on the trace's own clock"
    assert capture.level.tolist() == [(i + 1) % 2 for i in range(40)]
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics == {"probe_resolution_ns": 1_000, "probe_emulated": 1, "counted_edges": 40,
                       "seen_edges": 40, "unseen_edges": 0, "extra_edges": 0, "program_pin_watched": 1}
    assert capture.warnings == (emulator.EMULATED,)
    short = _unit_run(tmp_path, 40, 30, monkeypatch)
    got = {m.name: m.value for m in short.metrics}
    assert (got["program_pin_watched"], got["unseen_edges"]) == (0, 10)
    assert any("does not hold the unit's edges: it saw 30 edges, 10 fewer than the 40 the unit counted"
               in w.message for w in short.warnings)


def test_the_emulator_probe_reads_a_board_only_for_a_board_s_line():
    unit = squarewave_cell("unit", PERIOD_NS, probe="emulator", pin="unit")
    # the unit's pin brings its trace and line
    EMULATOR.check(unit, RunSettings(), Where("c.toml", ("matrix",)))
    assert EMULATOR.reads_of(unit) is None, "nothing of the target is read for a unit's traced output"
    board = squarewave_cell("c-gpiod", PERIOD_NS, probe="emulator", pin="gpiod")
    assert EMULATOR.reads_of(board) is RecordsGpioOutputs
    with pytest.raises(UserError, match=r"pins\.gpiod\.line: missing"):
        EMULATOR.check(board, RunSettings(), Where("c.toml", ("matrix",)))
