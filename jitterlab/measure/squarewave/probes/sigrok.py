"""The sigrok probe: a logic analyzer plugged in to the controller, driven by sigrok-cli.

The capture runs on the controller for the program's run plus a margin on each side, as a fixed
number of samples streamed to a raw file (sigrok's "binary" output), so it ends by itself and a
capture cut short is recognised by its length. The file is decoded in blocks with numpy
(analysis/logic.py) and the edges are aligned with the program's own edges (the offset between
the analyzer's clock and the program's is stored with the metrics, as is the resolution). The
alignment also says whether the edges are the program's at all (analysis/alignment.py): when they
are not, or the pin is "external", the run is stored with program_pin_watched = 0 and a warning,
and no clock offset.

Channels 0..k of the device are enabled, k being the wanted one: then the channel is bit k of each
sample whether the driver packs enabled channels densely (libsigrok 0.5) or keeps every channel at
its index (later versions).

With driver = "demo" there is no hardware: sigrok's demo device counts up by one per sample on
D0..D7 (pattern "incremental"), so Dn is a perfect square wave of 2^(n+1) samples. That wave is
not the program's: such a cell needs pin = "external", which says so.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from jitterlab.analysis.alignment import align
from jitterlab.analysis.counted import COUNT_NAMES, CountCheck
from jitterlab.analysis.logic import decode_binary, edges_ns, frequency_hz
from jitterlab.analysis.watched import pin_watched_metric
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.pins.base import PINS, PinHandle
from jitterlab.measure.squarewave.pins.offers import InstrumentInput, OutsideSignal, serves
from jitterlab.measure.squarewave.probes.aligned import ALIGNED_NAMES, aligned_capture
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, Instruments, ProbeBase
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, duration, text
from jitterlab.model.records import Cell, Metric, RunSettings, Warning_
from jitterlab.model.units import format_ns
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.processes import RecordedProcess, describe_exit, spawn_recorded

MIN_SAMPLES_PER_HALF_PERIOD = 20
DEMO_RATE_HZ = 200_000  # the demo device's own rate, which sigrok-cli cannot change with a pattern set
_SCAN_LINE = re.compile(r"^(\S+) - .* with \d+ channels?: (.+)$", re.M)


def _rate(value: object, where: str) -> int:
    hz = frequency_hz(value)  # type: ignore[arg-type]
    if hz is None:
        raise UserError(f'{where}: cannot read rate {value!r}; write e.g. "24MHz", "500kHz" or 1000000')
    return hz


def _optional_text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise UserError(f"{where}: expected a string, got {value!r}")
    return value


def format_rate(hz: int) -> str:
    for unit, factor in (("GHz", 10**9), ("MHz", 10**6), ("kHz", 10**3)):
        if hz >= factor and hz % (factor // 1000 or 1) == 0:
            return f"{hz / factor:g}{unit}"
    return f"{hz}Hz"


@dataclass(frozen=True)
class SigrokOptions(Options):
    driver: str
    conn: str
    channel: str
    samplerate_hz: int = key("samplerate")
    margin_ns: int = key("margin")


def device_spec(options: SigrokOptions) -> str:
    """sigrok-cli's --driver argument: the driver, with its conn string when one is given."""
    return f"{options.driver}:conn={options.conn}" if options.conn else options.driver


def demo_period_ns(channel: str, rate_hz: int) -> int | None:
    """The period of the demo device's incremental pattern on `channel` (None: no such channel)."""
    match = re.fullmatch(r"D([0-7])", channel)
    return None if match is None else (2 ** (int(match.group(1)) + 1)) * 1_000_000_000 // rate_hz


def classify(log: str, spec: str) -> str:
    """What sigrok-cli's output says went wrong, with the fix."""
    low = log.lower()
    if "no devices found" in low:
        return (f"no {spec} device found: plug the analyzer in to this machine (the controller), allow "
                "access (sigrok's udev rules, group plugdev), or check probes.sigrok.driver / conn")
    if "busy" in low or "claim" in low:
        return (f"the {spec} analyzer is busy: another program (PulseView, a second sigrok-cli) holds it; "
                "close it")
    if "access" in low or "permission" in low:
        return (f"no permission to open the {spec} analyzer: install sigrok's udev rules (libsigrok4) and "
                "add your user to group plugdev, or run as root")
    if "failed to set" in low or "cannot set" in low:
        return (f"the {spec} analyzer refused an option ({_last_line(log)}): check probes.sigrok.samplerate "
                f"against `sigrok-cli --driver {spec} --show`")
    if "driver" in low and "not found" in low:
        return f"sigrok knows no driver {spec!r}: see `sigrok-cli --list-supported`"
    return f"sigrok-cli said: {_last_line(log)}"


