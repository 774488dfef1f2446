"""Each benchmark declares, before anything is measured, the names of the metrics a run of a cell can
produce (Benchmark.metric_names; `run --until-decided --watch` is refused on them). Here each
benchmark's own metric code runs on the recorded outputs its tests read (tests/data) or on synthetic
series, and a name it produces that it did not declare fails. tests/conftest.py holds every other
measurement the suite makes of a registered benchmark (fake targets, this machine) to the same rule;
the last tests show that it catches one."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.analysis import rtla
from jitterlab.analysis.alignment import Alignment
from jitterlab.analysis.chatter import chatter_metrics
from jitterlab.analysis.counted import CountCheck
from jitterlab.analysis.squarewave import (
    EXCLUDED_SELF_NAMES,
    METRIC_NAMES,
    excluded_seen_by_self,
    period_split,
    squarewave_metrics,
)
from jitterlab.analysis.synthetic import blind_intervals, observe, square_wave
from jitterlab.analysis.throughput import rate_metrics
from jitterlab.measure.benchmarks import (
    boot,
    command,
    crypto,
    cyclictest,
    disk,
    ipc,
    iperf3,
    membw,
    pps,
    switch,
    sysbench,
    tmpfs,
    transfer,
    udp_echo,
)
from jitterlab.measure.benchmarks.base import BenchmarkBase, Measurement, Placement, RunContext
from jitterlab.measure.squarewave.impls.base import IMPLS
from jitterlab.measure.squarewave.probes.aligned import Unseen, aligned_capture
from jitterlab.measure.squarewave.probes.base import PROBES
from jitterlab.measure.squarewave.probes.polls import Polls
from jitterlab.measure.squarewave.probes.register_poll import poll_metrics
from jitterlab.measure.squarewave.probes.scpi import period_statistics_metrics
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import Cell, Metric, RunSettings
from jitterlab.model.registry import Entry
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import LAUNCH
from tests.support import campaign_from_toml, hold_to_declared, undeclared

DATA = Path(__file__).parent.parent / "data"
Produced = list[tuple[Cell, list[Metric]]]  # the cells a case measured, each with what it produced


def data(path: str) -> str:
    return (DATA / path).read_text()


def cell_of(benchmark: str, matrix: str = "") -> Cell:
    return campaign_from_toml(benchmark, matrix).cells[0]


def context(cell: Cell, target, tmp_path: Path) -> RunContext:
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(exist_ok=True), local.mkdir(exist_ok=True)
    settings = RunSettings(duration_ns=1_000_000_000)
    return RunContext(target, settings, cell, 0, str(scratch), local, "/b", Placement(None, None), True)


def boot_runs(tmp_path: Path) -> Produced:
    cell, out = cell_of("boot"), []
    for name in ("efi-initrd.txt", "no-initrd.txt", "container.txt", "minutes.txt"):
        target = FakeTarget()
        target.respond(["test", "-d", "/run/systemd/system"], "")
        target.respond(["systemd-analyze", "time"],
                       response=Completed((), rc=0, stdout=data(f"systemd-analyze/{name}"), stderr=""))
        out.append((cell, boot.Boot().execute(context(cell, target, tmp_path)).metrics))
    return out


def crypto_runs(tmp_path: Path) -> Produced:
    cell = cell_of("crypto")
    target = FakeTarget()
    output = data("openssl/aes-128-gcm-16384.txt")
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=1, log=output))
    return [(cell, crypto.Crypto().execute(context(cell, target, tmp_path)).metrics)]


def command_runs(tmp_path: Path) -> Produced:
    metrics = "".join(f'[[matrix.metric]]\nname = "{n}"\nregex = "{n}=([0-9]+)"\ndirection = "lower"\n'
                      for n in ("fps", "frames"))
    cell = cell_of("command", f'name = "c"\nargv = ["echo", "fps=30 frames=300"]\n{metrics}')
    target = LocalTarget(workdir=str(tmp_path / "wd"))
    try:
        return [(cell, command.Command().execute(context(cell, target, tmp_path)).metrics)]
    finally:
        target.close()


def cyclictest_runs(tmp_path: Path) -> Produced:
    cell = cell_of("cyclictest")
    out = []
    for name in ("two-threads.json", "break.json"):
        threads = cyclictest.parse_json((DATA / "cyclictest" / name).read_bytes(), 1000)
        out.append((cell, cyclictest.metrics_of(threads)[0]))
    return out


def disk_runs(tmp_path: Path) -> Produced:
    return [(cell_of("disk", f'pattern = "{p}"'), disk.parse_report(data(f"fio/{p}.json"), p))
            for p in ("seqread", "seqwrite", "randread", "randwrite")]


def hwlat_runs(tmp_path: Path) -> Produced:
    return [(cell_of("hwlat"), rtla.hwlat_metrics(rtla.parse_hwlat_trace(data(f"rtla/{name}")), 10)[0])
            for name in ("hwlat-trace-doc-ftrace-rst.txt", "hwlat-trace-rt61-2cpus.txt")]


def ipc_runs(tmp_path: Path) -> Produced:
    raw = {tool: (DATA / "rt-tests-ipc" / f"{tool}-2-pairs-cpu1.json").read_bytes()
           for tool in ("ptsematest", "pmqtest", "sigwaittest")}
    cell = cell_of("ipc-latency")
    return [(cell, ipc.pair_metrics(ipc.parse_json(text, tool))) for tool, text in raw.items()]


def iperf3_runs(tmp_path: Path) -> Produced:
    names = ("tcp-send", "tcp-recv", "tcp-send-p2", "udp-send", "udp-recv", "udp-tail-loss")

    def report(name: str) -> list[Metric]:
        return iperf3.parse_report(data(f"iperf3/{name}.json"))[0]

    return [(cell_of("iperf3", f'protocol = "{name[:3]}"'), report(name))
            for name in names]


def membw_runs(tmp_path: Path) -> Produced:
    return [(cell_of("membw"), membw.bandwidth_metrics(membw.parse_output(data(f"mbw/{name}")), 0.0)[0])
            for name in ("memcpy-64M.txt", "dumb-64M.txt", "mcblock-64M-b64k.txt")]


def pps_runs(tmp_path: Path) -> Produced:
    sent = pps.parse_stats(data("pps/send.stats"), "pps-send")
    received = pps.parse_stats(data("pps/recv.stats"), "pps-recv")
    return [(cell_of("pps"), pps.pps_metrics(sent, received))]


def timerlat_runs(tmp_path: Path) -> Produced:
    return [(cell_of("timerlat"), rtla.timerlat_metrics(rtla.parse_timerlat_hist(data(f"rtla/{name}"), n))[0])
            for name, n in (("timerlat-hist-doc-5cpus.txt", 256),
                                  ("timerlat-hist-source-format-2cpus.txt", 256),
                                  ("timerlat-hist-rt61-cpu1-1000-entries.txt", 1000))]


def osnoise_runs(tmp_path: Path) -> Produced:
    return [(cell_of("osnoise"), rtla.osnoise_metrics(rtla.parse_osnoise_top(data(f"rtla/{name}"))))
            for name in ("osnoise-top-doc-4cpus.txt", "osnoise-top-rt61-2cpus.txt")]


def switch_runs(tmp_path: Path) -> Produced:
    return [(cell_of("switch"), switch.result_metrics(switch.parse_output(data(f"switch-latency/{name}"))))
            for name in ("fifo-4-threads.out", "fifo-2-threads-busy-cpu1.out", "other-3-threads-no-rt.out")]


def sysbench_runs(tmp_path: Path) -> Produced:
    reports = [sysbench.parse_report(data(f"sysbench/cpu-{name}.txt")) for name in ("1-thread", "2-threads")]
    return [(cell_of("sysbench-cpu"), sysbench.report_metrics(values)) for values in reports]


def tmpfs_runs(tmp_path: Path) -> Produced:
    seconds = tmpfs.parse_rounds(data("dd/gnu-coreutils-9.1-64M.txt"), 64 << 20)
    return [(cell_of("tmpfs-write"), rate_metrics("write", seconds, 64 << 20, count="rounds"))]


def transfer_runs(tmp_path: Path) -> Produced:
    return [(cell_of("ssh-transfer"), transfer.rates([0.5, 0.4, 0.6], 1 << 20))]


def udp_echo_runs(tmp_path: Path) -> Produced:
    cell = cell_of("udp-echo")
    return [(cell, udp_echo.UdpEcho._measurement(data(f"udp-echo-client/{name}"), 10**8, []).metrics)
            for name in ("fifo-64B-1ms.txt", "server-gone-midway.txt")]


def squarewave_runs(tmp_path: Path) -> Produced:
    """The analysis of a clean and of a blind wave, and what the program saw of the excluded periods."""
    period_ns = 1000
    t, level = square_wave(period_ns, 400, start_ns=10_000)
    blind = blind_intervals((t[100] + 100, t[103] + 100))
    seen_t, seen_level = observe(t, level, blind)
    split = period_split(seen_t, seen_level, period_ns, warmup_ns=0, blind=blind)
    clean = squarewave_metrics(t, level, period_ns, warmup_ns=0, probe="vpin")
    blinded = squarewave_metrics(seen_t, seen_level, period_ns, warmup_ns=0, blind=blind, probe="vpin")
    seen_by_self = excluded_seen_by_self(split, t, period_ns, probe="vpin")
    cell = squarewave_cell()
    return [(cell, clean), (cell, blinded), (cell, seen_by_self)]


CASES: dict[str, Callable[[Path], Produced]] = {
    "boot": boot_runs, "command": command_runs, "crypto": crypto_runs, "cyclictest": cyclictest_runs,
    "disk": disk_runs, "hwlat": hwlat_runs, "ipc-latency": ipc_runs, "iperf3": iperf3_runs,
    "membw": membw_runs, "osnoise": osnoise_runs, "pps": pps_runs, "squarewave": squarewave_runs,
    "ssh-transfer": transfer_runs, "switch": switch_runs, "sysbench-cpu": sysbench_runs,
    "timerlat": timerlat_runs, "tmpfs-write": tmpfs_runs, "udp-echo": udp_echo_runs,
}


def test_every_benchmark_has_a_case():
    assert sorted(CASES) == plugins.BENCHMARKS.names()


@pytest.mark.parametrize("benchmark", sorted(CASES))
def test_a_benchmark_produces_only_what_it_declares(benchmark, tmp_path):
    bench = plugins.BENCHMARKS.get(benchmark, "test")
    produced = CASES[benchmark](tmp_path)
    assert produced and all(metrics for _, metrics in produced)
    for cell, metrics in produced:
        assert undeclared(bench, cell, metrics) == [], cell
    # a headline name is one the benchmark can produce in some cell
    declared = set().union(*(bench.metric_names(cell) for cell, _ in produced))
    assert set(bench.headline) <= declared


def test_the_squarewave_names_are_exactly_what_the_analysis_gives():
    """No stale name either: a wave every period of which was observed has every bound."""
    produced = squarewave_runs(Path())
    assert {m.name for m in produced[0][1]} == set(METRIC_NAMES)
    assert {m.name for m in produced[1][1]} < set(METRIC_NAMES)  # a blind run lacks the upper bound
    assert {m.name for m in produced[2][1]} == set(EXCLUDED_SELF_NAMES)


def test_a_cell_declares_what_its_parameters_choose():
    """disk names its metrics after the pattern's direction, iperf3 after the protocol, cyclictest
    adds breaktrace's only with breaktrace, squarewave its probe's and impl's own."""
    bench = plugins.BENCHMARKS.get
    reads = bench("disk", "t").metric_names(cell_of("disk", 'pattern = "randread"'))
    assert "read_clat_p99_ns" in reads and not any(n.startswith("write_") for n in reads)
    udp = bench("iperf3", "t").metric_names(cell_of("iperf3", 'protocol = "udp"'))
    assert "jitter_ns" in udp and "retransmits" not in udp
    assert "breaktrace_fired" not in bench("cyclictest", "t").metric_names(cell_of("cyclictest"))
    assert "breaktrace_fired" in bench("cyclictest", "t").metric_names(
        cell_of("cyclictest", 'breaktrace = "500us"'))
    wave = bench("squarewave", "t")
    assert "probe_poll_max_ns" in wave.metric_names(squarewave_cell(probe="vpin"))
    assert "probe_poll_max_ns" not in wave.metric_names(squarewave_cell(probe="self"))
    assert "chatter_rtt_p99_ns" in wave.metric_names(squarewave_cell("unit", probe="sigrok", pin="unit"))


