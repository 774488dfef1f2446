"""The register-poll probe on a fake board: a fake QMP monitor serves a GPIO level that changes on
a fake clock, the probe's thread reads it through the real client and stamps each read with that
clock, so edge times, blind spans and the figures are exact; and its refusals."""

from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine, serves
from jitterlab.measure.squarewave.probes import polls, register_poll
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.measure.squarewave.probes.polls import Polls, blind_spans, edges_of
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.socs import SOCS
from jitterlab.targets.capabilities import ExaminesMemory, WordReader
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.qmp import open_word
from tests.targets.fake_qmp import FakeQmp

PROBE = plugins.PROBES.get("register-poll", "test")
MS = 1_000_000
HALF_NS = 20 * MS  # a slow wave: 20 ms between edges, 20 reads per half period
PERIOD_NS = 2 * HALF_NS
GUEST0_NS = 5_000_000_000  # the program's first edge, on the board's clock
FIRST_EDGE_NS = 100 * MS + MS // 2  # on the fake clock: read 100 is the first to see it
PL061_LINE2 = 0x09030000 + (0x04 << 2)  # model/socs.py: line 2's address-masked data register


class FakeClock:
    """Advances half a millisecond per call, plus a stall at chosen calls: read i is asked at
    i ms (+ the stalls before it), the monitor answers with the level at i ms + 0.5 ms, and the
    read is stamped i ms + 0.25 ms."""

    def __init__(self, stalls: dict[int, int] | None = None) -> None:
        self.now, self.calls, self.stalls = 0, 0, stalls or {}

    def __call__(self) -> int:
        t = self.now
        self.now += MS // 2 + self.stalls.get(self.calls, 0)
        self.calls += 1
        return t


