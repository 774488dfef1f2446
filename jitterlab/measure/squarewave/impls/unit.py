"""The unit impl: the wave is made by a real-time unit beside Linux (a Cortex-M core of the SoC, an
MCU on a serial line, or one qemu emulates), from its own timer interrupt, on its own pin (pin
"unit"); Linux only commands it. Its program on the target (programs/c/unit_ctl.c, the same on a
board and beside an emulator) syncs with the unit, sets the period, starts, waits the run's
duration, stops, and logs the unit's count of its edges, which the outside probe's edges are
checked against (analysis/counted.py): the firmware timestamps nothing, so the self probe is
refused. With [pins.unit] chatter, it also exchanges a message with the unit at that interval and
times each round trip (chatter_rtt_*_ns): what a load on Linux does to talking with the unit, the
one way Linux's load reaches its wave.

Each run also records the firmware's size (unit_flash_bytes = text + data, unit_ram_bytes = data +
bss) of the ELF that was loaded, and whether the unit was emulated (unit_emulated: host-timed
emulation, functional evidence only)."""

from __future__ import annotations

from jitterlab.analysis.chatter import CHATTER_NAMES, chatter_metrics, parse_chatter
from jitterlab.measure.context import RunContext
from jitterlab.measure.squarewave.impls.base import IMPLS, ImplBase, bound, common_flags, run_program
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import Forms
from jitterlab.measure.squarewave.pins.unit import UnitLine
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric, Warning_
from jitterlab.targets.processes import pinned

NAME = "unit"
PROGRAM = "unit-ctl"
CHATTER_LOG = "chatter.log"
EMULATED = Warning_(
    "the unit is emulated (qemu TCG, timed by this machine's clock): its wave is functional evidence "
    "(the firmware made every edge the probe saw), never timing evidence",
    "measure a real unit (unit.kind = \"remoteproc\" or \"serial\") with an instrument (sigrok, scpi)")


class UnitImpl(ImplBase):
    needs: Forms = (UnitLine,)
    realtime = False  # the wave is the unit's: Linux's scheduling reaches it only through the messages
    timestamps = False
    metrics = ("unit_flash_bytes", "unit_ram_bytes", "unit_emulated", *CHATTER_NAMES)

    def tools(self) -> dict[str, str]:
        return {}

    def programs(self) -> dict[str, str]:
        return {PROGRAM: ""}

    def prepare(self, ctx: RunContext) -> None:
        return None  # the pin's setup loaded the unit

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        line = bound(ctx, self.needs, pin)
        assert isinstance(line, UnitLine)
        chatter = (["--chatter-ns", str(line.chatter_ns), "--chatter", f"{ctx.scratch}/{CHATTER_LOG}"]
                   if line.chatter_ns else [])
        argv = [*pinned(ctx.placement.program_cpus), f"{ctx.bindir}/c/{PROGRAM}", *common_flags(ctx, line),
                *chatter]
        return run_program(ctx, NAME, argv)

    def measured(self, ctx: RunContext, pin: PinHandle, output: str) -> tuple[list[Metric], list[Warning_]]:
        line = pin.get(UnitLine)
        assert line is not None
        metrics = [Metric(name, float(line.facts[name]), "bytes", "", "lower")
                   for name in ("unit_flash_bytes", "unit_ram_bytes") if name in line.facts]
        emulated = line.facts.get("unit_accel") == "tcg"
        metrics.append(Metric("unit_emulated", 1.0 if emulated else 0.0, "", "", "none"))
        warnings = [EMULATED] if emulated else []
        if "unit_replaced" in line.facts:
            warnings.append(Warning_(
                f"the unit's core ran {line.facts['unit_replaced']} before the campaign: jitterlab stopped "
                "it for its runs and starts it again with that firmware when the target closes",
                "set unit.replace = false in the [[target]] to leave a busy core alone"))
        if line.chatter_ns:
            local = ctx.local_dir / CHATTER_LOG
            try:
                ctx.target.get(f"{ctx.scratch}/{CHATTER_LOG}", local)
            except OSError:
                raise RunFailed(f"{PROGRAM} wrote no chatter log; its output: {output}") from None
            metrics += chatter_metrics(*parse_chatter(local.read_text(), f"chatter log {local}"))
        return metrics, warnings


IMPLS.add(
    NAME,
    "firmware on a real-time unit beside Linux (pin unit): its timer interrupt toggles the unit's pin; "
    "Linux starts and stops it over a tty and counts on the unit's edge count",
    UnitImpl(),
)
