"""The register-poll probe: an emulated board's GPIO line followed from outside the board, on the
controller, by reading the level register of its GPIO block through the emulator's monitor (qemu's
QMP, `xp`) as fast as the monitor answers, in a thread (probes/polls.py).

For SoCs whose GPIO controller qemu does not trace (i.MX6 `sabrelite`, BCM283x `raspi3b`), and on
`virt`'s PL061 too. The register map is the gpiomem pin's (model/socs.py, the block at its physical
address); which SoC and line, the pin the probe is bound to says when it drives those registers
(gpiomem), [probes.register-poll] soc and line when it names a line of a chip (gpiod, sysfs). Each
read takes qemu's big lock, so the rate is modest (about 2,000 reads/s on an idle `virt` board
here, fewer on a busy or slow one): edges closer than an interval between reads are merged, a
pulse shorter than one may be missed, and the rate is stated with every run. As for the sigrok
probe the edges are aligned with the program's own (analysis/alignment.py): when they are the
program's they are stored on the program's clock with the offset, otherwise the run is marked with
program_pin_watched = 0. The board's timing is an emulator's: functional evidence, never timing
evidence, and every run says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from jitterlab.analysis.alignment import EMULATED_MAX_DRIFT_PPM, align
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import BoardLine
from jitterlab.measure.squarewave.probes.aligned import ALIGNED_NAMES, Unseen, aligned_capture
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, ProbeBase
from jitterlab.measure.squarewave.probes.bound import PIN, agreed, bound_line, declared_line, show_pins
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.measure.squarewave.probes.polls import (
    PollEdges,
    Poller,
    Polls,
    blind_spans,
    edges_of,
    intervals_ns,
)
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options
from jitterlab.model.params import Param, choice, integer, or_word
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.socs import SOCS, Registers, Soc
from jitterlab.model.units import format_ns
from jitterlab.targets.capabilities import Declared, ExaminesMemory, MemoryUnreadable, WordReader

NAME = "register-poll"
# the names poll_metrics gives, in its order
POLL_NAMES = ("probe_resolution_ns", "probe_polls_per_s", "probe_poll_p50_ns", "probe_poll_max_ns",
              "probe_emulated")
MIN_READS_PER_HALF_PERIOD = 10
CONNECT_TIMEOUT_S = 5.0  # for the first read


@dataclass(frozen=True)
class Watched:
    """The register line the probe reads, and the keys that say its SoC and line (in errors)."""

    soc: Soc
    line: int
    soc_key: Where
    line_key: Where


@dataclass(frozen=True)
class PollOptions(Options):
    soc: str  # a SoC's name, or PIN: the pin's
    line: int | str  # a line, or PIN: the pin's


class RegisterPollProbe(ProbeBase):
    needs = (BoardLine,)
    location = "controller"
    reads = ExaminesMemory
    metrics: ClassVar[tuple[str, ...]] = (*POLL_NAMES, *ALIGNED_NAMES)
    params = (
        Param("soc", "the emulated SoC's GPIO register map: " + ", ".join(SOCS) + "; a gpiomem pin says it, "
              "and a value given here must agree", or_word(PIN, choice(*SOCS)), '"imx6"', default=PIN,
              show=show_pins),
        Param("line", "the line, numbered as for pins.gpiomem (0-7 on PL061, 32 * (bank - 1) + bit on "
              "i.MX6, the BCM GPIO number on BCM283x); a gpiomem pin says it, and a value given here must "
              "agree", or_word(PIN, integer(0, 65535)), "2", default=PIN, show=show_pins),
    )
    record = PollOptions

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._reader: WordReader | None = None
        self._poller: Poller | None = None
        self._where = ""  # "pl061 line 2 (0x9030010)"
        self._pin = ""

    @classmethod
    def _watched(cls, options: PollOptions, pin: str, wired: BoardLine, where: Where) -> Watched:
        """The register line pin `pin` drives (`wired`: what it says of its line), the probe's keys
        agreeing; `where` is any place in the source the keys are read from. A pin that drives the
        registers (gpiomem) says its SoC and line; another one (gpiod, sysfs) leaves them to the
        probe's keys."""
        said = wired.soc
        name = agreed(options.soc, said.name if said else None, key=where.at("probes", NAME, "soc"),
                      pin=pin, what="the SoC", example='"imx6"')
        line = agreed(options.line, wired.soc_line if said else None, key=where.at("probes", NAME, "line"),
                      pin=pin, what="the register line", example="2 (numbered as for pins.gpiomem)")
        keys = [where.at("probes", NAME, k) if given != PIN else where.at("pins", pin, k)
                for k, given in (("soc", options.soc), ("line", options.line))]
        # the pin's register map, else the one the key names (a choice of SOCS, checked when read)
        return Watched(said or SOCS[str(name)], int(line), *keys)

    @classmethod
    def _declared(cls, cell: Cell, settings: RunSettings, where: Where) -> Watched:
        return cls._watched(PollOptions.of(cls.options_in(settings, NAME, where.at("probes", NAME))),
                            *declared_line(cell, settings), where)

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        watched = cls._declared(cell, settings, where)
        refused = watched.soc.line_refusal(watched.line)
        if refused is not None:
            raise watched.line_key.error(refused)

    @classmethod
    def check_target(cls, cell: Cell, settings: RunSettings, where: Where, target: Declared) -> None:
        super().check_target(cell, settings, where, target)
        watched = cls._declared(cell, settings, where)
        target.need_soc(watched.soc, watched.soc_key)

    def _registers(self, pin: PinHandle) -> tuple[Registers, str]:
        """The level register of the line the pin drives, at its physical address, and its name."""
        try:
            watched = self._watched(PollOptions.of(self.options()), pin.kind, bound_line(pin), Where())
        except UserError as exc:
            raise RunFailed(str(exc), status="unavailable") from None
        regs = watched.soc.registers(watched.line, "/dev/mem")  # the block at its physical address
        return regs, f"{watched.soc.name} line {watched.line} ({regs.base + regs.lev_reg:#x})"

    def start(self, pin: PinHandle) -> None:
        board = self.read_through(ExaminesMemory)
        regs, self._where = self._registers(pin)
        self._pin = pin.kind
        try:
            self._reader = board.word_reader(regs.base + regs.lev_reg)
            self._poller = Poller(self._reader, regs.mask)
            self._poller.start(CONNECT_TIMEOUT_S)
        except (MemoryUnreadable, TimeoutError) as exc:
            self.close()
            raise RunFailed(f"probes.{NAME}: cannot read {self._where}: {exc}") from None

    def stop(self, own: SelfLog) -> Capture:
        assert self._poller is not None, "stop() before start()"
        try:
            polls = self._poller.stop()
        except (MemoryUnreadable, TimeoutError) as exc:
            raise RunFailed(f"probes.{NAME}: reading {self._where} failed after {self._poller.reads} reads: "
                            f"{exc}") from None
        finally:
            self.close()
        edges = edges_of(polls)
        if not len(edges.t_ns):
            raise RunFailed(
                f"unmeasurable: the register-poll probe read {self._where} {len(polls.t_ns)} times and its "
                f"level stayed {edges.initial_level}; check that pin {self._pin!r} drives that line (and "
                "that the board has that SoC)", status="unmeasurable")
        return self._aligned(polls, edges, own)

    def _aligned(self, polls: Polls, edges: PollEdges, own: SelfLog) -> Capture:
        period_ns = self.period_ns
        metrics, rate, mean_ns = poll_metrics(polls)
        base_ns = int(polls.t_ns[0])  # the capture's clock counts from its first read
        t_ns, level = edges.t_ns - base_ns, edges.level
        blind = blind_spans(polls) - base_ns
        warnings = [rate_warning(rate, mean_ns)]
        if mean_ns * 2 * MIN_READS_PER_HALF_PERIOD > period_ns:
            warnings.append(Warning_(
                f"the register-poll probe read {self._where} only {period_ns / 2 / mean_ns:.3g} times per "
                f"half period of {format_ns(period_ns)}: edges are stamped up to {format_ns(mean_ns, 3)} "
                "early and short pulses are lost",
                f"use a period >= {format_ns(2 * MIN_READS_PER_HALF_PERIOD * mean_ns, 3)} with this probe"))
        fit = align(t_ns, level, own.t_ns, own.level, period_ns, dropped=own.dropped,
                    max_drift_ppm=EMULATED_MAX_DRIFT_PPM)
        return aligned_capture(
            NAME, t_ns, level, fit, edges=f"the register-poll edges of {self._where}",
            fix=f"check that pin {self._pin!r} drives this register line", blind=blind,
            metrics=metrics, warnings=warnings, unseen=lambda _t_ns: Unseen(fit.program_edges - fit.matched))

    def close(self) -> None:
        if self._poller is not None:
            self._poller.close()
        if self._reader is not None:
            self._reader.close()
            self._reader = None