def _last_line(log: str) -> str:
    lines = [line.strip() for line in log.splitlines() if line.strip()]
    return lines[-1] if lines else "(nothing)"


class SigrokProbe(ProbeBase):
    needs = (InstrumentInput,)
    location = "controller"
    params = (
        Param("driver", 'the analyzer\'s sigrok driver ("fx2lafw", "saleae-logic16", "raspberrypi-pico", '
              '...); "demo" needs no hardware', text, '"fx2lafw"', default="fx2lafw"),
        Param("conn", "sigrok connection string when several analyzers are plugged in (e.g. a USB "
              "bus.address); empty: the first found", _optional_text, '"1.6"', default=""),
        Param("channel", "the analyzer channel wired to the pin", text, '"D0"', default="D0"),
        Param("samplerate", "samples per second (resolution = 1/samplerate)", _rate, '"24MHz"',
              default="24MHz", show=lambda v: format_rate(int(v))),
        Param("margin", "capture this long before and after the program's run", duration(1_000_000),
              '"1s"', default="1s", show=format_ns),
    )
    controller_tools: ClassVar[dict[str, str]] = {"sigrok-cli": "sigrok-cli"}
    metrics: ClassVar[tuple[str, ...]] = ("probe_resolution_ns", *ALIGNED_NAMES, *COUNT_NAMES)
    record = SigrokOptions

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._proc: RecordedProcess | None = None
        self._out: Path = ctx.local_dir / "sigrok.bin"
        self._log: Path = ctx.local_dir / "sigrok.log"
        self._plan: dict = {}
        self._outside = ""  # the pin's kind when the analyzer watches an outside signal, not the program

    @classmethod
    def instruments(cls, controller: Target) -> Instruments:
        """The analyzers sigrok-cli finds here; the probe is usable with one that is no simulator."""
        topic = "logic analyzers"
        if not controller.run(["sh", "-c", 'command -v "$1"', "sh", "sigrok-cli"]).ok:
            return Instruments(topic, "sigrok-cli is not installed here (apt install sigrok-cli to use an "
                               "analyzer)", False)
        found = scan_devices(controller)
        return Instruments(topic, analyzers_text(found), any(not _simulated(line) for line in found))

    @classmethod
    def check(cls, cell: Cell, settings: RunSettings, where: Where) -> None:
        table = where.at("probes", "sigrok")
        options = SigrokOptions.of(cls.options_in(settings, "sigrok", table))
        rate, period_ns = options.samplerate_hz, WaveCell.of_cell(cell).period_ns
        if options.driver == "demo":
            cls._check_demo(cell, options, table, where)
        if rate * period_ns < 2 * MIN_SAMPLES_PER_HALF_PERIOD * 1_000_000_000:
            need = -(-2 * MIN_SAMPLES_PER_HALF_PERIOD * 1_000_000_000 // period_ns)
            raise table.key("samplerate").error(
                f"{format_rate(rate)} takes "
                f"{rate * period_ns / 2e9:g} samples per half period of {format_ns(period_ns)}, fewer than "
                f"{MIN_SAMPLES_PER_HALF_PERIOD}; use samplerate >= {format_rate(need)} or a period >= "
                f"{format_ns(-(-2 * MIN_SAMPLES_PER_HALF_PERIOD * 1_000_000_000 // rate))}"
            )

    @staticmethod
    def _check_demo(cell: Cell, options: SigrokOptions, table: Where, where: Where) -> None:
        wave = WaveCell.of_cell(cell)
        if not serves((OutsideSignal,), PINS.get(wave.pin, f"{where}.pin").offers):
            outside = " or ".join(f'"{e.name}"' for e in PINS if serves((OutsideSignal,), e.obj.offers))
            raise UserError(
                f"{where}.pin: driver \"demo\" captures sigrok's own test pattern, not pin "
                f"{wave.pin!r}; use pin = {outside}, which says so"
            )
        if options.samplerate_hz != DEMO_RATE_HZ:
            rate_text = format_rate(DEMO_RATE_HZ)
            raise table.key("samplerate").error(f'the demo device makes its pattern at {rate_text}; '
                                                f'set samplerate = "{rate_text}"')
        period = demo_period_ns(options.channel, DEMO_RATE_HZ)
        if period is None:
            raise table.key("channel").error(f'the demo pattern is on D0..D7, not {options.channel!r}')
        if wave.period_ns != period:
            raise UserError(f"{where}.period: the demo pattern on {options.channel} has a period of "
                            f"{format_ns(period)}; set period = \"{format_ns(period)}\" (or another channel)")

    def _controller(self) -> Target:
        return self.ctx.controller if self.ctx.controller is not None else self.ctx.target

    def start(self, pin: PinHandle) -> None:
        self._outside = pin.kind if pin.get(OutsideSignal) is not None else ""
        options, settings = SigrokOptions.of(self.options()), self.ctx.settings
        controller, spec = self._controller(), device_spec(options)
        found = controller.run(["sh", "-c", 'command -v "$1"', "sh", "sigrok-cli"], timeout_s=30)
        if not found.ok:
            raise RunFailed("sigrok-cli is missing on the controller (this machine): apt install sigrok-cli",
                            status="unavailable")
        scan = controller.run(["sigrok-cli", "--driver", spec, "--scan"], timeout_s=60)
        channels = _scan_channels(scan.stdout)
        if not channels:
            raise RunFailed(classify(scan.stdout + scan.stderr or "No devices found.", spec))
        channel = options.channel
        if channel not in channels:
            raise RunFailed(f"the {spec} analyzer has no channel {channel!r} (probes.sigrok.channel); "
                            f"it has {', '.join(channels)}")
        rate, k = options.samplerate_hz, channels.index(channel)
        if options.driver == "demo":
            got = controller.run(["sigrok-cli", "--driver", spec, "--get", "samplerate"], timeout_s=30)
            if got.stdout.strip() != str(rate):
                raise RunFailed(f"the demo device runs at {got.stdout.strip() or '?'} Hz, not {rate}: this "
                                "sigrok version changed its default; set probes.sigrok.samplerate to it")
            config = ["--channel-group", "Logic", "--config", "pattern=incremental"]
        else:
            config = ["--config", f"samplerate={rate}"]
        margin_ns = options.margin_ns
        n_samples = rate * (2 * margin_ns + settings.duration_ns) // 1_000_000_000
        argv = ["sigrok-cli", "--driver", spec, *config, "--channels", ",".join(channels[: k + 1]),
                "--samples", str(n_samples), "--output-format", "binary", "--output-file", str(self._out)]
        self._plan = {"rate": rate, "bit": k, "unitsize": k // 8 + 1, "n": n_samples, "spec": spec,
                      "channel": channel, "margin_ns": margin_ns,
                      "deadline": time.monotonic() + n_samples / rate + 30 + 2 * margin_ns / 1e9}
        self._proc = spawn_recorded(controller, argv, log_path=str(self._log))
        self._wait_for_samples(spec, time.monotonic() + 10 + margin_ns / 1e9)
        time.sleep(margin_ns / 1e9)  # the margin before the program's first edge

    def _wait_for_samples(self, spec: str, deadline: float) -> None:
        assert self._proc is not None
        while time.monotonic() < deadline:
            if self._out.exists() and self._out.stat().st_size > 0:
                return
            if self._proc.poll() is not None:
                rc = self._proc.stop()
                raise RunFailed(f"sigrok-cli ended before capturing ({describe_exit(rc)}): "
                                f"{classify(self._log_text(), spec)}")
            time.sleep(0.02)
        self._proc.stop()
        raise RunFailed(f"the {spec} analyzer sent no sample within 10s: {classify(self._log_text(), spec)}")

    def stop(self, own: SelfLog) -> Capture:
        assert self._proc is not None, "stop() before start()"
        plan = self._plan
        try:
            rc = self._proc.wait(max(plan["deadline"] - time.monotonic(), 1.0))
        except CommandTimeout:
            self._proc.stop()
            raise RunFailed(f"sigrok-cli was still capturing {plan['n']} samples long after the run; killed "
                            f"({classify(self._log_text(), plan['spec'])})") from None
        self._proc.stop()
        if rc != 0:
            raise RunFailed(f"sigrok-cli failed ({describe_exit(rc)}): "
                            f"{classify(self._log_text(), plan['spec'])}")
        try:
            edges = decode_binary(self._out, unitsize=plan["unitsize"], bit=plan["bit"],
                                  expected_samples=plan["n"])
        except RunFailed as exc:
            raise RunFailed(f"{exc.reason} ({classify(self._log_text(), plan['spec'])}; a lower "
                            "probes.sigrok.samplerate may keep up)") from None
        finally:
            self._out.unlink(missing_ok=True)
        if not len(edges.index):
            raise RunFailed(
                f"unmeasurable: the analyzer saw no edge on {plan['channel']} (level stayed "
                f"{edges.initial_level}); check the wiring (pin to {plan['channel']}, ground to GND) and "
                "probes.sigrok.channel", status="unmeasurable")
        return self._aligned(edges_ns(edges, plan["rate"]), edges.level, own)

    def _aligned(self, t_ns, level, own: SelfLog) -> Capture:
        plan, period_ns = self._plan, self.period_ns
        resolution = Metric("probe_resolution_ns", 1e9 / plan["rate"], "ns", "sigrok", "lower")
        if self._outside:
            return self._outside_signal(t_ns, level, own, resolution)
        if not own.timed:  # a unit's count of its edges: no times to align with
            return self._counted(t_ns, level, own, [resolution])
        fit = align(t_ns, level, own.t_ns, own.level, period_ns, dropped=own.dropped)
        span_ns = plan["n"] * 1_000_000_000 // plan["rate"]
        if fit.watched and (own.t_ns[-1] > fit.offset_ns + span_ns or own.t_ns[0] < fit.offset_ns):
            raise RunFailed(f"the capture ({format_ns(span_ns)}) does not cover the program's whole run; "
                            "raise probes.sigrok.margin")
        return aligned_capture(
            "sigrok", t_ns, level, fit, edges=f"the sigrok edges on {plan['channel']}",
            fix=f"check the wiring (the program's pin to {plan['channel']}, ground to GND) and "
                "probes.sigrok.channel (a capture that ended before the program did: raise "
                "probes.sigrok.margin)", metrics=(resolution,))

    def _outside_signal(self, t_ns, level, own: SelfLog, resolution: Metric) -> Capture:
        """What the analyzer saw of a signal the program does not make (pin external): never the
        program's pin, aligned only to say how it compares."""
        plan, period_ns = self._plan, self.period_ns
        metrics, warnings = [resolution], []
        demo = SigrokOptions.of(self.options()).driver == "demo"
        source = "the demo pattern" if demo else "an outside source"
        not_watched = Warning_(
            f"pin {self._outside}: the sigrok figures describe the signal on {plan['channel']} "
            f"({source}), not the program's wave",
            "wire a real pin (gpiod, sysfs) to the analyzer to measure the program")
        try:
            fit = align(t_ns, level, own.t_ns, own.level, period_ns, dropped=own.dropped)
            metrics.append(Metric("align_matched_edges", float(fit.matched), "count", "sigrok", "none"))
        except RunFailed as exc:
            warnings.append(Warning_(f"the edges were not aligned with the program's: {exc.reason}",
                                     f"expected with pin {self._outside}: the analyzer watches another "
                                     "signal"))
        metrics.append(pin_watched_metric("sigrok", False))
        return Capture(t_ns, level, metrics=tuple(metrics), warnings=(*warnings, not_watched))

    def _counted(self, t_ns, level, own: SelfLog, metrics: list[Metric]) -> Capture:
        """The analyzer's edges, on its clock, checked against the edges the unit counted (its pin
        is quiet outside its run, which the capture's margins cover)."""
        check, channel = CountCheck(own.made, len(t_ns)), self._plan["channel"]
        metrics += check.metrics("sigrok")
        difference = check.difference()
        warnings = [] if difference is None else [Warning_(
            f"the analyzer's edges on {channel} are not the unit's count: {difference}",
            f"check the wiring (the unit's pin to {channel}, ground to GND), probes.sigrok.channel, and that "
            "probes.sigrok.margin covers the run; a glitch adds edges")]
        metrics.append(pin_watched_metric("sigrok", check.watched))
        return Capture(t_ns, level, metrics=tuple(metrics), warnings=tuple(warnings))

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=1.0)
        self._out.unlink(missing_ok=True)

    def _log_text(self) -> str:
        try:
            return self._log.read_text(errors="replace")
        except OSError:
            return ""


