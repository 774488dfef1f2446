"""`jitterlab show RUN_ID` says when the run's worst moment was and, for cyclictest's breaktrace,
what the trace attached to the run says about it: read back from a store whose runs carry known
answers (tests/analysis/test_worst.py, test_breaktrace.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis.latency import HISTOGRAM_UNIT, histogram_metrics
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.cli.main import main
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.series import EdgeSeries, Samples
from jitterlab.store.catalog import Store

MS = 1_000_000
TAIL = (Path(__file__).parent.parent / "data" / "cyclictest" / "trace-tail.txt").read_bytes()


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("why") / "r"
    store = Store(root)
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    t = np.arange(400, dtype=np.int64) * (MS // 2) + 5_000_000_000
    t[301:] += 400_000  # periods 280 and 281 of the 378 after the warm-up are 40 % late
    level = (np.arange(400) % 2).astype(np.uint8)
    store.commit_run(run_record(
        squarewave_cell("c-fifo", MS), id="aaa111", campaign_id=cid, settings={"warmup_ns": 10 * MS},
        metrics=squarewave_metrics(t, level, MS, warmup_ns=10 * MS, probe="vpin")),
        series={"vpin": EdgeSeries(t, level)})
    counts = np.zeros(100, dtype=np.int64)
    counts[[10, 20, 72]] = (500, 499, 1)
    broke = [*histogram_metrics(counts, overflow=0, min_ns=10e3, mean_ns=10.1e3, max_ns=72e3),
             Metric("breaktrace_fired", 1.0, "bool", "", "none")]
    for rep, (run_id, tail) in enumerate((("bbb222", TAIL), ("ccc333", b"# tracer: nop\n"))):
        store.commit_run(run_record(cell("cyclictest", {"interval": MS, "breaktrace": 30_000}), id=run_id,
                                    campaign_id=cid, repetition=rep, metrics=broke),
                         series={"thread0.histogram_1us": Samples(counts, HISTOGRAM_UNIT)},
                         files={"trace-tail.txt": tail})
    store.close()
    return root


def shown(results: Path, run_id: str, capsys) -> list[str]:
    assert main(["show", "--results", str(results), run_id]) == 0
    return capsys.readouterr().out.splitlines()


def test_show_places_the_worst_period_in_the_run(results, capsys):
    out = shown(results, "aaa111", capsys)
    at = out.index("worst period: when, in the run (from the probe's first edge)")
    assert out[at + 1].split() == ["probe", "period", "error", "began", "at", "which"]
    assert out[at + 2].split() == ["vpin", "1.4", "ms", "+40", "%", "149.5", "ms", "of", "199.9", "ms",
                                   "period", "280", "of", "378"]
    assert out.index("metrics") > at  # under the run's head, above its metrics


def test_show_digests_the_breaktrace_and_says_a_histogram_keeps_no_order(results, capsys):
    out = shown(results, "bbb222", capsys)
    assert ("when  cyclictest keeps a histogram of its samples, not when each was: its worst is not placed "
            "in the run; the run stopped at its breaktrace, so its worst wake-up was its last (the trace "
            "below)") in out
    at = out.index("breaktrace: the kernel trace attached (attachments/bbb222/trace-tail.txt)")
    assert [line.split("  ", 1)[0] for line in out[at + 1:at + 6]] == [
        "late", "ran there", "interrupts", "woken", "trace"]
    assert out[at + 1].endswith("cyclictest-4242 woke 72 µs late on CPU 1 (threshold 30 µs); its mark at "
                                "1234.500072 s on the trace's clock")
    assert out[at + 2].endswith("stress-ng-cpu (pid 5150) 70 µs, cyclictest (pid 4242) 2 µs (in the 72 µs "
                                "before the mark, on CPU 1)")
    assert out[at + 3].endswith("IRQ 41 virtio3-rx 30 µs, softirq TIMER 9 µs (in the 72 µs before the mark, "
                                "on CPU 1)")
    assert out[at + 4].endswith("2 µs after it was due; on the CPU 68 µs after that")
    assert out[at + 5].endswith("attachments/bbb222/trace-tail.txt (13 event lines)")


def test_a_trace_without_a_mark_or_gone_is_said_so(results, capsys):
    out = shown(results, "ccc333", capsys)
    at = out.index("breaktrace: the kernel trace attached (attachments/ccc333/trace-tail.txt)")
    assert out[at + 1] == ("trace  0 event lines, none of them cyclictest's mark (hit latency threshold): "
                           "read the file")
    (results / "attachments" / "ccc333" / "trace-tail.txt").unlink()
    out = shown(results, "ccc333", capsys)
    assert any(line.startswith("breaktrace  its trace attachments/ccc333/trace-tail.txt cannot be read: ")
               for line in out)