def poll_metrics(polls: Polls) -> tuple[list[Metric], float, float]:
    """The probe's own figures (resolution = the mean interval between reads), its reads per second
    and that mean interval in ns."""
    gaps = intervals_ns(polls)
    if not len(gaps):
        raise RunFailed(f"unmeasurable: the {NAME} probe read the register only {len(polls.t_ns)} time(s)",
                        status="unmeasurable")
    span_ns = int(polls.t_ns[-1] - polls.t_ns[0])
    mean_ns = span_ns / len(gaps)
    rate = 1e9 / mean_ns if mean_ns > 0 else 0.0
    resolution, polls_per_s, poll_p50, poll_max, emulated = POLL_NAMES
    return [
        Metric(resolution, mean_ns, "ns", NAME, "lower"),
        Metric(polls_per_s, rate, "reads/s", NAME, "higher"),
        Metric(poll_p50, float(np.median(gaps)), "ns", NAME, "lower"),
        Metric(poll_max, float(gaps.max()), "ns", NAME, "lower"),
        Metric(emulated, 1.0, "", NAME, "none"),
    ], rate, mean_ns


def rate_warning(rate: float, mean_ns: float) -> Warning_:
    """What every run of this probe says of itself."""
    return Warning_(
        f"the register-poll probe polled {rate:,.0f} times/s: edges closer than ~{format_ns(mean_ns, 3)} are "
        "merged; functional evidence from an emulator, never timing evidence",
        'measure the board\'s timing on real hardware with an instrument (probe = "sigrok" or "scpi")')


PROBES.add(
    NAME,
    "an emulated board's GPIO level register read over the emulator's monitor (QMP xp) as fast as it "
    "answers; the register line a gpiomem pin drives, or [probes.register-poll] soc, line; functional "
    "evidence, never timing",
    RegisterPollProbe,
)
