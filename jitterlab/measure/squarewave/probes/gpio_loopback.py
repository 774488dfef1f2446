"""The gpio-loopback probe: a second GPIO line of the same board, wired to the output pin, is
requested as an input with edge events; the kernel timestamps every edge in its interrupt path
(jitterlab/programs/c/gpio_watch.c). Cheaper than an instrument, independent of the program's own
clock reads, and it needs no CPU of its own, so it works on a single-core board.

What it measures is the edge as the kernel's GPIO interrupt saw it: the interrupt latency of the
input line adds to each timestamp (about constant on an idle board, so periods are little
affected; under load it is part of the error, as for any probe on the target).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.chips import explain, find_chip
from jitterlab.measure.squarewave.pins.offers import BoardLine
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, ProbeBase
from jitterlab.measure.squarewave.probes.logs import SelfLog, read_capture, read_json_stats
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, choice, integer
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import blind_series
from jitterlab.targets.processes import RecordedProcess, spawn_recorded, wait_for_path

STATS_KEYS = frozenset({"events", "edges", "lost_events", "same_polarity", "overflow_edges",
                        "blind_intervals", "clock"})
READY_TIMEOUT_S = 10.0
EXIT_BUSY = 4


def _chip(value: object, where: str):
    if isinstance(value, str):
        return value
    raise UserError(f'{where}: expected a chip name or label (or "" for the output pin\'s chip), '
                    f"got {value!r}")


@dataclass(frozen=True)
class LoopbackOptions(Options):
    line: int
    chip: str
    clock: str


class GpioLoopbackProbe(ProbeBase):
    needs = (BoardLine,)
    location = "target"
    programs: ClassVar[dict[str, str]] = {"gpio-watch": ""}
    metrics: ClassVar[tuple[str, ...]] = ("probe_lost_events", "probe_same_polarity_events",
                                          "probe_overflow_edges", "unobserved_edges")
    params = (
        Param("line", "the input line wired to the output pin (offset on `chip`)", integer(0, 65535), "18"),
        Param("chip", 'its chip: label, gpiochipN or /dev/gpiochipN ("": the output pin\'s chip)', _chip,
              '"gpiochip0"', default=""),
        Param("clock", "timestamps: monotonic (like the program's), realtime, or hte (a hardware "
              "timestamp engine, where the SoC has one)", choice("monotonic", "realtime", "hte"),
              '"hte"', default="monotonic"),
    )
    record = LoopbackOptions

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._proc: RecordedProcess | None = None
        self._files = {k: f"{ctx.scratch}/watch.{k}" for k in ("bin", "json", "ready", "log")}

    @classmethod
    def check(cls, cell, settings, where: Where) -> None:
        cls.validate(settings.options_of("probes", "gpio-loopback"), where.at("probes", "gpio-loopback"))

    def start(self, pin: PinHandle) -> None:
        opts, wired = LoopbackOptions.of(self.options()), pin.get(BoardLine) or BoardLine()
        chip_name = opts.chip or wired.chip_label
        if not chip_name:
            raise RunFailed("probes.gpio-loopback.chip: the pin does not say its chip; set chip",
                            status="unavailable")
        line = opts.line
        chip = find_chip(self.ctx.target, chip_name, line, "probes.gpio-loopback", self.ctx.read_once)
        if chip.label == wired.chip_label and line == wired.line:
            raise RunFailed("probes.gpio-loopback.line: the input line is the output line itself; wire "
                            "another line to the pin and name it", status="unavailable")
        settings = self.ctx.settings
        argv = [f"{self.ctx.bindir}/c/gpio-watch", "--chip", chip.device, "--line", str(line),
                "--out", self._files["bin"], "--stats", self._files["json"], "--ready", self._files["ready"],
                "--max-duration-ns", str(settings.duration_ns + settings.run_timeout_ns),
                "--max-edges", str(4 * settings.duration_ns // max(self.period_ns, 1)
                                   + 65_536), "--clock", opts.clock]
        self._proc = spawn_recorded(self.ctx.target, argv, log_path=self._files["log"])
        if not wait_for_path(self.ctx.target, self._files["ready"], READY_TIMEOUT_S, alive=self._proc):
            rc = self._proc.stop()
            said = self.ctx.target.run(["cat", self._files["log"]]).stdout.strip()
            raise RunFailed(explain(said, f"probes.gpio-loopback: {chip.device} line {line}"),
                            status="unavailable" if rc in (1, EXIT_BUSY) else "failed")

    def stop(self, own: SelfLog) -> Capture:
        assert self._proc is not None, "stop() before start()"
        self._proc.stop(grace_s=5.0)
        local = {k: self.ctx.local_dir / f"watch.{k}" for k in ("bin", "json")}
        try:
            for k in ("bin", "json"):
                self.ctx.target.get(self._files[k], local[k])
        except OSError as exc:
            tail = self.ctx.target.run(["tail", "-n", "3", self._files["log"]]).stdout.strip()
            raise RunFailed(f"the gpio-loopback probe left no capture ({exc}): "
                            f"{tail or '(no output)'}") from None
        t_ns, level, blind = read_capture(local["bin"], "gpio-loopback capture")
        stats = read_json_stats(local["json"], STATS_KEYS, "gpio-loopback stats")
        lost = int(stats["lost_events"]) + int(stats["same_polarity"])
        metrics = (
            Metric("probe_lost_events", float(stats["lost_events"]), "count", "gpio-loopback", "lower"),
            Metric("probe_same_polarity_events", float(stats["same_polarity"]), "count", "gpio-loopback",
                   "lower"),
            Metric("probe_overflow_edges", float(stats["overflow_edges"]), "count", "gpio-loopback", "lower"),
            Metric("unobserved_edges", float(max(0, len(own.t_ns) - len(t_ns))), "count", "gpio-loopback",
                   "lower"),
        )
        warnings = []
        if lost:
            warnings.append(Warning_(
                f"the gpio-loopback probe lost {lost} edge events (kernel event buffer or interrupt "
                "latency); the periods around them were excluded",
                "lengthen the period, or raise the priority of the GPIO interrupt thread (PREEMPT_RT)"))
        if stats["clock"] != "monotonic":
            warnings.append(Warning_(
                f"gpio-loopback timestamps are CLOCK_{str(stats['clock']).upper()}, not the program's clock",
                "compare its periods, not its edge times, with the self probe"))
        return Capture(t_ns, level, blind, metrics=metrics, warnings=tuple(warnings),
                       series={"gpio-loopback.blind": blind_series(blind)})

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=1.0)


PROBES.add(
    "gpio-loopback",
    "a second GPIO line wired to the pin, edges timestamped by the kernel (no CPU of its own): "
    "[probes.gpio-loopback] line, chip, clock",
    GpioLoopbackProbe,
)