def wave(n_edges: int, first_ns: int = FIRST_EDGE_NS, half_ns: int = HALF_NS):
    """The line's level at a time of the fake clock: 0, then n_edges edges half_ns apart."""
    def level(t_ns: int) -> int:
        seen = 0 if t_ns < first_ns else min(n_edges, (t_ns - first_ns) // half_ns + 1)
        return seen % 2
    return level


class PolledBoard(FakeTarget, ExaminesMemory):
    def __init__(self, socket: Path) -> None:
        super().__init__(name="board")
        self.socket = socket

    def word_reader(self, address: int) -> WordReader:
        return open_word(self.socket, address)


@pytest.fixture
def sock_dir():
    path = Path(tempfile.mkdtemp(prefix="jlq-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _ctx(tmp_path: Path, target, line: int | None = 2, soc: str | None = "pl061") -> RunContext:
    """A run of the probe with [probes.register-poll] soc and line (a gpiod pin leaves them to the
    probe; None: not given, the pin's)."""
    cell = squarewave_cell("c-gpiod", PERIOD_NS, probe="register-poll", pin="gpiod")
    given = {k: v for k, v in (("soc", soc), ("line", line)) if v is not None}
    settings = RunSettings(options={"probes": {"register-poll": given}})
    return RunContext(target, settings, cell, 0, "/s", tmp_path, "/b", Placement(None, None), True,
                      controller=FakeTarget())


def _own(n: int) -> SelfLog:
    t = GUEST0_NS + np.arange(n, dtype=np.int64) * HALF_NS
    return SelfLog(t, (np.arange(n) % 2 == 0).astype(np.uint8), "monotonic", "c-gpiod", 0)


GPIOD_LINE2 = PinHandle("gpiod", (BoardLine("9030000.pl061", 2),))


def _poll(tmp_path, sock_dir, monkeypatch, level, own: SelfLog, reads: int = 1000,
          stalls: dict[int, int] | None = None, pin: PinHandle = GPIOD_LINE2, soc: str | None = "pl061",
          line: int | None = 2, **fake):
    """Start the probe on a fake board, let it read `reads` times, stop it with the program's log."""
    clock = FakeClock(stalls)
    monkeypatch.setattr(polls, "clock_ns", clock)

    def word(address: int) -> int:
        return (level(clock.now) << 2) if address == PL061_LINE2 else 0

    with FakeQmp(sock_dir / "qmp.sock", word, **fake) as server:
        probe = PROBE(_ctx(tmp_path, PolledBoard(sock_dir / "qmp.sock"), line=line, soc=soc))
        probe.start(pin)
        try:
            deadline = time.monotonic() + 60
            while server.reads < reads and time.monotonic() < deadline:
                time.sleep(0.005)
            return probe.stop(own)
        finally:
            probe.close()


def test_a_slow_wave_matches_the_programs_own_log_edge_for_edge(tmp_path, sock_dir, monkeypatch):
    own = _own(40)
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40), own, event_every=7)
    # edge k is first seen by read 100 + 20k, stamped (100 + 20k) ms + 0.25 ms on the fake clock;
    # the capture counts from its first read (0.25 ms) and is put on the program's clock
    assert capture.t_ns.tolist() == own.t_ns.tolist(), "on the program's clock, edge for edge"
    assert capture.level.tolist() == own.level.tolist() and capture.blind.shape == (0, 2)
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics == {
        "probe_resolution_ns": MS, "probe_polls_per_s": 1000, "probe_poll_p50_ns": MS,
        "probe_poll_max_ns": MS, "probe_emulated": 1, "align_matched_edges": 40,
        "align_offset_ns": GUEST0_NS - 100 * MS, "align_drift_ppm": 0, "self_lag_spread_p50_ns": 0,
        "self_lag_spread_max_ns": 0, "unobserved_edges": 0, "program_pin_watched": 1}
    assert all(m.subject == "register-poll" for m in capture.metrics)
    assert capture.warnings == (register_poll.rate_warning(1000, MS),)
    assert capture.warnings[0].message == (
        "the register-poll probe polled 1,000 times/s: edges closer than ~1ms are merged; functional "
        "evidence from an emulator, never timing evidence")


def test_a_stalled_read_is_a_blind_span_and_the_late_edge_in_it_is_left_out(tmp_path, sock_dir, monkeypatch):
    own = _own(40)
    # the monitor stalls 10 ms after read 295 (call 2 * 295 + 1): read 296 comes at 306 ms, and
    # edge 10 (at 300.5 ms) is seen 6 ms late; every later read is 10 ms later, but on the same
    # 1 ms grid, so the other edges are stamped as before
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40), own, stalls={591: 10 * MS})
    expected = own.t_ns.copy()
    expected[10] += 6 * MS
    assert capture.t_ns.tolist() == expected.tolist()
    shift = GUEST0_NS - 100 * MS  # fake clock - first read's stamp -> the program's clock
    assert capture.blind.tolist() == [[295 * MS + shift, 306 * MS + shift]]
    assert capture.series["register-poll.blind"].t_ns.tolist() == capture.blind.reshape(-1).tolist()
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["probe_poll_max_ns"] == 11 * MS and metrics["probe_poll_p50_ns"] == MS
    assert metrics["program_pin_watched"] == 1 and metrics["self_lag_spread_max_ns"] == 6 * MS
    # the blind rule leaves out the three periods that end, hold or start at the late edge (t8-t10,
    # t9-t11, t10-t12) instead of a period 15 % long
    figures = squarewave_metrics(capture.t_ns, capture.level, PERIOD_NS, warmup_ns=0, blind=capture.blind,
                                 probe="register-poll")
    got = {m.name: m.value for m in figures}
    assert (got["excluded_periods"], got["missed_edges"], got["max_rel_period_error"]) == (3, 0, 0)


def test_a_wave_that_is_not_the_programs_is_marked_so(tmp_path, sock_dir, monkeypatch):
    own = _own(40)
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40, half_ns=26 * MS), own, reads=1300)
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["program_pin_watched"] == 0 and "align_offset_ns" not in metrics
    assert any("are not the program's pin's" in w.message for w in capture.warnings)


