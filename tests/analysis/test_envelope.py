"""envelope: the shortest period that holds a threshold in every repetition."""

from __future__ import annotations

import dataclasses

from jitterlab.analysis.envelope import envelope
from jitterlab.fakes import run_record, squarewave_cell
from jitterlab.records import Metric
from jitterlab.store.catalog import RunRecord

MS = 1_000_000


def run(period_ns: int, err: float | None, impl: str = "c-fifo", rep: int = 0,
        status: str = "ok") -> RunRecord:
    metrics = {} if err is None else {
        ("vpin", "max_rel_period_error"): Metric("max_rel_period_error", err, "ratio", "vpin")}
    return run_record(squarewave_cell(impl, period_ns, target="t"), id=f"{impl}{period_ns}{rep}",
                      cell_key=f"{impl}{period_ns}", repetition=rep, status=status,
                      metrics=metrics.values())


def test_shortest_period_holding_in_every_repetition():
    runs = [run(100 * MS, 0.001), run(100 * MS, 0.002, rep=1),
            run(10 * MS, 0.005), run(10 * MS, 0.02, rep=1),  # one repetition breaks 1 %
            run(1 * MS, 0.05), run(1 * MS, 0.06, rep=1),
            run(MS // 10, 0.5), run(MS // 10, 0.05, rep=1)]
    [row] = envelope(runs)
    assert row.shortest_ns == {0.01: 100 * MS, 0.10: 1 * MS}
    assert row.periods_ns == (100 * MS, 10 * MS, MS, MS // 10) and row.min_repetitions == 2


def test_failed_runs_do_not_hold_and_nothing_holds_is_none():
    runs = [run(10 * MS, 0.001), run(10 * MS, None, rep=1, status="failed"), run(MS, 0.001),
            run(10 * MS, 0.5, impl="bash"), run(MS, 0.001, impl="bash")]
    rows = {r.impl: r for r in envelope(runs)}
    # c-fifo: 10 ms has a failed repetition, so no period holds (longer periods must hold too)
    assert rows["c-fifo"].shortest_ns == {0.01: None, 0.10: None}
    assert rows["bash"].shortest_ns == {0.01: None, 0.10: None}


def test_other_benchmarks_are_ignored():
    r = run(MS, 0.001)
    other = dataclasses.replace(r, id="x", cell=dataclasses.replace(r.cell, benchmark="cyclictest"))
    assert [x.impl for x in envelope([r, other])] == ["c-fifo"]
