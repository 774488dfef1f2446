"""The core benchmark: a program toggles a pin every half period; a probe timestamps the edges."""

from __future__ import annotations

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.benchmarks.impls import IMPLS
from jitterlab.errors import RunFailed, UserError
from jitterlab.params import Param, duration, registered
from jitterlab.pins import PINS
from jitterlab.probes.base import PROBES
from jitterlab.probes.logs import read_self_log
from jitterlab.probes.vpin import Observer
from jitterlab.records import Metric, Warning_
from jitterlab.store.raw import EdgeSeries, blind_series
from jitterlab.sweep import run_recorded, shm_path
from jitterlab.units import format_ns

_RT_PRIORITY = 80  # below the observer (99), above any load
_BLIND_WARN_FRACTION = 0.01


class Squarewave(BenchmarkBase):
    params = (
        Param("impl", "the programming model that makes the wave", registered(IMPLS), '["python", "c-fifo"]'),
        Param("period", "the wave's nominal period", duration(), '["10ms", "1ms"]', show=format_ns),
        Param("probe", "how edges are observed", registered(PROBES), '"vpin"', default="vpin"),
        Param("pin", "where the wave goes", registered(PINS), '"vpin"', default="vpin"),
    )

    headline = ("max_rel_period_error", "p99_rel_period_error", "std_period_ns")

    def needs_rt(self, cell) -> bool:
        return IMPLS.get(cell.impl, "matrix.impl").realtime

    def label(self, cell) -> str:
        return f"{cell.impl} {format_ns(cell.period_ns)} {cell.load} ({cell.probe})"

    def check(self, campaign, cell) -> None:
        if cell.probe == "vpin" and cell.period_ns < 2 * campaign.blind_threshold_ns:
            raise UserError(
                f"{campaign.path}: matrix.period: {format_ns(cell.period_ns)} is too short for the vpin "
                "probe: a pulse could hide in a gap shorter than campaign.blind_threshold "
                f"({format_ns(campaign.blind_threshold_ns)}); "
                f"use a period >= {format_ns(2 * campaign.blind_threshold_ns)} or lower blind_threshold"
            )

    def tools(self, cell) -> dict[str, str]:
        tools = dict(IMPLS.get(cell.impl, "matrix.impl").tools)
        if cell.impl.startswith("c-") or cell.probe == "vpin":
            tools.update({"make": "make", "cc": "gcc"})
        if cell.impl == "c-fifo" or cell.probe == "vpin":
            tools["taskset"] = "util-linux"
        return tools

    def estimate_s(self, campaign, cell) -> float:
        load_s = campaign.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return campaign.duration_ns / 1e9 + load_s + 0.4

    def execute(self, ctx: RunContext) -> Measurement:
        target, cell, campaign = ctx.target, ctx.cell, ctx.campaign
        pin = shm_path(ctx.scratch, "pin")
        pin_init = ctx.local_dir / "pin"
        pin_init.write_bytes(b"0\n")
        target.put(pin_init, pin)
        observer = Observer(target, ctx.bindir, ctx.scratch) if cell.probe == "vpin" else None
        try:
            if observer:
                observer.start(
                    pin,
                    blind_threshold_ns=campaign.blind_threshold_ns,
                    cpu=ctx.placement.probe_cpu,
                    max_duration_ns=campaign.duration_ns + campaign.run_timeout_ns,
                )
            program_log = self._run_program(ctx, pin)
            capture = observer.stop(ctx.local_dir) if observer else None
        finally:
            if observer:
                observer.close()
            target.run(["rm", "-f", pin])
        local_log = ctx.local_dir / "self.log"
        try:
            target.get(f"{ctx.scratch}/self.log", local_log)
        except OSError:
            raise RunFailed(f"{cell.impl} wrote no edge log; its output: {program_log}") from None
        own = read_self_log(local_log)
        warnings = [
            Warning_(line.removeprefix("warning: "), "see the program's message")
            for line in program_log.splitlines()
            if line.startswith("warning:")
        ]
        series = {"self": EdgeSeries(own.t_ns, own.level)}
        metrics: list[Metric] = []
        if capture is None:
            metrics += squarewave_metrics(
                own.t_ns, own.level, cell.period_ns, warmup_ns=campaign.warmup_ns, probe="self"
            )
        else:
            series["vpin"] = EdgeSeries(capture.t_ns, capture.level)
            series["vpin.blind"] = blind_series(capture.blind)
            metrics += squarewave_metrics(
                capture.t_ns,
                capture.level,
                cell.period_ns,
                warmup_ns=campaign.warmup_ns,
                blind=capture.blind,
                probe="vpin",
            )
            metrics += _observer_metrics(capture, len(own.t_ns))
            warnings += _observer_warnings(capture.stats, campaign.duration_ns)
            try:  # the program's own view of the same run, for the self-measurement bias
                metrics += squarewave_metrics(
                    own.t_ns, own.level, cell.period_ns, warmup_ns=campaign.warmup_ns, probe="self"
                )
            except RunFailed as exc:
                warnings.append(Warning_(f"self probe: {exc.reason}", "see the vpin metrics"))
        if own.clock != "monotonic":
            warnings.append(
                Warning_(
                    f"{cell.impl} timestamps its edges with CLOCK_{own.clock.upper()}, which NTP may slew",
                    "trust the vpin probe's figures for this impl",
                )
            )
        return Measurement(metrics=metrics, series=series, warnings=warnings)

    def _run_program(self, ctx: RunContext, pin: str) -> str:
        """Run the program to completion; return its output (stderr+stdout)."""
        cell, campaign, target = ctx.cell, ctx.campaign, ctx.target
        impl = IMPLS.get(cell.impl, "matrix.impl")
        program = [impl.argv_prefix[0]] if len(impl.argv_prefix) > 1 else []
        program += [f"{ctx.bindir}/{impl.argv_prefix[-1]}"]
        argv = (
            ["taskset", "-c", ",".join(map(str, ctx.placement.program_cpus))]
            if ctx.placement.program_cpus
            else []
        )
        argv += [
            *program,
            "--period-ns",
            str(cell.period_ns),
            "--duration-ns",
            str(campaign.duration_ns),
            "--pin",
            pin,
            "--log",
            f"{ctx.scratch}/self.log",
            "--prio",
            str(_RT_PRIORITY),
        ]
        if impl.realtime and not ctx.rt_permitted:
            argv.append("--allow-no-rt")
        log = f"{ctx.scratch}/program.log"
        rc = run_recorded(
            target, argv, log, timeout_s=(campaign.duration_ns + campaign.run_timeout_ns) / 1e9,
            name=cell.impl, budget="duration + campaign.run_timeout",
        )
        output = target.run(["cat", log]).stdout.strip()
        if rc != 0:
            last = output.splitlines()[-1] if output else "(no output)"
            raise RunFailed(f"{cell.impl} exited with status {rc}: {last}")
        return output


