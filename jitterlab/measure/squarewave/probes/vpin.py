"""The vpin probe: an independent observer (C, jitterlab/programs/c/observer.c) busy-polls the
pin's level byte from a CPU of its own at SCHED_FIFO 99, timestamps each change with
CLOCK_MONOTONIC and records every blind interval (a gap between two polls longer than
campaign.blind_threshold)."""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

import numpy as np

from jitterlab.measure.context import Throttling
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import LevelPage
from jitterlab.measure.squarewave.probes.base import PROBES, Capture, ProbeBase
from jitterlab.measure.squarewave.probes.logs import ObserverCapture, SelfLog, read_observer
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import blind_series
from jitterlab.model.units import format_ns
from jitterlab.targets.base import Process, Target
from jitterlab.targets.processes import spawn_recorded, wait_for_path

BLIND_WARN_FRACTION = 0.01


class Observer:
    """One observer process watching one pin for one run."""

    def __init__(self, target: Target, bindir: str, scratch: str) -> None:
        self.target = target
        self.bindir = bindir
        self.out = f"{scratch}/observer.bin"
        self.stats = f"{scratch}/observer.json"
        self.ready = f"{scratch}/observer.ready"
        self.log = f"{scratch}/observer.log"
        self._proc: Process | None = None

    def start(self, pin: str, *, blind_threshold_ns: int, cpu: int | None, max_duration_ns: int,
              max_edges: int | None = None, pin_offset: int = 0) -> None:
        argv = [
            f"{self.bindir}/c/observer",
            "--pin",
            pin,
            "--out",
            self.out,
            "--stats",
            self.stats,
            "--ready",
            self.ready,
            "--blind-threshold-ns",
            str(blind_threshold_ns),
            "--max-duration-ns",
            str(max_duration_ns),
        ]
        if cpu is not None:
            argv += ["--cpu", str(cpu)]
        if pin_offset:
            argv += ["--pin-offset", str(pin_offset)]
        if max_edges is not None:  # its buffer is prefaulted and locked: no bigger than the run needs
            argv += ["--max-edges", str(max_edges)]
        self._proc = spawn_recorded(self.target, argv, log_path=self.log)
        if not wait_for_path(self.target, self.ready, timeout_s=10.0, alive=self._proc):
            self._proc.stop()
            raise RunFailed(f"vpin observer did not start polling within 10s: {self._tail()}")

    def stop(self, local_dir: Path) -> ObserverCapture:
        assert self._proc is not None, "stop() before start()"
        self._proc.stop(grace_s=10.0)
        local_out, local_stats = local_dir / "observer.bin", local_dir / "observer.json"
        try:
            self.target.get(self.out, local_out)
            self.target.get(self.stats, local_stats)
        except OSError as exc:
            raise RunFailed(f"vpin observer left no capture ({exc}); its log: {self._tail()}") from None
        return read_observer(local_out, local_stats)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=1.0)

    def _tail(self) -> str:
        done = self.target.run(["tail", "-n", "3", self.log])
        return done.stdout.strip().replace("\n", " | ") or "(no output)"