def test_too_few_reads_per_half_period_are_warned_with_the_period_to_use(tmp_path, sock_dir, monkeypatch):
    own = _own(40)
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40), own)
    assert len(capture.warnings) == 1  # 20 reads per half period: enough
    monkeypatch.setattr(register_poll, "MIN_READS_PER_HALF_PERIOD", 25)
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40), own)
    assert capture.warnings[1].message.startswith("the register-poll probe read pl061 line 2 (0x9030010) "
                                                  "only 20 times per half period of 40ms")
    assert capture.warnings[1].remedy == "use a period >= 50ms with this probe"


def test_a_line_that_never_changed_is_unmeasurable_naming_the_options(tmp_path, sock_dir, monkeypatch):
    with pytest.raises(RunFailed, match=r"^unmeasurable: the register-poll probe read pl061 line 2 "
                       r"\(0x9030010\) \d+ times and its level stayed 0; check that pin 'gpiod' drives that "
                       r"line \(and that the board has that SoC\)$") as failed:
        _poll(tmp_path, sock_dir, monkeypatch, wave(0), _own(40), reads=50)
    assert failed.value.status == "unmeasurable"


def test_a_board_that_stops_during_the_run_fails_the_run_with_why(tmp_path, sock_dir, monkeypatch):
    with pytest.raises(RunFailed, match=r"^probes.register-poll: reading pl061 line 2 \(0x9030010\) failed "
                       r"after 30 reads: the QMP monitor at .* closed the connection while waiting for its "
                       r"answer to xp: the board stopped$"):
        _poll(tmp_path, sock_dir, monkeypatch, wave(40), _own(40), reads=30, close_after=30)


def test_a_target_without_a_monitor_is_refused_with_where_to_find_one(tmp_path):
    probe = PROBE(_ctx(tmp_path, FakeTarget(name="pi")))
    with pytest.raises(RunFailed, match=r"^probes.register-poll: target 'pi' cannot show its physical memory "
                       r"from outside .*: `jitterlab run --dry-run` names the targets that can$") as failed:
        probe.start(PinHandle("gpiod", ()))
    assert failed.value.status == "unavailable"


def test_a_board_that_is_not_running_is_told(tmp_path, sock_dir):
    probe = PROBE(_ctx(tmp_path, PolledBoard(sock_dir / "qmp.sock")))
    with pytest.raises(RunFailed, match=r"^probes.register-poll: cannot read pl061 line 2 \(0x9030010\): the "
                       r"QMP monitor at .*qmp.sock does not exist: the board is not running"):
        probe.start(PinHandle("gpiod", ()))