def _scan_channels(output: str) -> list[str]:
    """The channel names of the first device `sigrok-cli --scan` lists (in the device's order)."""
    match = _SCAN_LINE.search(output)
    return match.group(2).split() if match else []


def scan_devices(controller: Target) -> list[str]:
    """Analyzers sigrok finds on the controller, one line each ("fx2lafw - Saleae Logic ...")."""
    done = controller.run(["sigrok-cli", "--scan"], timeout_s=60)
    return [m.group(0) for m in _SCAN_LINE.finditer(done.stdout)]


def _simulated(scan_line: str) -> bool:
    """sigrok's demo driver: a software simulator that generates its own signal."""
    return scan_line.startswith("demo ")


def analyzers_text(found: list[str]) -> str:
    """What `sigrok-cli --scan` found, the simulator named as one (it watches no pin)."""
    if not found:
        return "none found by sigrok-cli --scan"
    real = [line for line in found if not _simulated(line)]
    simulated = "sigrok's demo driver, a software simulator that watches no pin"
    if not real:
        return f"none; only {simulated}"
    return "; ".join(real) + (f"; and {simulated}" if len(real) < len(found) else "")


PROBES.add(
    "sigrok",
    "a logic analyzer on the controller via sigrok-cli (fx2lafw, Saleae clones, Pico, ...; driver demo "
    "without hardware); edges at 1/samplerate, aligned with the program's own",
    SigrokProbe,
)