def _observer_metrics(capture, n_self_edges: int) -> list[Metric]:
    stats = capture.stats
    return [
        Metric("probe_poll_p50_ns", float(stats["poll_ns_p50"]), "ns", "vpin"),
        Metric("probe_poll_p999_ns", float(stats["poll_ns_p999"]), "ns", "vpin"),
        Metric("probe_poll_max_ns", float(stats["poll_ns_max"]), "ns", "vpin"),
        Metric("probe_overflow_edges", float(stats["overflow_edges"]), "count", "vpin"),
        # edges the program wrote that the observer never saw (hidden in blind gaps)
        Metric("unobserved_edges", float(max(0, n_self_edges - len(capture.t_ns))), "count", "vpin"),
    ]


def _observer_warnings(stats: dict, duration_ns: int) -> list[Warning_]:
    warnings = []
    if stats.get("sched") != "fifo":
        warnings.append(
            Warning_(
                "the vpin observer ran without SCHED_FIFO, so it is blind more often",
                "run jitterlab as root or grant CAP_SYS_NICE",
            )
        )
    blind_fraction = stats.get("blind_ns", 0) / max(duration_ns, 1)
    if blind_fraction > _BLIND_WARN_FRACTION:
        warnings.append(
            Warning_(
                f"the vpin probe was blind {blind_fraction:.1%} of the run; periods touching blind "
                "intervals were excluded",
                "give the probe an isolated CPU (isolcpus=) and disable RT throttling "
                "(echo -1 > /proc/sys/kernel/sched_rt_runtime_us)",
            )
        )
    if stats.get("overflow_edges", 0):
        warnings.append(
            Warning_(
                f"the observer's edge buffer overflowed ({stats['overflow_edges']} edges not stored)",
                "shorten campaign.duration",
            )
        )
    return warnings


BENCHMARKS.add(
    "squarewave",
    "a program toggles a pin every half period; a probe timestamps the "
    "edges; metrics: relative period error, jitter, drift",
    Squarewave(),
)