def test_the_campaign_check_wants_a_soc_and_a_line_it_has():
    check, cell = PROBE.check, squarewave_cell(probe="register-poll", pin="gpiod")

    def options(**given):  # a gpiod pin names a line of a chip, not of a register map: the probe's keys
        return RunSettings(options={"probes": {"register-poll": given}, "pins": {"gpiod": {"line": 2}}})

    check(cell, options(soc="imx6", line=117), Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: probes.register-poll.line: pl061 has lines 0-7, not 8$"):
        check(cell, options(soc="pl061", line=8), Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: probes.register-poll.line: pl061 line 3 belongs to "
                       r"gpio-keys \(qemu virt's power button\); drive another line$"):
        check(cell, options(soc="pl061", line=3), Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: probes.register-poll.soc: pin 'gpiod' does not say the "
                       r"SoC it drives; set it, e.g. soc = \"imx6\"$"):
        check(cell, options(), Where("c.toml", ("matrix",)))


def test_a_gpiomem_pin_says_its_soc_and_line_and_the_probes_keys_must_agree():
    check, cell = PROBE.check, squarewave_cell(probe="register-poll", pin="gpiomem")

    def options(**given):
        return RunSettings(options={"probes": {"register-poll": given},
                                    "pins": {"gpiomem": {"soc": "imx6", "line": 117}}})

    check(cell, options(), Where("c.toml", ("matrix",)))
    check(cell, options(soc="imx6", line=117), Where("c.toml", ("matrix",)))  # an older campaign's, the same
    with pytest.raises(UserError, match=r"^c.toml: probes.register-poll.soc: 'pl061' is not the SoC pin "
                       r"'gpiomem' drives \('imx6'\); remove it \(the probe reads the pin's\) or make the "
                       r"two agree$"):
        check(cell, options(soc="pl061"), Where("c.toml", ("matrix",)))
    with pytest.raises(UserError, match=r"^c.toml: probes.register-poll.line: 116 is not the register line "
                       r"pin 'gpiomem' drives \(117\)"):
        check(cell, options(line=116), Where("c.toml", ("matrix",)))


def test_it_polls_the_register_line_of_a_gpiomem_pin_without_keys_of_its_own(tmp_path, sock_dir, monkeypatch):
    own = _own(40)
    gpiomem = PinHandle("gpiomem", (BoardLine(soc=SOCS["pl061"], soc_line=2),))
    capture = _poll(tmp_path, sock_dir, monkeypatch, wave(40), own, pin=gpiomem, soc=None, line=None)
    assert capture.t_ns.tolist() == own.t_ns.tolist()
    assert {m.name: m.value for m in capture.metrics}["program_pin_watched"] == 1


def test_it_reads_each_socs_level_register_at_its_physical_address():
    """The map is the gpiomem pin's, through /dev/mem: the level register and the line's bit."""
    ctx = _ctx(Path("/tmp"), FakeTarget(), line=117, soc="imx6")
    regs, where = PROBE(ctx)._registers(PinHandle("gpiod", (BoardLine("20a8000.gpio", 21),)))
    assert (regs.base + regs.lev_reg, regs.mask) == (0x0209C000 + 3 * 0x4000, 1 << 21)
    assert where == "imx6 line 117 (0x20a8000)"
    gpiomem = PinHandle("gpiomem", (BoardLine(soc=SOCS["imx6"], soc_line=117),))  # the same, as the pin says
    assert PROBE(_ctx(Path("/tmp"), FakeTarget(), line=None, soc=None))._registers(gpiomem) == (regs, where)
    bcm = PROBE(_ctx(Path("/tmp"), FakeTarget(), line=4, soc="bcm2837"))
    regs, _ = bcm._registers(PinHandle("gpiod", ()))
    assert (regs.base + regs.lev_reg, regs.mask) == (0x3F200034, 1 << 4)


def test_it_watches_a_board_line_from_the_controller():
    assert PROBE.location == "controller" and PROBE.independent and not PROBE.needs_cpu
    assert serves(PROBE.needs, plugins.PINS.get("gpiod", "t").offers)
    assert serves(PROBE.needs, plugins.PINS.get("gpiomem", "t").offers)
    assert not serves(PROBE.needs, plugins.PINS.get("vpin", "t").offers)


def test_edges_and_gaps_of_reads_exactly():
    reads = Polls(np.array([0, 10, 20, 30, 100, 110, 200, 210, 220], dtype=np.int64),
                  np.array([1, 1, 0, 0, 1, 1, 0, 0, 1], dtype=np.uint8))
    edges = edges_of(reads)
    assert edges.t_ns.tolist() == [20, 100, 200, 220] and edges.level.tolist() == [0, 1, 0, 1]
    assert edges.initial_level == 1
    # median gap 10: the gaps of 70 and 90 are blind; two blind gaps in a row make one span
    assert blind_spans(reads).tolist() == [[30, 100], [110, 200]]
    assert blind_spans(Polls(np.array([0, 10, 50, 90, 100, 110], dtype=np.int64),
                             np.zeros(6, dtype=np.uint8)), factor=3).tolist() == [[10, 90]]
