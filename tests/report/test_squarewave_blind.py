"""The squarewave section never shows a blind probe's numbers as clean ones: the envelope says why
a cell holds nothing (unproven, unavailable), percentiles show their interval, the self-bias ratio
and the summary mark a censored side."""

from __future__ import annotations

from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report.sections import squarewave as sw
from jitterlab.report.terminal import plain_table

MS = 1_000_000


def _run(impl: str, period_ns: int, values: dict[str, float], *, id: str, probe: str = "vpin",
         status: str = "ok", self_values: dict[str, float] | None = None):
    metrics = [Metric(name, v, "ratio", probe) for name, v in values.items()]
    metrics += [Metric(name, v, "ratio", "self") for name, v in (self_values or {}).items()]
    return run_record(squarewave_cell(impl, period_ns, target="board", probe=probe), id=id,
                      status=status, metrics=[] if status == "unavailable" else metrics)


def test_the_envelope_says_unavailable_for_cells_that_never_ran():
    runs = [_run("node", p, {}, id=f"n{p}", status="unavailable") for p in (10 * MS, MS)]
    runs += [_run("c-fifo", p, {"max_rel_period_error": 0.5, "p99_rel_period_error": 0.5,
                                "unobserved_periods": 0}, id=f"c{p}") for p in (10 * MS, MS)]
    text = plain_table(sw.envelope_table(runs, "envelope"))
    node = next(line for line in text.splitlines() if line.startswith("node"))
    c_fifo = next(line for line in text.splitlines() if line.startswith("c-fifo"))
    assert node.split()[3:7] == ["unavailable"] * 4 and "none" not in node
    assert c_fifo.split()[3:7] == ["none"] * 4  # measured, and over every threshold
    assert "unavailable: never ran on this target" in text


def test_the_envelope_holds_by_the_bound_and_says_unproven_when_blind():
    seen_clean = {"max_rel_period_error": 0.001, "p99_rel_period_error": 0.001, "unobserved_periods": 600,
                  "p99_rel_period_error_upper_bound": 0.2}  # the unseen 5 % may hold the bad periods
    runs = [_run("python", MS, seen_clean, id="p")]
    _, [row] = sw.envelope_rows(runs, sw.impl_namer(runs))
    # max < 1 %, max < 10 %: no upper bound (periods unobserved); p99 < 10 %: bound 20 %
    assert row["shortest"] == ["unproven (blind)"] * 4


def test_a_percentile_of_a_blind_run_reads_as_its_interval():
    r = _run("python", MS, {"p50_rel_period_error": 0.0, "p50_rel_period_error_lower_bound": 0.0,
                            "p50_rel_period_error_upper_bound": 0.1, "p99_rel_period_error": 0.1,
                            "p99_rel_period_error_lower_bound": 0.1, "unobserved_periods": 4,
                            "max_rel_period_error": 0.1, "max_rel_period_error_bound": 0.3}, id="r")
    assert sw.percentile_text(r, "p50_rel_period_error") == "0 % [0 % – 10 %]"
    assert sw.percentile_text(r, "p99_rel_period_error") == "10 % [10 % – unbounded]"
    assert sw.percentile_text(r, "max_rel_period_error") == "10 % [30 % – unbounded]"
    clean = _run("python", MS, {"p99_rel_period_error": 0.1, "unobserved_periods": 0}, id="c")
    assert sw.percentile_text(clean, "p99_rel_period_error") == "10 %"


def test_self_bias_from_a_blind_side_says_so():
    # vpin blind 5 % of the run: its max 3.52 is a lower bound; the program saw 79.39
    blind = _run("python", 100_000, {"max_rel_period_error": 3.52, "unobserved_periods": 2500},
                 id="b", self_values={"max_rel_period_error": 12.5, "unobserved_periods": 0})
    clean = _run("c-fifo", 100_000, {"max_rel_period_error": 0.02, "unobserved_periods": 0},
                 id="c", self_values={"max_rel_period_error": 0.01, "unobserved_periods": 0})
    rows = {row["cell"].split()[1]: row for row in sw._bias_rows([blind, clean], sw.impl_namer([blind]))}
    assert rows["python"]["ratio"] == "≥ 0.282"
    assert rows["python"]["censored"] == "vpin blind: 2,500 periods unobserved, its max is a lower bound"
    assert rows["c-fifo"]["ratio"] == "2" and rows["c-fifo"]["censored"] == ""
    both = _run("bash", MS, {"max_rel_period_error": 1.0, "unobserved_periods": 1}, id="x",
                self_values={"max_rel_period_error": 2.0, "unobserved_periods": 3})
    [row] = sw._bias_rows([both], sw.impl_namer([both]))
    assert row["ratio"] == "—"


def test_the_summary_marks_a_blind_worst_as_at_least():
    runs = [_run("python", MS, {"max_rel_period_error": 0.02, "max_rel_period_error_bound": 0.5,
                                "unobserved_periods": 10}, id="b"),
            _run("c-fifo", MS, {"max_rel_period_error": 0.02, "unobserved_periods": 0}, id="c")]
    lines = plain_table(sw.summary_table(runs, "summary")).splitlines()
    assert next(x for x in lines if x.startswith("python")).endswith("≥ 50 %")
    assert next(x for x in lines if x.startswith("c-fifo")).endswith(" 2 %")


def test_a_probe_that_watched_its_own_demo_signal_gives_no_envelope():
    perfect = {"max_rel_period_error": 0.0, "p99_rel_period_error": 0.0, "unobserved_periods": 0,
               "p99_rel_period_error_upper_bound": 0.0, "max_rel_period_error_upper_bound": 0.0,
               "program_pin_watched": 0.0}
    runs = [_run("python", p, perfect, id=f"d{p}", probe="sigrok") for p in (10 * MS, MS)]
    _, [row] = sw.envelope_rows(runs, sw.impl_namer(runs))
    assert row["shortest"] == ["not the program's pin"] * 4