def edge_budget(duration_ns: int, period_ns: int) -> int:
    """Edges the observer keeps room for: twice what the run should make (a program that catches
    up after a stall makes more), plus a margin; more are counted as overflow and warned about."""
    return min(4 * duration_ns // max(period_ns, 1) + 65_536, 1 << 27)


class VpinProbe(ProbeBase):
    needs = (LevelPage,)
    needs_cpu = True
    tools: ClassVar[dict[str, str]] = {"taskset": "util-linux"}
    programs: ClassVar[dict[str, str]] = {"observer": ""}
    metrics: ClassVar[tuple[str, ...]] = ("probe_poll_p50_ns", "probe_poll_p999_ns", "probe_poll_max_ns",
                                          "probe_overflow_edges", "unobserved_edges")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._observer: Observer | None = None

    @classmethod
    def check(cls, cell, settings, where: Where) -> None:
        period_ns = WaveCell.of_cell(cell).period_ns
        if period_ns < 2 * settings.blind_threshold_ns:
            raise UserError(
                f"{where}.period: {format_ns(period_ns)} is too short for the vpin probe: a pulse "
                f"could hide in a gap shorter than campaign.blind_threshold "
                f"({format_ns(settings.blind_threshold_ns)}); use a period >= "
                f"{format_ns(2 * settings.blind_threshold_ns)} or lower blind_threshold"
            )

    def start(self, pin: PinHandle) -> None:
        page = pin.get(LevelPage)
        if page is None:
            raise RunFailed(f"the vpin probe cannot watch pin {pin.kind!r}: it has no level byte to map")
        ctx, settings = self.ctx, self.ctx.settings
        self._observer = Observer(ctx.target, ctx.bindir, ctx.scratch)
        self._observer.start(
            page.path,
            blind_threshold_ns=settings.blind_threshold_ns,
            cpu=ctx.placement.probe_cpu,
            max_duration_ns=settings.duration_ns + settings.run_timeout_ns,
            max_edges=edge_budget(settings.duration_ns, self.period_ns),
            pin_offset=page.offset,
        )

    def stop(self, own: SelfLog) -> Capture:
        assert self._observer is not None, "stop() before start()"
        capture = self._observer.stop(self.ctx.local_dir)
        if len(capture.t_ns) < 3 <= len(own.t_ns):  # the program made a wave the observer did not see
            raise RunFailed(
                f"unmeasurable: the vpin observer saw {len(capture.t_ns)} of the {len(own.t_ns)} edges the "
                f"program wrote: {why_unseen(capture, own, self.ctx.placement.probe_cpu)}",
                status="unmeasurable",
            )
        return Capture(
            capture.t_ns,
            capture.level,
            capture.blind,
            metrics=tuple(_observer_metrics(capture, len(own.t_ns))),
            warnings=tuple(_observer_warnings(capture.stats, self.ctx.settings.duration_ns,
                                              self.ctx.throttling)),
            series={"vpin.blind": blind_series(capture.blind)},
        )

    def close(self) -> None:
        if self._observer is not None:
            self._observer.close()


def why_unseen(capture: ObserverCapture, own: SelfLog, cpu: int | None) -> str:
    """Why the observer saw (almost) none of the program's edges, from its stats and blind spans
    and, when the program stamped its edges with the same clock, the program's own timeline."""
    stats, blind = capture.stats, np.asarray(capture.blind, dtype=np.int64).reshape(-1, 2)
    start, end = int(stats.get("start_ns", 0)), int(stats.get("end_ns", 0))
    where = f"CPU {cpu}" if cpu is not None else "its CPU"
    longest = format_ns(int(stats.get("poll_ns_max", 0)), 3)
    taken = (f"{where} was taken from it (another real-time task at its priority on that CPU, or "
             "the hypervisor descheduling the VM's CPU); give the probe a CPU of its own (isolcpus=)")
    if own.clock == "monotonic" and len(own.t_ns):
        first, last = int(own.t_ns[0]), int(own.t_ns[-1])
        if end < first:
            return (f"it stopped polling {format_ns(first - end, 3)} before the program's first edge, at "
                    "the end of its allowance (duration + run_timeout): the program started that late")
        if start > last:
            return f"it started polling {format_ns(start - last, 3)} after the program's last edge"
        covering = blind[(blind[:, 0] <= first) & (blind[:, 1] >= last)]
        if len(covering):
            gap = int(covering[0, 1] - covering[0, 0])
            return (f"one gap of {format_ns(gap, 3)} between two of its polls covered the program's whole "
                    f"run of {format_ns(last - first, 3)}: {taken}")
        overlap = np.clip(np.minimum(blind[:, 1], last) - np.maximum(blind[:, 0], first), 0, None).sum()
        if overlap > (last - first) / 2:
            return (f"it was blind {format_ns(int(overlap), 3)} of the program's "
                    f"{format_ns(last - first, 3)} run (longest gap {longest}): {taken}")
    elif stats.get("blind_ns", 0) > (end - start) / 2:
        return (f"it was blind {format_ns(int(stats['blind_ns']), 3)} of its {format_ns(end - start, 3)} of "
                f"polling (longest gap {longest}): {taken}")
    polls = int(stats.get("polls", 0))
    return (f"it polled {polls} times in {format_ns(end - start, 3)} and the pin's level never changed: "
            "the program wrote another file than the one it watched")


def _observer_metrics(capture: ObserverCapture, n_self_edges: int) -> list[Metric]:
    stats = capture.stats
    return [
        Metric("probe_poll_p50_ns", float(stats["poll_ns_p50"]), "ns", "vpin"),
        Metric("probe_poll_p999_ns", float(stats["poll_ns_p999"]), "ns", "vpin"),
        Metric("probe_poll_max_ns", float(stats["poll_ns_max"]), "ns", "vpin"),
        Metric("probe_overflow_edges", float(stats["overflow_edges"]), "count", "vpin"),
        # edges the program wrote that the observer never saw (hidden in blind gaps)
        Metric("unobserved_edges", float(max(0, n_self_edges - len(capture.t_ns))), "count", "vpin"),
    ]


OWN_CPU = "give the probe a CPU of its own (boot with isolcpus=, then [campaign.cpus] probe)"


def blind_remedy(throttling: Throttling | None) -> str:
    """What makes the observer blind less often on this machine: a CPU of its own, and RT throttling
    lifted where it was on during the runs, in the runner's words for this machine (who jitterlab is
    there, a container whose host owns the setting)."""
    if throttling is None:  # a run measured without its target's facts
        return f'{OWN_CPU}; and RT throttling off (campaign.rt_throttling = "lift", as root)'
    if not throttling.active:  # off, or lifted for the runs: something else took the probe's CPU
        return f"{OWN_CPU}: RT throttling was off, so other tasks, interrupts or the hypervisor took it"
    return f"{OWN_CPU}; RT throttling stopped it too: {throttling.remedy}"


def _observer_warnings(stats: dict, duration_ns: int, throttling: Throttling | None = None) -> list[Warning_]:
    warnings = []
    if stats.get("sched") != "fifo":
        warnings.append(
            Warning_(
                "the vpin observer ran without SCHED_FIFO, so it is blind more often",
                "run jitterlab as root or grant CAP_SYS_NICE",
            )
        )
    blind_fraction = stats.get("blind_ns", 0) / max(duration_ns, 1)
    dropped = int(stats.get("blind_dropped", 0))
    if blind_fraction > BLIND_WARN_FRACTION:
        excluded = ("periods touching the blind intervals it listed were excluded, not those in the "
                    f"{dropped} beyond its list's room" if dropped else
                    "periods touching blind intervals were excluded")
        warnings.append(
            Warning_(f"the vpin probe was blind {blind_fraction:.1%} of the run; {excluded}",
                     blind_remedy(throttling))
        )
    elif dropped:  # the list holds 2**20 spans of more than blind_threshold each: seconds of blindness
        warnings.append(
            Warning_(f"the vpin observer could not list {dropped} of its blind intervals: the periods "
                     "in them were not excluded", blind_remedy(throttling))
        )
    if stats.get("overflow_edges", 0):
        warnings.append(
            Warning_(
                f"the observer's edge buffer overflowed ({stats['overflow_edges']} edges not stored)",
                "shorten campaign.duration",
            )
        )
    return warnings


PROBES.add(
    "vpin",
    "independent observer: busy-polls the pin's level byte from its own CPU, records blind intervals",
    VpinProbe,
)
