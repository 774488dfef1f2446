"""The kernel's latency tracers as rtla and tracefs print them (tests/data/rtla, sources in its
README): parsed exactly, metrics with known answers, refusals of cut and garbled outputs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis import rtla
from jitterlab.analysis.latency import HISTOGRAM_UNIT
from jitterlab.model.errors import RunFailed

DATA = Path(__file__).parent.parent / "data" / "rtla"


def text(name: str) -> str:
    return (DATA / name).read_text()


# --- timerlat ----------------------------------------------------------------------------------


def test_timerlat_hist_of_the_documentation():
    columns = rtla.parse_timerlat_hist(text("timerlat-hist-doc-5cpus.txt"), 256)
    assert [(c.cpu, c.kind) for c in columns[:4]] == [(0, "irq"), (0, "thread"), (1, "irq"), (1, "thread")]
    assert all(c.count == 600002 and c.overflow == 0 for c in columns)
    thr1 = columns[3]
    assert (thr1.min_us, thr1.avg_us, thr1.max_us) == (1, 5, 58)
    assert thr1.counts[58] == 1 and thr1.counts[59:].sum() == 0 and thr1.counts[38:40].sum() == 0
    metrics, series = rtla.timerlat_metrics(columns)
    by = {(m.subject, m.name): m.value for m in metrics}
    assert by[("", "thread_latency_max_ns")] == 58_000 and by[("", "irq_latency_max_ns")] == 24_000
    assert by[("", "thread_latency_samples")] == 5 * 600002
    assert by[("cpu1", "thread_latency_max_ns")] == 58_000
    # the mean is the buckets' (rtla's avg "5" is truncated): sum(i * n_i) / count
    exact = float((thr1.counts * np.arange(256)).sum() / 600002)
    assert by[("cpu1", "thread_latency_mean_ns")] == round(exact * 1000, 1)
    assert 5000 <= by[("cpu1", "thread_latency_mean_ns")] < 6000
    assert series["cpu1.thread.histogram_1us"].unit == HISTOGRAM_UNIT
    assert series["cpu1.irq.histogram_1us"].unit == rtla.IRQ_HISTOGRAM_UNIT
    assert len(series) == 10


def test_timerlat_quantiles_from_a_small_histogram_in_the_current_source_format():
    columns = rtla.parse_timerlat_hist(text("timerlat-hist-source-format-2cpus.txt"), 256)
    assert [(c.cpu, c.kind, c.count, c.overflow) for c in columns] == [
        (1, "irq", 8, 0), (1, "thread", 8, 0), (3, "irq", 8, 0), (3, "thread", 10, 2)]
    by = {(m.subject, m.name): m.value for m in rtla.timerlat_metrics(columns)[0]}
    # thread samples: cpu1 4x2us 4x3us; cpu3 2x2 5x3 1x7 and 2 over (max 300us)
    assert by[("", "thread_latency_p50_ns")] == 3000
    assert by[("", "thread_latency_p99_ns")] == 300_000  # among the overflow: the max
    assert by[("", "thread_latency_overflow")] == 2 and by[("", "thread_latency_max_ns")] == 300_000
    assert by[("cpu3", "thread_latency_mean_ns")] == 67_000  # overflowed: rtla's own avg
    assert by[("", "irq_latency_p50_ns")] == 1000 and by[("", "irq_latency_max_ns")] == 2000


def test_a_column_without_samples_is_a_dash():
    """rtla prints "-" for min/avg/max of a column that counted nothing (format_summary_value)."""
    out = []
    for line in text("timerlat-hist-source-format-2cpus.txt").splitlines():
        fields = line.split()
        if line.startswith("ALL:"):
            break
        if fields and (fields[0].isdigit() or fields[0] in ("over:", "count:", "min:", "avg:", "max:")):
            fields[3] = "-" if fields[0] in ("min:", "avg:", "max:") else "0"  # IRQ-003 counted nothing
            line = " ".join(fields)
        out.append(line)
    columns = rtla.parse_timerlat_hist("\n".join(out), 256)
    assert columns[2].count == 0 and (columns[2].min_us, columns[2].avg_us, columns[2].max_us) == (None,) * 3
    by = {(m.subject, m.name): m.value for m in rtla.timerlat_metrics(columns)[0]}
    assert by[("cpu3", "irq_latency_samples")] == 0 and ("cpu3", "irq_latency_max_ns") not in by
    assert by[("", "irq_latency_samples")] == 8


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda t: t.replace("microseconds (us)", "nanoseconds (ns)"), "no '# Time unit is microseconds"),
        (lambda t: t[: t.index("Index")], "printed no 'Index' line"),
        (lambda t: t[: t.index("max:")], "no max: row (cut short?)"),
        (lambda t: t.replace("Thr-001", "Foo-001"), "unexpected columns"),
        (lambda t: t.replace("\n7             0", "\n7             x"), "does not have 4 counts"),
        (lambda t: t.replace("count:        8", "count:        9"),
         "IRQ-001 holds 8 + over 0 samples for count 9"),
        (lambda t: t.replace("\n7 ", "\n300 "), "bucket 300 beyond the 256 asked for"),
        (lambda t: "Failed to apply CPUs config\nCould not apply config\n", "no '# Time unit"),
    ],
)
def test_garbled_timerlat_output_fails_clearly(mangle, reason):
    with pytest.raises(RunFailed) as info:
        rtla.parse_timerlat_hist(mangle(text("timerlat-hist-source-format-2cpus.txt")), 256)
    assert reason in info.value.reason


def test_no_sample_at_all_is_unmeasurable():
    column = rtla.TimerlatColumn(0, "thread", np.zeros(10, dtype=np.int64), 0, 0, None, None, None)
    with pytest.raises(RunFailed) as info:
        rtla.timerlat_metrics([column])
    assert info.value.status == "unmeasurable"


# --- osnoise -----------------------------------------------------------------------------------


def test_osnoise_top_of_the_documentation():
    cpus = rtla.parse_osnoise_top(text("osnoise-top-doc-4cpus.txt"))
    assert [c.cpu for c in cpus] == [0, 1, 2, 3]
    assert cpus[1] == rtla.OsnoiseCpu(1, 59, 53100000, 338339, 99.36282, 8092, 24,
                                      {"hw": 399, "nmi": 0, "irq": 53130, "softirq": 1448, "thread": 31})
    by = {(m.subject, m.name): m for m in rtla.osnoise_metrics(cpus)}
    total_noise = 304896 + 338339 + 290842 + 204935
    assert by[("", "noise_ns")].value == total_noise * 1000
    assert by[("", "cpu_available_percent")].value == round(100 * (1 - total_noise / (4 * 53100000)), 5)
    assert by[("", "noise_max_ns")].value == 8_092_000 and by[("", "noise_max_single_ns")].value == 56_000
    assert by[("", "hw_noise_events")].value == 549 + 399 + 855 + 290
    assert by[("cpu2", "irq_noise_events")].value == 53110
    assert by[("cpu0", "cpu_available_percent")].value == pytest.approx(99.42580, abs=1e-4)
    assert by[("", "cpu_available_percent")].direction == "higher"
    assert by[("", "noise_ns")].direction == "lower"


def test_osnoise_output_with_terminal_escapes_and_a_bad_row():
    raw = "\x1b[2J\x1b[1;1H" + text("osnoise-top-doc-4cpus.txt")
    assert len(rtla.parse_osnoise_top(raw)) == 4
    with pytest.raises(RunFailed, match="CPU 0 has 304896 us noise in 53100000 us runtime but reports 90.0%"):
        rtla.parse_osnoise_top(raw.replace("99.42580", "90.00000"))
    with pytest.raises(RunFailed, match="printed no CPU row"):
        rtla.parse_osnoise_top(raw.split("CPU Period")[0])
    with pytest.raises(RunFailed, match="no '| time is in us' line"):
        rtla.parse_osnoise_top(text("osnoise-tracer-not-found.txt"))


# --- hwlat -------------------------------------------------------------------------------------


def test_hwlat_trace_of_the_documentation():
    trace = rtla.parse_hwlat_trace(text("hwlat-trace-doc-ftrace-rst.txt"))
    assert len(trace.samples) == 12 and trace.lost == 0
    assert trace.samples[0] == rtla.HwlatSample(1, 11, 12, 6, 0)
    assert trace.samples[9].nmi_count == 1 and trace.samples[11].count is None
    metrics, series = rtla.hwlat_metrics(trace, 10)
    by = {m.name: m.value for m in metrics}
    assert by == {"hwlat_events": 12, "hwlat_threshold_ns": 10_000, "hwlat_nmi_count": 2,
                  "hwlat_max_ns": 18_000, "hwlat_inner_max_ns": 18_000, "hwlat_outer_max_ns": 17_000}
    assert list(series["hwlat"].values[:3]) == [12_000, 16_000, 16_000]


def test_hwlat_counts_gaps_and_lost_entries():
    lines = text("hwlat-trace-doc-ftrace-rst.txt").splitlines()
    lines = [line for line in lines if "#12 " not in line]
    trace = rtla.parse_hwlat_trace("\n".join(lines).replace("13/13", "11/14"))
    assert trace.lost == 3
    by = {m.name: m.value for m in rtla.hwlat_metrics(trace, 10)[0]}
    assert by["hwlat_gaps"] == 6 + 1 + 5 + 1 + 1 + 2 + 1 + 1 + 1 + 1 + 1


def test_an_empty_hwlat_trace_has_no_maximum():
    empty = "# tracer: hwlat\n#\n# entries-in-buffer/entries-written: 0/0   #P:2\n#\n"
    metrics, series = rtla.hwlat_metrics(rtla.parse_hwlat_trace(empty), 10)
    assert {m.name: m.value for m in metrics} == {"hwlat_events": 0, "hwlat_threshold_ns": 10_000,
                                                   "hwlat_nmi_count": 0}
    assert series == {}


@pytest.mark.parametrize(("raw", "reason"), [
    ("# tracer: nop\n", "the trace is not the hwlat tracer's (first line '# tracer: nop')"),
    ("", "the trace is not the hwlat tracer's"),
    ("# tracer: hwlat\n   <...>-1 [000] d... 1.0: #1 inner/outer(us): x/1\n",
     "hwlat trace line does not parse"),
])
def test_garbled_hwlat_traces_fail(raw, reason):
    with pytest.raises(RunFailed) as info:
        rtla.parse_hwlat_trace(raw)
    assert reason in info.value.reason


# --- real outputs of rtla 6.1 on a PREEMPT_RT 6.1 kernel (see the data README) -------------------


def test_real_timerlat_hist_with_overflow():
    columns = rtla.parse_timerlat_hist(text("timerlat-hist-rt61-2cpus.txt"), 200)
    assert [(c.cpu, c.kind, c.count, c.overflow, c.max_us) for c in columns] == [
        (0, "irq", 2086, 801, 35059), (0, "thread", 2086, 1293, 35839),
        (1, "irq", 2125, 645, 40806), (1, "thread", 2125, 1374, 41007)]
    by = {(m.subject, m.name): m.value for m in rtla.timerlat_metrics(columns)[0]}
    assert by[("", "thread_latency_overflow")] == 1293 + 1374
    assert by[("", "thread_latency_max_ns")] == 41_007_000 and by[("", "irq_latency_min_ns")] == 23_000
    assert by[("", "thread_latency_p50_ns")] == 41_007_000  # more than half overflowed: the max is the bound
    assert by[("cpu0", "thread_latency_mean_ns")] == 726_000  # overflowed: rtla's avg


def test_real_timerlat_hist_of_one_cpu():
    [irq, thread] = rtla.parse_timerlat_hist(text("timerlat-hist-rt61-cpu1-1000-entries.txt"), 1000)
    assert (irq.cpu, irq.count, irq.overflow, thread.overflow) == (1, 3611, 37, 58)
    assert int(thread.counts.sum()) + thread.overflow == 3611


def test_real_osnoise_top_with_colour_escapes():
    cpus = rtla.parse_osnoise_top(text("osnoise-top-rt61-2cpus.txt"))
    assert [(c.cpu, c.periods, c.noise_us, c.sources["hw"], c.sources["thread"]) for c in cpus] == [
        (0, 3, 1275928, 1332, 99), (1, 3, 1646733, 839, 126)]


def test_real_hwlat_trace_with_count():
    trace = rtla.parse_hwlat_trace(text("hwlat-trace-rt61-2cpus.txt"))
    assert len(trace.samples) == 20 and trace.lost == 0
    assert trace.samples[0] == rtla.HwlatSample(1, 4046, 8086, 246, 0)
    by = {m.name: m.value for m in rtla.hwlat_metrics(trace, 1)[0]}
    assert by["hwlat_events"] == 20 and by["hwlat_gaps"] == sum(s.count for s in trace.samples)


def test_timerlat_runs_in_the_report_and_compare(tmp_path):
    """The standard report shows timerlat's declared headline and draws its thread latency only;
    compare grades its metrics by their stored direction."""
    from jitterlab.analysis.compare import Selector, compare
    from jitterlab.model.fakes import cell, run_record
    from jitterlab.report.html import render
    from jitterlab.report.summaries import summarize
    from jitterlab.store.catalog import Store
    from jitterlab.store.raw import write_raw

    store = Store(tmp_path / "s")
    outputs = {"a": ("timerlat-hist-rt61-2cpus.txt", 200),
               "b": ("timerlat-hist-rt61-cpu1-1000-entries.txt", 1000)}
    for image, (name, entries) in outputs.items():
        cid = store.new_campaign(f"tl-{image}", "fp", "c.toml", "", {"image": image})
        metrics, series = rtla.timerlat_metrics(rtla.parse_timerlat_hist(text(name), entries))
        for rep in range(2):
            run_id = f"{image}{rep}"
            raw = f"raw/{run_id}.parquet"
            sha = write_raw(store.root / raw, series)
            store.commit_run(run_record(cell("timerlat", {"period": 1_000_000}), id=run_id, campaign_id=cid,
                                        repetition=rep, labels={"image": image}, raw_path=raw, raw_sha256=sha,
                                        metrics=metrics, cell_key="tl"))
    drawn = sorted(k for k, v in series.items() if v.unit in ("ns", HISTOGRAM_UNIT))  # the standard section
    assert drawn == ["cpu1.thread.histogram_1us"]  # the last output: one CPU; its IRQ series is not drawn
    [bench] = summarize(store.runs())
    assert bench.columns == ["thread_latency_max_ns", "thread_latency_p99_ns", "irq_latency_max_ns",
                             "irq_latency_p99_ns"]
    html = render(store, tmp_path / "r.html", figure_files=False).path.read_text()
    assert 'data-figure="distribution" data-benchmark="timerlat"' in html
    result = compare(store.runs(), Selector("image", "a"), Selector("image", "b"))
    row = next(r for r in result.rows if r.metric == "thread_latency_max_ns" and r.view == "per-run")
    assert (row.direction, row.baseline, row.candidate) == ("lower", 41_007_000, 11_220_000)
