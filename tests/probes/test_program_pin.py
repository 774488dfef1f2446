"""A run whose probe watched another signal than the program's pin (program_pin_watched = 0: the
sigrok demo device's own wave, a simulated instrument, a capture that does not align) never reads
as the program's timing: the terminal summary, the runs table, one run's detail, the HTML cells
and self-bias tables show its figures with the mark "not the program's pin", and export sees it."""

from __future__ import annotations

from jitterlab.analysis.watched import NOT_WATCHED, pin_watched_metric, watched_program_pin
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import terminal
from jitterlab.report.sections import squarewave as sw

PERIOD = 1_280_000


def _run(impl: str, id: str, value: float, watched: bool | None, self_value: float = 0.3):
    metrics = [Metric("max_rel_period_error", value, "ratio", "sigrok", "lower"),
               Metric("max_rel_period_error", self_value, "ratio", "self", "lower")]
    if watched is not None:
        metrics.append(pin_watched_metric("sigrok", watched))
    return run_record(squarewave_cell(impl, PERIOD, probe="sigrok", pin="external"), id=id, metrics=metrics)


def _line(text: str, start: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(start))


def test_the_mark_is_a_stored_metric_of_the_probe():
    metric = pin_watched_metric("sigrok", False)
    assert (metric.name, metric.value, metric.unit, metric.subject, metric.direction) == \
        ("program_pin_watched", 0.0, "", "sigrok", "none")
    assert not watched_program_pin(_run("python", "a", 0.0, False))
    assert watched_program_pin(_run("python", "b", 0.0, True))
    assert watched_program_pin(_run("c-mmap", "c", 0.0, None)), "vpin, self: watched by construction"


def test_the_terminal_summary_marks_the_demo_wave_instead_of_a_clean_zero():
    runs = [_run("python", "p1", 0.0, False), _run("python", "p2", 0.0, False),
            _run("c-mmap", "c1", 0.002, True), _run("c-mmap", "c2", 0.0, False)]
    text = terminal.plain_table(sw.summary_table(runs, "demo"))
    assert _line(text, "python").split(None, 3)[3] == f"0 % {NOT_WATCHED}"
    # the program's own runs give the value; the run that watched another signal is counted beside
    assert _line(text, "c-mmap").split(None, 3)[3] == f"0.2 % +1 {NOT_WATCHED}"
    assert NOT_WATCHED in text.splitlines()[-1], "the caption says what the mark means"


def test_the_runs_table_and_one_runs_detail_mark_it():
    runs = [_run("python", "p1", 0.0, False), _run("c-mmap", "c1", 0.002, True)]
    text = terminal.plain_table(terminal.runs_table(runs))
    assert _line(text, "p1").rstrip().endswith(f"0 % {NOT_WATCHED}")
    assert NOT_WATCHED not in _line(text, "c1")
    metrics = terminal.plain_table(terminal.run_detail(runs[0], [], {})[1])
    assert metrics.splitlines()[0] == f"metrics (sigrok: {NOT_WATCHED}, another signal's figures)"
    assert "program_pin_watched" in metrics
    grid = terminal.run_detail(runs[0], [], {})[0]
    assert any(NOT_WATCHED in str(cell) for column in grid.columns for cell in column.cells)


def test_the_html_cells_and_bias_tables_mark_it():
    runs = [_run("python", "p1", 0.0, False), _run("c-mmap", "c1", 0.002, True),
            _run("c-mmap", "c2", 0.0, False)]
    impl_of = sw.impl_namer(runs)
    cells = {c["impl"]: c for c in sw._cell_rows(runs, impl_of)}
    assert cells["python"]["not_watched"] == NOT_WATCHED and cells["python"]["worst"] == 0.0
    assert cells["python"]["muted"] and not cells["c-mmap"]["muted"]
    assert cells["c-mmap"]["not_watched"] == f"+1 {NOT_WATCHED}" and cells["c-mmap"]["worst"] == 0.002
    assert cells["c-mmap"]["worst_run"] == "c1", "the program's run, never the other signal's"
    bias = {b["cell"].split()[1]: b for b in sw._bias_rows(runs, impl_of)}
    assert bias["python"]["ratio"] == NOT_WATCHED and bias["python"]["other"] is None
    assert bias["c-mmap"]["ratio"] == "0.00667" and bias["c-mmap"]["n"] == 1  # 0.002 / 0.3, one run
