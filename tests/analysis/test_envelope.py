"""envelope: the shortest period that holds a threshold in every repetition."""

from __future__ import annotations

import dataclasses

from jitterlab.analysis import envelope as env
from jitterlab.campaign import cells
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric, RunRecord, StoredSettings
from jitterlab.report.traits import subject_of

MS = 1_000_000


def envelope(runs: list[RunRecord], **kwargs) -> list[env.EnvelopeRow]:
    """The envelope of squarewave runs, their periods read as the report reads them (model.traits)."""
    return env.envelope(runs, period_of=lambda r: WaveCell.of_cell(r.cell).period_ns, subject_of=subject_of,
                        **kwargs)


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
    """The envelope is made of the runs of periodic benchmarks, as their traits say (model.traits)."""
    from jitterlab.report.traits import periodic

    r = run(MS, 0.001)
    other = dataclasses.replace(r, id="x", cell=dataclasses.replace(r.cell, benchmark="cyclictest"))
    assert periodic([r, other]) == [r]
    assert [x.impl for x in envelope(periodic([r, other]))] == ["c-fifo"]


def pct_run(period_ns: int, err_max: float, err_p99: float, rep: int = 0, labels=None,
            campaign_id: int = 1, impl: str = "c-fifo") -> RunRecord:
    metrics = [Metric("max_rel_period_error", err_max, "ratio", "vpin"),
               Metric("p99_rel_period_error", err_p99, "ratio", "vpin")]
    return run_record(squarewave_cell(impl, period_ns, target="t"), id=f"{period_ns}{rep}{labels}",
                      cell_key=f"{period_ns}", repetition=rep, labels=labels or {},
                      campaign_id=campaign_id, metrics=metrics)


