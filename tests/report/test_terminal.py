"""What a person reads in the terminal, from a synthetic store with exactly known answers: the
summary rule, units, warnings grouped by cause, one run in detail, and piped output that is never
cut at 80 columns."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from jitterlab.model.fakes import run_record
from jitterlab.model.records import Metric, Warning_
from jitterlab.report.terminal import console, plain_table, run_detail, show_warnings, summary_tables
from jitterlab.report.warning_groups import RUN, SYSTEM, Note, grouped

MS = 1_000_000


@pytest.fixture
def store(latency_store):
    return latency_store


def piped(*renderables) -> str:
    out = console(file=io.StringIO())  # a file is not a terminal: what CI logs and `| less` get
    assert not out.is_terminal
    for r in renderables:
        out.print(r)
    return out.file.getvalue()


def test_summary_takes_the_worst_run_of_worst_case_metrics_and_names_the_rule(store):
    text = piped(*summary_tables(store.runs(), "rt-latency"))
    header = next(line for line in text.splitlines() if line.startswith("cell"))
    assert "maximum latency (worst run)" in header and "99th percentile latency (median of runs)" in header
    assert "latency overflow (worst run)" in header
    row = next(line for line in text.splitlines() if line.startswith("priority=95"))
    # 40.2 ms and 184 µs: the worst run, not the median 20.19 ms that no run produced; overflow 5
    assert "40.2 ms" in row and "20.19" not in text and row.split()[-1] == "5"
    assert "125 µs" in row  # p99: 120 and 130 µs, a central metric: their median
    assert "4.5" not in text and "e+" not in text  # no fractional counts, no scientific notation
    assert "every cell: histogram=2000" in text  # of the keys every cell shares, only those off
    assert "priority=95" in text and "interval" not in text and "mlock" not in text  # their default


def test_piped_tables_are_plain_rows_never_cut_at_80_columns(store):
    text = piped(*summary_tables(store.runs(), "rt-latency"))
    assert max(len(line) for line in text.splitlines()) > 80  # wide, and left whole
    assert "…" not in text and "│" not in text and "┃" not in text
    header = next(line for line in text.splitlines() if line.startswith("cell"))
    assert header.split("  ")[0] == "cell"


def test_show_through_a_real_pipe_keeps_headers_and_ids(store):
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    argv = [sys.executable, "-m", "jitterlab.cli", "show", "--runs", "--results", str(store.root)]
    done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "…" not in done.stdout
    assert any("latency overflow (worst run)" in line for line in lines)
    for run in store.runs():
        assert any(line.startswith(run.id + " ") for line in lines)  # every id whole, at the start
    assert any("virtualized (kvm)" in line and "measure on bare metal" in line for line in lines)
    # the four runs' overflow warnings: one line, the numbers as a range, the count of runs
    [late] = [line for line in lines if "later than the histogram" in line]
    assert "4–5 wake-up(s)" in late and "4 runs" in late and "raise histogram" in late
    system = next(i for i, line in enumerate(lines) if "virtualized" in line)
    assert system < lines.index(late)  # system-level first


def test_plain_table_keeps_justification_and_strips_markup():
    from rich.table import Table
    from rich.text import Text

    table = Table(title="t", caption="c")
    table.add_column("name")
    table.add_column("value", justify="right")
    table.add_row(Text("a [image=1.10]", style="red"), "1")  # data as Text: brackets stay literal
    table.add_row("bb", "[bold]100[/]")
    assert plain_table(table).splitlines() == ["t", "name" + " " * 12 + "value",
                                               "a [image=1.10]" + " " * 6 + "1",
                                               "bb" + " " * 16 + "100", "c"]


def test_run_detail_groups_sysinfo_and_orders_percentiles(store):
    run = store.runs()[0]
    text = piped(*run_detail(run, [], store.sysinfo(run.sysinfo_id)))
    lines = text.splitlines()
    rows = [line.split() for line in lines]
    names = [r[1] for r in rows if r[:1] == ["-"] and r[1].startswith("latency_p")]
    assert names == ["latency_p50_ns", "latency_p99_ns", "latency_p999_ns", "latency_p9999_ns"]
    assert any("latency_max_ns" in line and "40.2 ms" in line for line in lines)
    assert any("latency_overflow" in line and line.split()[2] == "4" for line in lines)
    groups = [r[0] for r in rows if r and r[0] in ("system", "kernel", "CPUs", "programs")]
    assert groups == ["system", "kernel", "CPUs", "programs"]
    assert any("runtimes" in line and "python3 Python 3.11.7 (/root/.pyenv/shims/python3)" in line
               for line in lines)
    assert any("preemption" in line and "PREEMPT_DYNAMIC" in line for line in lines)
    assert any("frequency" in line and "2400 MHz" in line for line in lines)


def test_warnings_grouped_by_cause_once_with_counts_system_first():
    notes = [Note(RUN, f"run{i}", Warning_(f"the vpin probe was blind {b}% of the run", "isolate a CPU"))
             for i, b in enumerate((4.2, 16.0, 7.5))]
    notes += [Note(RUN, "run0", Warning_("the vpin probe was blind 4.2% of the run", "isolate a CPU"))]
    notes += [Note(SYSTEM, "campaign q", Warning_("RT throttling is active", "sysctl -w ..."))]
    groups = grouped(notes)
    assert [g.scope for g in groups] == [SYSTEM, RUN]
    blind = groups[1]
    assert blind.count == 3 and blind.affected == "3 runs"
    assert blind.message == "the vpin probe was blind 4.2–16.0% of the run"
    assert blind.remedy == "isolate a CPU"


def test_show_warnings_counts_cells_with_too_few_repetitions(tmp_path):
    from jitterlab.model.fakes import squarewave_cell

    runs = [run_record(squarewave_cell("c-fifo", p, target="t"), id=f"r{p}", cell_key=f"{p}",
                       metrics=[Metric("max_rel_period_error", 0.01, "ratio", "vpin")])
            for p in (MS, 10 * MS, 100 * MS)]
    [table] = show_warnings(runs, [], "q")
    text = piped(table)
    assert text.count("repetition(s) per cell only") == 1 and "3 cells" in text


def test_a_cell_warning_stays_a_cell_warning_whatever_its_target_is_named():
    """The sections hand their notes over with their scope: a target named "run" (its cell's name
    starts "run ...") is not read back as a run id."""
    from jitterlab.model.fakes import squarewave_cell
    from jitterlab.report.sections import section_notes

    runs = [run_record(squarewave_cell("c-fifo", MS, target="run"), id="r1",
                       metrics=[Metric("max_rel_period_error", 0.01, "ratio", "vpin")])]
    [note] = section_notes(runs)
    assert note.scope == "cell" and note.where.startswith("run c-fifo")
    assert "run c-fifo 1ms idle (vpin)" in piped(*show_warnings(runs, [], "q"))


def test_help_texts_print_percent_signs_once():
    for command in ("report", "compare", "export"):
        done = subprocess.run([sys.executable, "-m", "jitterlab.cli", command, "--help"],
                              capture_output=True, text=True, timeout=60)
        assert done.returncode == 0 and "%%" not in done.stdout, command
    assert "--fail-on" in subprocess.run([sys.executable, "-m", "jitterlab.cli", "compare", "--help"],
                                         capture_output=True, text=True, timeout=60).stdout


MARKS_CAMPAIGN = """
[campaign]
name = "marks"
duration = "1s"
[[target]]
name = "board"
kind = "local"
[matrix]
impl = ["bash", "c-fifo"]
period = ["10ms", "1ms"]
probe = "vpin"
[[exclude]]
impl = "bash"
period = "1ms"
"""


def test_a_cell_without_a_run_is_marked_excluded_or_not_measured_yet(tmp_path, capsys):
    from jitterlab.cli.main import main
    from jitterlab.model.fakes import squarewave_cell
    from jitterlab.store.catalog import Store

    store = Store(tmp_path / "r")
    cid = store.new_campaign("marks", "fp", "marks.toml", MARKS_CAMPAIGN, {})
    for i, impl in enumerate(("bash", "c-fifo")):  # c-fifo at 1 ms: interrupted before it
        store.commit_run(run_record(squarewave_cell(impl, 10 * MS), id=f"r{i}", campaign_id=cid,
                                    cell_key=impl, metrics=[Metric("max_rel_period_error", 0.01, "ratio",
                                                                   "vpin")]))
    store.close()
    assert main(["show", "--runs", "--results", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    bash = next(line for line in lines if line.startswith("bash "))
    fifo = next(line for line in lines if line.startswith("c-fifo "))
    assert bash.split()[-1] == "–" and fifo.split()[-1] == "…"  # excluded; not measured yet
    assert any("… not measured yet, – excluded from the matrix" in line for line in lines)
    assert not any(line.split()[-1:] == ["·"] for line in lines)


RT_FIX = "sysctl -w kernel.sched_rt_runtime_us=-1 (as root; lasts until reboot)"
IDLE_FIX = ("boot with idle=poll (or processor.max_cstate=1 intel_idle.max_cstate=0), or hold "
            "/dev/cpu_dma_latency at 0 while measuring; cpupower idle-set -D 10")


def _rt_notes() -> list[Note]:
    return [Note(SYSTEM, "campaign q", Warning_(
        "RT throttling is active (sched_rt_runtime_us=950000, sched_rt_period_us=1000000): a real-time "
        "task may be stopped for 50 ms every second", RT_FIX)),
        Note(RUN, "r1", Warning_("CPU idle states up to C6 (exit latency 170 µs) are enabled", IDLE_FIX))]


@pytest.mark.parametrize("width", [80, 60])
def test_in_a_narrow_terminal_a_fix_command_is_never_broken_inside_a_word(width):
    from jitterlab.report.terminal import warnings_table

    out = console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    out.print(warnings_table(_rt_notes()))
    lines = [line.strip(" │") for line in out.file.getvalue().splitlines()]
    assert any("sysctl -w kernel.sched_rt_runtime_us=-1" in line for line in lines)
    words = " ".join(lines).split()
    for word in ("kernel.sched_rt_runtime_us=-1", "processor.max_cstate=1", "intel_idle.max_cstate=0),",
                 "/dev/cpu_dma_latency"):
        assert word in words  # whole, never cut at the edge of a column
    assert any(line.strip() == "cpupower idle-set -D 10" or line.endswith("cpupower idle-set -D 10")
               for line in lines)


def test_piped_warnings_are_one_row_each_with_the_remedy_whole():
    text = piped(*[__import__("jitterlab.report.terminal", fromlist=["x"]).warnings_table(_rt_notes())])
    assert sum(RT_FIX in line for line in text.splitlines()) == 1
    assert sum(IDLE_FIX in line for line in text.splitlines()) == 1


def test_paste_safe_lines_break_between_clauses_then_words_never_inside_one():
    from jitterlab.report.warning_list import paste_safe_lines

    assert paste_safe_lines(IDLE_FIX, 200) == [IDLE_FIX]
    assert paste_safe_lines(IDLE_FIX, 60) == [
        "boot with idle=poll (or processor.max_cstate=1", "intel_idle.max_cstate=0), or",
        "hold /dev/cpu_dma_latency at 0 while measuring;", "cpupower idle-set -D 10"]
    long_word = "x" * 50
    assert paste_safe_lines(f"a {long_word} b", 20) == ["a", long_word, "b"]


def test_list_through_a_pipe_is_plain_rows_without_padding_or_wrapping():
    env = {**os.environ, "COLUMNS": "80", "TERM": "dumb"}
    done = subprocess.run([sys.executable, "-m", "jitterlab.cli", "list"], capture_output=True, text=True,
                          env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert not [line for line in lines if line != line.rstrip()]  # no trailing spaces
    assert max(len(line) for line in lines) > 80  # a long help line is left whole
    from jitterlab.plugins import ALL

    for registry in ALL.values():
        for entry in registry:
            assert any(line.split(None, 1) == [entry.name, entry.help] for line in lines), entry.name


def test_a_suggested_command_in_a_log_stays_on_one_line():
    command = ("jitterlab monitor examples/rt-latency.toml --for 24h --every 1h --resume --results "
               "/srv/lab/results/a-long-directory-name")
    text = piped(f"[yellow]interrupted[/]: go on with {command}")
    assert text.splitlines() == [f"interrupted: go on with {command}"]