def test_a_probe_and_an_impl_declare_what_their_captures_carry():
    """The figures a probe or an impl adds to a run, from the functions that make them."""
    fit = Alignment(offset_ns=5, drift_ppm=0.1, program_edges=10, matched=10, extra=0, outside=0,
                    residual_p50_ns=1.0, residual_p90_ns=2.0, residual_max_ns=3.0)
    t = np.arange(10, dtype=np.int64) * 500
    level = (np.arange(10) % 2).astype(np.uint8)
    aligned = aligned_capture("sigrok", t, level, fit, edges="e", fix="f", unseen=lambda _t: Unseen(0))
    made = {
        "sigrok": [*aligned.metrics, *CountCheck(10, 9).metrics("sigrok")],
        "emulator": [*aligned.metrics, *CountCheck(10, 11).metrics("emulator")],
        "register-poll": [*aligned.metrics, *poll_metrics(Polls(t, np.zeros(10, dtype=np.uint32)))[0]],
        "scpi": period_statistics_metrics(dict(mean=1, min=1, max=1, std=0, count=5), 10**9, "scpi"),
    }
    for name, metrics in made.items():
        assert {m.name for m in metrics} <= set(PROBES.get(name, "t").metrics), name
    assert {m.name for m in chatter_metrics(np.array([1000, 2000]), 1)} <= set(IMPLS.get("unit", "t").metrics)


class _Loose(BenchmarkBase):
    """A benchmark that measures a name it does not declare."""

    metrics = ("declared",)

    def execute(self, ctx):
        return Measurement([Metric("declared", 1.0, ""), Metric("not_declared", 2.0, "")])


def test_the_suite_wide_check_catches_an_undeclared_metric(monkeypatch, tmp_path):
    monkeypatch.setitem(plugins.BENCHMARKS._entries, "loose", Entry("loose", "for tests", _Loose()))
    found = hold_to_declared(monkeypatch)  # as tests/conftest.py does for the registered benchmarks
    cell = Cell("t", "loose", "idle", ())
    _Loose().execute(context(cell, FakeTarget(), tmp_path))
    assert found == ["loose: not_declared"]
