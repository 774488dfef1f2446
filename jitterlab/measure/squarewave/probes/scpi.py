"""The scpi probe: an oscilloscope or counter measures the pin's period with statistics, over
pyvisa (backend "@py": SCPI over LAN, USB-TMC or serial, no vendor library).

At start it identifies the instrument, sets up a period measurement on the channel (the commands
of the profile, scpi_profile.py), and resets the statistics; once the warm-up has passed it resets
them again, so that they cover roughly what the other probes analyse (the instrument has no
timestamps to cut the warm-up exactly). At the end it reads count, mean, min, max and standard
deviation. Those give the period figures; percentiles, duty and drift need every edge and are
reported unavailable, never estimated. Every command is followed by a look at the error queue.

Whether the instrument watched the program's pin is stored as program_pin_watched: not with a
simulated instrument (a "...@sim" backend), not with pin "external", and not when its mean period
or its count of periods cannot be the program's (by the program's own log).
"""

from __future__ import annotations

import contextlib
import re
import threading
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import ClassVar

from jitterlab.analysis.watched import NOT_WATCHED, PIN_WATCHED, pin_watched_metric
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import InstrumentInput, OutsideSignal
from jitterlab.measure.squarewave.probes import visa
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, Instruments, ProbeBase
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.measure.squarewave.probes.scpi_profile import Profile, load_profile
from jitterlab.model.errors import RunFailed, UserError, Where, shown
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, duration, text
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.units import format_ns
from jitterlab.targets.base import Target

SCPI_NAN = Decimal("9.9e37")  # SCPI's "no value" (9.91E37) and anything as large
MAX_ERRORS = 20  # error queue entries read at most after one step
UNAVAILABLE = ("p50_rel_period_error", "p99_rel_period_error", "p999_rel_period_error",
               "p9999_rel_period_error", "max_half_period_error", "max_duty_error", "drift_ppm")
COVERAGE_WARN = 0.99
_CHANNEL = re.compile(r"[A-Za-z0-9_]{1,16}")  # spliced into SCPI commands: one word
# beyond these the instrument watched another signal than the program's pin: its mean period is
# the program's to its timebase's ppm (2 % leaves room for a stall in the program's warm-up, which
# its statistics may leave out), and it cannot count more periods than the program made
MEAN_TOLERANCE = 0.02
COUNT_TOLERANCE = 1.02


def _profile(value: object, where: str) -> str:
    name = text(value, where)
    load_profile(str(name), where)
    return str(name)


def _channel(value: object, where: str) -> str:
    """A channel's name as the profile's commands take it (1, CH2 ...): one word, because it is spliced
    into the commands sent to the instrument, where ';', ',', ':', '*' and spaces would change them."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1000:
        return str(value)
    if isinstance(value, str) and _CHANNEL.fullmatch(value):
        return value
    raise UserError(f"{where}: expected the instrument's channel, a number or a word of letters and digits "
                    f"(at most 16), e.g. channel = 1; got {shown(value)}")


# the names period_statistics_metrics gives
PERIOD_STATISTICS_NAMES = ("max_rel_period_error", "max_delay", "max_early", "mean_period_ns",
                           "std_period_ns", "min_period_ns", "max_period_ns", "n_periods")


def period_statistics_metrics(stats: dict[str, Decimal], period_ns: int, probe: str) -> list[Metric]:
    """Squarewave metrics from an instrument's period statistics (seconds; count optional)."""
    ns = {k: stats[k] * 1_000_000_000 for k in ("mean", "min", "max", "std")}
    period = Decimal(period_ns)
    values = [
        ("max_rel_period_error", max(ns["max"] - period, period - ns["min"]) / period, "ratio"),
        ("max_delay", (ns["max"] - period) / period, "ratio"),
        ("max_early", (period - ns["min"]) / period, "ratio"),
        ("mean_period_ns", ns["mean"], "ns"),
        ("std_period_ns", ns["std"], "ns"),
        ("min_period_ns", ns["min"], "ns"),
        ("max_period_ns", ns["max"], "ns"),
    ]
    if "count" in stats:
        values.append(("n_periods", stats["count"], "count"))
    return [Metric(name, float(value), unit, probe) for name, value, unit in values]


@dataclass(frozen=True)
class ScpiOptions(Options):
    resource: str
    profile: str
    channel: str
    backend: str
    timeout_ns: int = key("timeout")