def test_percentile_rule_survives_a_single_stall():
    # one hypervisor stall per run: the max is 50 % everywhere, the p99 stays under 1 % down to 1 ms
    runs = [pct_run(p, 0.5, e, rep) for p, e in ((10 * MS, 0.002), (MS, 0.008), (MS // 10, 0.05))
            for rep in range(3)]
    rows = {r.rule: r for r in envelope(runs, rules=("max", "p99"))}
    assert rows["max"].shortest_ns == {0.01: None, 0.10: None}
    assert rows["p99"].shortest_ns == {0.01: MS, 0.10: MS // 10}
    assert rows["p99"].rule_text == "p99 |period error| of every run"
    records = env.records(list(rows.values()))
    assert {(r["rule"], r["metric"], r["threshold"], r["shortest_period_ns"]) for r in records} == {
        ("max", "max_rel_period_error", 0.01, None), ("max", "max_rel_period_error", 0.10, None),
        ("p99", "p99_rel_period_error", 0.01, MS), ("p99", "p99_rel_period_error", 0.10, MS // 10)}


def test_rules_come_from_the_campaign():
    r = pct_run(MS, 0.5, 0.001)
    assert env.rules_of([r]) == env.DEFAULT_RULES == ("max", "p99")
    chosen = dataclasses.replace(r, settings=StoredSettings(envelope=("p99.9", "max")))
    assert env.rules_of([chosen, r]) == ("p99.9", "max")


def test_labels_that_number_repetitions_are_not_cell_identity():
    # imported captures: grp a/b are two setups, capture=N numbers the runs of each
    runs = [pct_run(MS, 0.01, 0.001, rep, {"grp": g, "capture": str(i)})
            for g in ("a", "b") for rep, i in enumerate((1, 2, 3))]
    assert cells.identity_labels(runs) == ["grp"]
    # numbered across both groups (1..6) it is still a repetition label
    runs = [pct_run(MS, 0.01, 0.001, i, {"grp": "ab"[i // 3], "capture": str(i + 1)}) for i in range(6)]
    assert cells.identity_labels(runs) == ["grp"]
    # a label set for a whole campaign (run --label image=...) is identity, even with 1 run each
    runs = [pct_run(MS, 0.01, 0.001, 0, {"image": v}, campaign_id=k) for k, v in enumerate(("A", "B"))]
    assert cells.identity_labels(runs) == ["image"]


def test_export_and_report_keep_repetition_labels_in_one_envelope_row(tmp_path):
    from jitterlab.report.formats.rows import envelope_records

    runs = [pct_run(p, 0.005, 0.001, rep, {"grp": "a", "capture": f"{p}-{rep}"})
            for p in (10 * MS, MS) for rep in range(3)]
    records = envelope_records(runs)
    assert {(r["impl"], r["rule"], r["min_repetitions"]) for r in records} == {
        ("c-fifo", "max", 3), ("c-fifo", "p99", 3)}


def bounded_run(period_ns: int, p99: float, p99_bound: float | None, rep: int = 0,
                status: str = "ok", pin_watched: float | None = None) -> RunRecord:
    """A run as the analysis stores it now: p99 with its upper bound (None: unbounded)."""
    metrics = [Metric("max_rel_period_error", p99, "ratio", "vpin"),
               Metric("p99_rel_period_error", p99, "ratio", "vpin"),
               Metric("unobserved_periods", 0.0 if p99_bound == p99 else 50.0, "count", "vpin")]
    if p99_bound is not None:
        metrics.append(Metric("p99_rel_period_error_upper_bound", p99_bound, "ratio", "vpin"))
    if pin_watched is not None:
        metrics.append(Metric("program_pin_watched", pin_watched, "flag", "vpin"))
    return run_record(squarewave_cell("python", period_ns, target="t"), id=f"{period_ns}-{rep}",
                      cell_key=f"{period_ns}", repetition=rep, status=status,
                      metrics=[] if status == "unavailable" else metrics)


def test_a_blind_run_holds_by_its_bound_not_its_censored_value():
    # 10 ms: p99 0.5 %, provably under 1 %; 1 ms: seen 0.5 % but up to 3 % -> unproven at 1 %;
    # 100 us: p99 0.5 % but unbounded (too many periods unobserved) -> unproven at 10 % too
    runs = [bounded_run(10 * MS, 0.005, 0.008), bounded_run(MS, 0.005, 0.03),
            bounded_run(MS // 10, 0.005, None)]
    [row] = envelope(runs, rules=("p99",))
    assert row.shortest_ns == {0.01: 10 * MS, 0.10: MS}
    assert row.outcome(0.01) == row.outcome(0.10) == "held"
    assert row.stopped_by == {0.01: "unproven", 0.10: "unproven"}
    [nothing] = envelope([bounded_run(MS, 0.005, None)], rules=("p99",))
    assert nothing.shortest_ns == {0.01: None, 0.10: None}
    assert nothing.outcome(0.01) == "unproven"  # not "none": the probe's blindness stopped it
    # a value over the threshold is a plain "none", whatever the bound
    [over] = envelope([bounded_run(MS, 0.02, None)], rules=("p99",))
    assert over.outcome(0.01) == "none" and over.outcome(0.10) == "unproven"


def test_an_old_run_counts_only_when_nothing_was_excluded():
    clean = run(MS, 0.001)
    blind = dataclasses.replace(clean, id="b", metrics={
        **clean.metrics, ("vpin", "excluded_periods"): Metric("excluded_periods", 3, "count", "vpin")})
    assert env.provable(clean, "max", "vpin") == 0.001 and env.provable(blind, "max", "vpin") is None
    assert envelope([blind])[0].outcome(0.01) == "unproven"


def test_cells_that_never_ran_are_unavailable_not_none():
    runs = [bounded_run(p, 0.0, None, rep, status="unavailable") for p in (10 * MS, MS) for rep in (0, 1)]
    [row] = envelope(runs, rules=("p99",))
    assert row.state == "unavailable"
    assert row.shortest_ns == {0.01: None, 0.10: None}
    assert {r["outcome"] for r in env.records([row])} == {"unavailable"}
    # measured at 10 ms, never ran at 1 ms: the shortest is 10 ms, stopped by "unavailable"
    [part] = envelope([bounded_run(10 * MS, 0.001, 0.001), bounded_run(MS, 0.0, None, status="unavailable")],
                      rules=("p99",))
    assert part.shortest_ns[0.01] == 10 * MS and part.stopped_by[0.01] == "unavailable"


def test_a_probe_that_did_not_watch_the_program_contributes_no_envelope():
    runs = [bounded_run(p, 0.0, 0.0, pin_watched=0.0) for p in (10 * MS, MS)]
    [row] = envelope(runs, rules=("p99",))
    assert row.shortest_ns == {0.01: None, 0.10: None}
    assert row.outcome(0.01) == "not the program's pin"
    watched = [bounded_run(p, 0.0, 0.0, pin_watched=1.0) for p in (10 * MS, MS)]
    assert envelope(watched, rules=("p99",))[0].shortest_ns == {0.01: MS, 0.10: MS}
