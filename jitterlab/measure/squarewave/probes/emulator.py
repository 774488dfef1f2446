"""The emulator probe: an emulated board's GPIO output line followed from outside the board, on the
controller, in the trace the emulator writes of its GPIO controller (qemu's `pl061_set_output`
events on the `virt` machine; analysis/gpio_trace.py reads them).

The trace file grows for as long as the board runs; a run reads only what was appended between
start() and stop(). The edges are stamped by qemu with this machine's CLOCK_REALTIME to the
microsecond, when the emulated CPU's store reached the emulated controller: they show that the
program drove the pin, edge for edge, and the order and rough spacing of its edges, but the
board's timing is that of an emulator (functional evidence, never timing evidence), and every run
says so. As for the sigrok probe the edges are aligned with the program's own
(analysis/alignment.py): when they are the program's they are stored on the program's clock, with
the offset; otherwise the run is marked with program_pin_watched = 0. A program edge with no
traced edge of its level within a quarter period is counted (`unobserved_edges`) and the trace is
blind around it (a span of half a period, on the program's clock), so the periods it touches are
excluded.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from jitterlab.analysis.alignment import EMULATED_MAX_DRIFT_PPM, Alignment, align
from jitterlab.analysis.counted import COUNT_NAMES, CountCheck
from jitterlab.analysis.gpio_trace import RESOLUTION_NS, TraceEdges, known_event, parse_trace
from jitterlab.analysis.watched import pin_watched_metric
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.pins.base import PINS, PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine, TracedOutput, serves
from jitterlab.measure.squarewave.probes.aligned import ALIGNED_NAMES, Unseen, aligned_capture
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, ProbeBase, no_blind
from jitterlab.measure.squarewave.probes.bound import PIN, agreed, bound_line, declared_line, show_pins
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, integer, or_word
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.units import format_ns
from jitterlab.targets.capabilities import Capability, Declared, GpioTrace, RecordsGpioOutputs

NAME = "emulator"
CATCH_UP_S = 2.0  # how long stop() waits for the trace to show as many edges as the program logged
POLL_S = 0.05
MIN_STAMPS_PER_HALF_PERIOD = 20
EMULATED = Warning_(
    "the emulator probe's edges are an emulated GPIO controller's, stamped by the emulator: "
    "functional evidence (the program drove the pin, edge for edge), never timing evidence",
    "measure the board's timing on real hardware with an instrument (probe = \"sigrok\" or \"scpi\")")


@dataclass(frozen=True)
class EmulatorOptions(Options):
    line: int | str  # a line, or PIN: the pin's


class EmulatorProbe(ProbeBase):
    # a board's line: the target's trace, at the line the pin drives; a traced output: its own trace
    # and line (an emulated real-time unit's pin, whose emulator runs beside the target)
    needs = (BoardLine, TracedOutput)
    location = "controller"
    reads = RecordsGpioOutputs
    params = (
        Param("line", "the emulated GPIO controller's output line the pin drives (PL061: 0-7); the pin "
              "says it, and a line given here must agree", or_word(PIN, integer(0, 65535)), "2",
              default=PIN, show=show_pins),
    )
    record = EmulatorOptions
    metrics: ClassVar[tuple[str, ...]] = ("probe_resolution_ns", "probe_emulated", *ALIGNED_NAMES,
                                          *COUNT_NAMES)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._trace: GpioTrace | None = None
        self._offset = 0  # bytes of the trace written before start()
        self._line = -1  # the controller line the bound pin drives
        self._pin = ""

    @classmethod
    def _line_of(cls, options: EmulatorOptions, pin: str, wired: BoardLine,
                 where: Where) -> tuple[int, Where]:
        """The line the pin drives on the traced controller (its number in the controller's register
        map, gpiomem; else its offset on its chip, gpiod and sysfs) and the key that says it;
        `where` is any place in the source the keys are read from."""
        carried = wired.soc_line if wired.soc is not None else wired.line if wired.line >= 0 else None
        line = agreed(options.line, carried, key=where.at("probes", NAME, "line"), pin=pin,
                      what="the line", example="2")
        own = options.line != PIN
        return int(line), where.at("probes", NAME, "line") if own else where.at("pins", pin, "line")

    @classmethod
    def _declared(cls, cell: Cell, settings: RunSettings, where: Where) -> tuple[int, Where]:
        """The line the cell's pin drives, as the campaign declares it (`where` as in check), and the
        key that says it."""
        return cls._line_of(EmulatorOptions.of(cls.options_in(settings, NAME, where.at("probes", NAME))),
                            *declared_line(cell, settings), where)

    @classmethod
    def _board_line(cls, cell: Cell) -> bool:
        """True when the cell's pin is a line of the target's board (not an output traced elsewhere)."""
        return serves((BoardLine,), PINS.get(WaveCell.of_cell(cell).pin, "matrix.pin").offers)

    @classmethod
    def reads_of(cls, cell: Cell) -> type[Capability] | None:
        return cls.reads if cls._board_line(cell) else None  # a traced output brings its own trace

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        if cls._board_line(cell):
            cls._declared(cell, settings, where)
        period_ns = WaveCell.of_cell(cell).period_ns
        shortest_ns = 2 * MIN_STAMPS_PER_HALF_PERIOD * RESOLUTION_NS
        if period_ns < shortest_ns:
            raise UserError(f"{where}.period: {format_ns(period_ns)} is too short for the emulator probe: "
                            f"its {format_ns(RESOLUTION_NS)} time stamps give fewer than "
                            f"{MIN_STAMPS_PER_HALF_PERIOD} per half period; use a period >= "
                            f"{format_ns(shortest_ns)}")

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        super().check_target(cell, settings, where, target)
        traced = target.traced_gpio
        if traced is None or not cls._board_line(cell):
            return
        line, key = cls._declared(cell, settings, where)
        refused = traced.line_refusal(line)
        if refused is not None:
            raise key.error(refused)

    def start(self, pin: PinHandle) -> None:
        traced = pin.get(TracedOutput)
        if traced is not None:
            self._pin = pin.kind
            self._line = traced.line
            self._watch(traced.trace)
            return
        board = self.read_through(RecordsGpioOutputs)
        try:
            trace = board.gpio_trace()
        except UserError as exc:
            raise RunFailed(f"probes.{NAME}: {exc}", status="unavailable") from None
        try:
            options = EmulatorOptions.of(self.options())
            self._line, key = self._line_of(options, pin.kind, bound_line(pin), Where())
        except UserError as exc:
            raise RunFailed(str(exc), status="unavailable") from None
        self._pin = pin.kind
        refused = trace.block.line_refusal(self._line)
        if refused is not None:
            raise RunFailed(f"{key}: {refused}")
        self._watch(trace)

    def _watch(self, trace: GpioTrace) -> None:
        if not known_event(trace.event):
            raise RunFailed(f"probes.{NAME}: cannot read the emulator's trace event {trace.event!r} of "
                            f"{trace.block.name}: analysis/gpio_trace.py knows no such event",
                            status="unavailable")
        try:
            self._offset = trace.path.stat().st_size
        except OSError as exc:
            raise RunFailed(f"probes.{NAME}: the emulator's GPIO trace {trace.path} cannot be read "
                            f"({exc.strerror}): the board was started without tracing its "
                            f"{trace.block.name}") from None
        self._trace = trace

    def stop(self, own: SelfLog) -> Capture:
        assert self._trace is not None, "stop() before start()"
        trace, line = self._trace, self._line
        edges = self._caught_up(trace, line, len(own.t_ns) if own.timed else own.made)
        where = f"{trace.block.name} line {line}"
        if len(edges.devices) > 1:
            raise RunFailed(f"the emulator's trace holds line {line} of {len(edges.devices)} "
                            f"{trace.block.name} controllers ({', '.join(edges.devices)}); which one the pin "
                            "drives is unknown")
        if not len(edges.t_ns):
            why = (f"qemu wrote its events without time stamps ({edges.untimed} of them; it needs -msg "
                   "timestamp=on)"
                   if edges.untimed else f"the level of {where} never changed during the run")
            raise RunFailed(f"unmeasurable: the emulator traced no edge: {why}; check that pin {self._pin!r} "
                            f"drives line {line} of the traced {trace.block.name}", status="unmeasurable")
        if np.any(np.diff(edges.t_ns) < 0):
            raise RunFailed(f"the emulator's time stamps of {where} go backwards: this machine's clock "
                            "(CLOCK_REALTIME) was stepped during the run; run again (or keep NTP from "
                            "stepping the clock)")
        return self._aligned(edges, own, where)

    def _caught_up(self, trace: GpioTrace, line: int, expected: int) -> TraceEdges:
        """The edges appended since start(), once they are as many as the program logged or after
        CATCH_UP_S (qemu writes each event at once, but the run's end may overtake the last)."""
        deadline = time.monotonic() + CATCH_UP_S
        while True:
            edges = parse_trace(_appended(trace.path, self._offset), trace.event, line)
            if len(edges.t_ns) >= expected or time.monotonic() >= deadline:
                return edges
            time.sleep(POLL_S)

    def _aligned(self, edges: TraceEdges, own: SelfLog, where: str) -> Capture:
        period_ns = self.period_ns
        # the capture's clock counts from its first edge: host CLOCK_REALTIME is too large for the
        # alignment's floating-point line to keep its nanoseconds
        t_ns = edges.t_ns - int(edges.t_ns[0])
        metrics = (Metric("probe_resolution_ns", float(RESOLUTION_NS), "ns", NAME, "lower"),
                   Metric("probe_emulated", 1.0, "", NAME, "none"))
        if not own.timed:  # a unit's count of its edges: no times to align with
            return _counted(t_ns, edges.level, own, where, list(metrics))
        fit = align(t_ns, edges.level, own.t_ns, own.level, period_ns, dropped=own.dropped,
                    max_drift_ppm=EMULATED_MAX_DRIFT_PPM)

        def unseen(on_program_clock: np.ndarray) -> Unseen:
            missed = _unseen(on_program_clock, edges.level, own, fit, period_ns)
            if not len(missed):
                return Unseen(0)
            return Unseen(len(missed), _spans(own.t_ns[missed], period_ns), (Warning_(
                f"the emulator's trace of {where} shows no edge of the same level within a quarter "
                f"period ({format_ns(period_ns // 4)}) of {len(missed)} of the program's logged edges; "
                "the periods around them are excluded",
                "at short periods on an emulated CPU the write can come that long after the program's "
                "timestamp (its vCPU descheduled); else look for a trace cut short (disk full) or "
                "another writer of the line"),))

        return aligned_capture(
            NAME, t_ns, edges.level, fit, edges=f"the emulator's edges on {where}",
            fix=f"check that pin {self._pin!r} drives this line of the traced controller (its chip)",
            metrics=metrics, warnings=(EMULATED,), unseen=unseen)


def _counted(t_ns: np.ndarray, level: np.ndarray, own: SelfLog, where: str, metrics: list[Metric]) -> Capture:
    """The trace, on its own clock, checked against the edges the unit counted."""
    check = CountCheck(own.made, len(t_ns))
    metrics += check.metrics(NAME)
    warnings = [EMULATED]
    difference = check.difference()
    if difference is not None:
        warnings.append(Warning_(
            f"the emulator's trace of {where} does not hold the unit's edges: {difference}",
            "check that the unit's firmware drives the traced line; a trace cut short (disk full) loses "
            "edges"))
    metrics.append(pin_watched_metric(NAME, check.watched))
    return Capture(t_ns, level, metrics=tuple(metrics), warnings=tuple(warnings))


def _appended(path: Path, offset: int) -> bytes:
    """What was written to `path` from `offset` on, from the first whole line (start() may have
    found a line half written)."""
    try:
        with open(path, "rb") as f:
            f.seek(max(offset - 1, 0))
            data = f.read()
    except OSError as exc:
        raise RunFailed(f"the emulator's GPIO trace {path} cannot be read ({exc.strerror})") from None
    if offset == 0 or data[:1] == b"\n":
        return data if offset == 0 else data[1:]
    newline = data.find(b"\n")  # the rest of a line begun before start()
    return data[newline + 1:] if newline >= 0 else b""


def _unseen(t_ns: np.ndarray, level: np.ndarray, own: SelfLog, fit: Alignment, period_ns: int) -> np.ndarray:
    """Indexes of the program's edges with no traced edge of the same level within a quarter period
    of where the clock line puts it (t_ns on the program's clock, offset applied)."""
    own_t = own.t_ns.astype(np.int64)
    drift = fit.drift_ppm / 1e6 * (own_t - own_t[0]) if np.isfinite(fit.drift_ppm) else 0.0
    want = own_t - np.round(drift).astype(np.int64)
    seen = np.zeros(len(own_t), dtype=bool)
    for lv in (0, 1):
        mine, theirs = np.flatnonzero(own.level == lv), t_ns[level == lv]
        if not len(mine) or not len(theirs):
            continue
        pos = np.searchsorted(theirs, want[mine])
        before = theirs[np.clip(pos - 1, 0, len(theirs) - 1)]
        after = theirs[np.clip(pos, 0, len(theirs) - 1)]
        nearest = np.minimum(np.abs(want[mine] - before), np.abs(after - want[mine]))
        seen[mine] = nearest <= period_ns // 4
    return np.flatnonzero(~seen)


def _spans(unseen_ns: np.ndarray, period_ns: int) -> np.ndarray:
    """Blind spans of a quarter period on each side of the program's unseen edges, merged."""
    if not len(unseen_ns):
        return no_blind()
    quarter = period_ns // 4
    spans: list[list[int]] = []
    for t in np.sort(unseen_ns).tolist():
        if spans and t - quarter <= spans[-1][1]:
            spans[-1][1] = t + quarter
        else:
            spans.append([t - quarter, t + quarter])
    return np.array(spans, dtype=np.int64)


PROBES.add(
    NAME,
    "an emulated board's GPIO output, followed on the controller in the emulator's trace (qemu's PL061 "
    "on virt); 1us stamps, aligned with the program's own; functional evidence, never timing",
    EmulatorProbe,
)