class Instrument:
    """One open VISA session, with the profile's commands and the error queue checked after each."""

    def __init__(self, options: ScpiOptions) -> None:
        try:
            import pyvisa
        except ImportError:
            raise RunFailed("the scpi probe needs pyvisa: pip install 'jitterlab[instruments]'",
                            status="unavailable") from None
        self.pyvisa = pyvisa
        self.resource = options.resource
        self.lock = threading.Lock()
        try:
            self.rm = pyvisa.ResourceManager(options.backend)
        except (OSError, ValueError, pyvisa.Error) as exc:
            raise RunFailed(f"pyvisa backend {options.backend!r} cannot start ({exc}); check "
                            "probes.scpi.backend (\"@py\" needs pyvisa-py)", status="unavailable") from None
        try:
            self.inst = self.rm.open_resource(self.resource, write_termination="\n", read_termination="\n",
                                              timeout=options.timeout_ns // 1_000_000)
        except (OSError, ValueError, pyvisa.Error) as exc:
            self.rm.close()
            raise RunFailed(f"cannot open instrument {self.resource} ({exc}); check probes.scpi.resource "
                            "(`jitterlab doctor local` lists the VISA resources it finds)") from None

    def query(self, command: str) -> str:
        with self.lock:
            try:
                return str(self.inst.query(command)).strip()
            except self.pyvisa.errors.VisaIOError as exc:
                raise RunFailed(self._failure(command, exc)) from None

    def write(self, command: str) -> None:
        with self.lock:
            try:
                self.inst.write(command)
            except self.pyvisa.errors.VisaIOError as exc:
                raise RunFailed(self._failure(command, exc)) from None

    def _failure(self, command: str, exc: Exception) -> str:
        if getattr(exc, "error_code", None) == self.pyvisa.constants.StatusCode.error_timeout:
            return (f"instrument {self.resource} did not answer {command!r} within "
                    f"{format_ns(int(self.inst.timeout) * 1_000_000)}: is it on and reachable? a profile "
                    "for another instrument family (probes.scpi.profile)? raise probes.scpi.timeout")
        return f"instrument {self.resource}: {command!r} failed: {exc}"

    def errors(self, profile: Profile) -> list[str]:
        """Drain the error queue; the entries that are errors."""
        found = []
        for _ in range(MAX_ERRORS):
            answer = self.query(profile.error_query)
            code = answer.split(",", 1)[0].strip()
            try:
                if int(code) == 0:
                    return found
            except ValueError:
                return [*found, f"unreadable answer to {profile.error_query}: {answer!r}"]
            found.append(answer)
        return found

    def close(self) -> None:
        for thing in (self.inst, self.rm):
            with contextlib.suppress(Exception):  # already closed or its backend gone: nothing to release
                thing.close()


class ScpiProbe(ProbeBase):
    needs = (InstrumentInput,)
    location = "instrument"
    params = (
        Param("resource", "the instrument's VISA address", text, '"TCPIP::192.168.1.20::INSTR"'),
        Param("profile", "the instrument family's commands: rs-rto, rs-rtb, keysight, rigol, or a "
              "TOML profile's path", _profile, '"rs-rto"'),
        Param("channel", "the instrument's input wired to the pin", _channel, "1", default="1"),
        Param("backend", 'pyvisa backend: "@py" (pyvisa-py), "@ivi" (a vendor VISA), "FILE@sim" '
              "(pyvisa-sim)", text, '"@py"', default="@py"),
        Param("timeout", "how long one answer may take", duration(1_000_000), '"5s"', default="5s",
              show=format_ns),
    )
    record = ScpiOptions
    metrics: ClassVar[tuple[str, ...]] = (*PERIOD_STATISTICS_NAMES, "probe_coverage", PIN_WATCHED)

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._inst: Instrument | None = None
        self._timer: threading.Timer | None = None
        self._late_reset: list[BaseException] = []
        self._reset_done = threading.Event()
        self._outside = ""  # the pin's kind when the instrument watches an outside signal, not the program

    @classmethod
    def instruments(cls, controller: Target) -> Instruments:
        """The VISA resources here; the probe is usable with an instrument on USB or GPIB."""
        found = visa.resources()
        return Instruments("VISA resources", visa.described(found), visa.instrument_among(found))

    @classmethod
    def check(cls, cell, settings, where: Where) -> None:
        cls.options_in(settings, "scpi", where.at("probes", "scpi"))  # resource, profile

    def _setup(self) -> tuple[Profile, str]:
        options = ScpiOptions.of(self.options())
        return load_profile(options.profile, "probes.scpi.profile"), options.channel

    def _step(self, profile: Profile, commands: list[str], what: str) -> None:
        assert self._inst is not None
        for command in commands:
            self._inst.write(command)
        errors = self._inst.errors(profile)
        if errors:
            raise RunFailed(f"instrument {self._inst.resource} refused the {what} of profile "
                            f"{profile.name!r} ({'; '.join(errors)}); is it an instrument of that family? "
                            "see docs/probes.md to adapt a profile")

    def start(self, pin: PinHandle) -> None:
        self._outside = pin.kind if pin.get(OutsideSignal) is not None else ""
        profile, channel = self._setup()
        self._inst = Instrument(ScpiOptions.of(self.options()))
        idn = self._inst.query("*IDN?")
        if profile.idn.lower() not in idn.lower():
            raise RunFailed(f"instrument {self._inst.resource} is {idn!r}, not a {profile.idn!r} as profile "
                            f"{profile.name!r} expects; set probes.scpi.profile to its family")
        self._inst.write("*CLS")
        self._step(profile, profile.commands(profile.setup, channel), "setup")
        self._step(profile, profile.commands(profile.reset, channel), "statistics reset")
        settings, period_ns = self.ctx.settings, self.period_ns
        warmup_s = max(settings.warmup_ns, 2 * period_ns) / 1e9
        self._timer = threading.Timer(warmup_s, self._reset_after_warmup, (profile, channel))
        self._timer.daemon = True
        self._timer.start()

    def _reset_after_warmup(self, profile: Profile, channel: str) -> None:
        try:
            self._step(profile, profile.commands(profile.reset, channel), "statistics reset")
        except BaseException as exc:  # reported by stop(), on the run's thread
            self._late_reset.append(exc)
        finally:
            self._reset_done.set()

    def stop(self, own: SelfLog) -> Capture:
        assert self._inst is not None, "stop() before start()"
        profile, channel = self._setup()
        warnings: list[Warning_] = []
        if self._timer is not None:
            self._timer.cancel()  # not fired yet: it never will; firing: wait for its reset
            self._timer.join(30)
        if self._late_reset:
            raise self._late_reset[0]
        if not self._reset_done.is_set():
            warnings.append(Warning_("the run ended before the warm-up: the instrument's statistics "
                                     "include it", "run longer than campaign.warmup"))
        stats = self._read(profile, channel)
        period_ns = self.period_ns
        summary = period_statistics_metrics(stats, period_ns, "scpi")
        metrics: list[Metric] = []
        if "count" in stats:
            expected = _expected_periods(own, max(self.ctx.settings.warmup_ns, 2 * period_ns), period_ns)
            if expected:
                coverage = float(stats["count"]) / expected
                metrics.append(Metric("probe_coverage", coverage, "ratio", "scpi", "higher"))
                if coverage < COVERAGE_WARN:
                    warnings.append(Warning_(
                        f"the instrument measured {stats['count']} of about {expected} periods: its min/max "
                        "cover only those, and the worst period may be missing",
                        "let it measure every period (R&S: MEASurement:MULTiple ON; a counter's time "
                        "interval statistics), or use the sigrok probe"))
        not_watched = self._not_watched(stats, own, channel)
        warnings += not_watched
        metrics.append(pin_watched_metric("scpi", not not_watched))
        unavailable = UNAVAILABLE + (() if "count" in stats else ("n_periods",))
        return Capture(own.t_ns[:0], own.level[:0], metrics=tuple(metrics), warnings=tuple(warnings),
                       summary=tuple(summary), unavailable=unavailable)

    def _not_watched(self, stats: dict[str, Decimal], own: SelfLog, channel: str) -> list[Warning_]:
        """Why the instrument's figures are not the program's pin's (none: they are)."""
        out = []
        backend = ScpiOptions.of(self.options()).backend
        if backend.endswith("@sim"):
            out.append(Warning_(
                f"probes.scpi.backend {backend!r} is a simulated instrument: its figures are made up, not "
                "the program's wave",
                "set probes.scpi.backend to \"@py\" (or \"@ivi\") and a real instrument"))
        if self._outside:
            out.append(Warning_(
                f"pin {self._outside}: the scpi figures describe the signal on the instrument's channel "
                f"{channel}, not the program's wave",
                "wire a real pin (gpiod, sysfs) to the instrument to measure the program"))
        own_mean_ns, own_periods = _own_periods(own, self.period_ns)
        wiring = (f"check the wiring (the program's pin to channel {channel}) and probes.scpi.channel; "
                  f"its figures are marked {NOT_WATCHED!r}")
        if own_mean_ns and abs(float(stats["mean"]) * 1e9 - own_mean_ns) > MEAN_TOLERANCE * own_mean_ns:
            out.append(Warning_(
                f"the instrument's mean period ({format_ns(round(float(stats['mean']) * 1e9))}) is not the "
                f"program's ({format_ns(round(own_mean_ns))} by its own log): it watched another signal",
                wiring))
        if "count" in stats and float(stats["count"]) > COUNT_TOLERANCE * own_periods + 2:
            out.append(Warning_(
                f"the instrument counted {int(stats['count']):,} periods, the program made "
                f"{own_periods:,}: it watched another signal (or glitches)", wiring))
        return out

    def _read(self, profile: Profile, channel: str) -> dict[str, Decimal]:
        assert self._inst is not None
        stats: dict[str, Decimal] = {}
        answers: dict[str, str] = {}
        for name in ("count", "mean", "min", "max", "std"):
            read = profile.query(name, channel)
            if read is None:
                continue
            if read.query not in answers:
                answers[read.query] = self._inst.query(read.query)
            fields = answers[read.query].split(",")
            try:
                value = Decimal(fields[read.field].strip())
            except (IndexError, InvalidOperation):
                raise RunFailed(f"instrument {self._inst.resource}: cannot read the {name} from "
                                f"{answers[read.query][:80]!r} (field {read.field} of {read.query!r}); "
                                f"check profile {profile.name!r}") from None
            if not value.is_finite() or abs(value) >= SCPI_NAN:
                raise RunFailed(f"unmeasurable: the instrument has no period {name} ({fields[read.field]}): "
                                f"no signal on its channel {channel}? check the wiring, the trigger level "
                                "and probes.scpi.channel", status="unmeasurable")
            stats[name] = value
        errors = self._inst.errors(profile)
        if errors:
            raise RunFailed(f"instrument {self._inst.resource} reported errors reading statistics: "
                            f"{'; '.join(errors)}")
        if "count" in stats and stats["count"] <= 0:
            raise RunFailed(f"unmeasurable: the instrument measured no period on channel {channel}; check "
                            "the wiring, the trigger level and probes.scpi.channel", status="unmeasurable")
        return stats

    def close(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
        if self._inst is not None:
            self._inst.close()
            self._inst = None


def _expected_periods(own: SelfLog, warmup_ns: int, period_ns: int) -> int:
    """Whole periods (edge to the next edge of the same polarity, as an instrument measures them,
    not overlapping) that the program made after the warm-up, by its own log (by its count of its
    edges when it timestamped none: a unit's timer keeps the period, so the warm-up's are known)."""
    if not own.timed:
        return max(own.made // 2 - -(-warmup_ns // period_ns), 0)
    t = own.t_ns
    if not len(t):
        return 0
    kept = int((t >= t[0] + warmup_ns).sum())
    return max(kept - 1, 0) // 2


def _own_periods(own: SelfLog, period_ns: int) -> tuple[float, int]:
    """The program's mean period (ns) and count of whole periods over its whole run, by its log;
    for a program that only counted its edges (a unit's firmware), the period its timer makes."""
    if not own.timed:
        return (float(period_ns), own.made // 2) if own.made >= 2 else (0.0, 0)
    whole = (len(own.t_ns) - 1) // 2
    if whole < 1:
        return 0.0, 0
    return float(own.t_ns[2 * whole] - own.t_ns[0]) / whole, whole


PROBES.add(
    "scpi",
    "an oscilloscope or counter over pyvisa (SCPI; profiles rs-rto, rs-rtb, keysight, rigol or your own): "
    "period count/mean/min/max/std-dev; percentiles unavailable",
    ScpiProbe,
)
