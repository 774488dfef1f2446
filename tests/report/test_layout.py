"""What a terminal of 80 and of 200 columns shows (report/layout.py): every word, value with its
unit and command of the piped output is there whole, on one line; at 80 columns no line is longer
unless it is a command longer than that (the terminal folds it, and copying gives it back whole);
piped output stays plain rows at their full width."""

from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from rich.table import Table
from rich.text import Text

from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.report.layout import command_spans, commands_in, wrap
from jitterlab.report.terminal import console, run_detail

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
BOX = re.compile(r"[│┃┏┓┗┛┡┩┠┨━─┳┻╇╈┼┬┴└┘┌┐├┤╭╮╰╯═║]")
LIST_HEADS = ("warning", "affects", "remedy")  # a narrow terminal lists the warnings, without heads
# a value and its unit, with the mark before it: "≥ 5,588 %", "1 ms", "184 µs", "22.3 GB"
VALUE = re.compile(r"(?:[≥≤<>] )?[-+−]?\d[\d,.]* (?:%|ns|µs|ms|s|[kMGT]?B|[KMG]iB|MHz|ppm)(?![\w/])")


def cli(capsys, monkeypatch, argv: list[str], columns: int | None) -> str:
    """The command's stdout, in a terminal of `columns` (None: piped)."""
    monkeypatch.setenv("TTY_COMPATIBLE", "0" if columns is None else "1")
    monkeypatch.setenv("COLUMNS", str(columns or 80))
    monkeypatch.setenv("NO_COLOR", "1")
    assert main(argv) in (0, 1)
    return ANSI.sub("", capsys.readouterr().out)


def rendered(parts: list, columns: int | None) -> str:
    out = console(file=io.StringIO(), force_terminal=columns is not None, width=columns or 80,
                  color_system=None)
    for part in parts:
        out.print(part)
    return ANSI.sub("", out.file.getvalue())


def check_nothing_broken(piped: str, shown: str, columns: int) -> None:
    lines = [BOX.sub(" ", line) for line in shown.splitlines()]
    shown_words = Counter(" ".join(lines).split())
    missing = Counter(piped.split()) - shown_words - Counter(LIST_HEADS)
    assert not missing, f"cut, folded inside or dropped at {columns} columns: {sorted(missing)[:10]}"

    def on_one_line(pieces: list[str], what: str) -> None:
        for piece, n in Counter(pieces).items():
            found = sum(" ".join(line.split()).count(piece) for line in lines)
            assert found >= n, f"{what} {piece!r} broken across lines at {columns} columns"

    piped_lines = piped.splitlines()
    on_one_line([m.group() for line in piped_lines for m in VALUE.finditer(" ".join(line.split()))], "value")
    on_one_line([c for line in piped_lines for c in commands_in(" ".join(line.split()))], "command")
    for line in shown.splitlines():
        if len(line) > columns:  # only a command or a word longer than the terminal, whole on its line
            assert any(len(c) > columns - 20 for c in commands_in(line) + line.split()), (columns, line)


@pytest.mark.parametrize("columns", [80, 200])
def test_views_at_80_and_200_columns_break_no_word_value_or_command(columns, report_store, latency_store,
                                                                      capsys, monkeypatch):
    from jitterlab.cli.commands import doctor

    found = doctor.diagnose(doctor.open_target("local", None, {}))  # this machine, read once
    monkeypatch.setattr(doctor, "diagnose", lambda target: found)
    results = str(report_store.root)
    views = [["show", "--results", results, "--campaign", "board-1.11"],
             ["show", "--runs", "--results", results, "--campaign", "board-1.11"],
             ["summary", "--results", results, "--campaign", "board-1.11"],
             ["show", "--results", str(latency_store.root)],
             ["summary", "--results", str(latency_store.root)],
             ["doctor", "local"]]
    for argv in views:
        piped = cli(capsys, monkeypatch, argv, None)
        assert not BOX.search(piped) and "…" not in piped  # piped: plain rows, nothing cut
        shown = cli(capsys, monkeypatch, argv, columns)
        check_nothing_broken(piped, shown, columns)
    run = next(r for r in report_store.runs() if r.status == "ok")
    detail = run_detail(run, [], SystemFacts.given(hostname="board", mem_available_kb=23_963_604,
                                                   cmdline="quiet isolcpus=3 " + "x" * 150))
    check_nothing_broken(rendered(detail, None), rendered(detail, columns), columns)


def test_piped_views_keep_their_full_width(report_store, capsys, monkeypatch):
    piped = cli(capsys, monkeypatch, ["show", "--results", str(report_store.root)], None)
    assert max(len(line) for line in piped.splitlines()) > 80
    summary = cli(capsys, monkeypatch, ["summary", "--results", str(report_store.root)], None)
    [last] = [line for line in summary.splitlines() if line.startswith("every run")]
    assert len(last) > 80 and "jitterlab report --results" in last  # one line, as a log keeps it


def test_a_table_too_wide_gives_up_its_rules_then_goes_one_record_per_block():
    table = Table(title="t: operational envelope", caption="green < 1 %, yellow < 10 %, red ≥ 10 %")
    for name in ("impl", "load", "max < 1 %", "max < 10 %", "p99 < 1 %", "p99 < 10 %", "blind"):
        table.add_column(name, justify="left" if name in ("impl", "load") else "right")
    table.add_row(Text("python [image=A]"), "idle", "none", "none", "100 µs", "1 ms", "7.63 %")
    wide = rendered([table], 120)
    assert "┃ max < 10 % ┃" in wide and "green < 1 %, yellow < 10 %, red ≥ 10 %" in wide
    plain = rendered([table], 80).splitlines()  # no room for the rules: the rows of a piped table
    assert plain[1] == "impl              load  max < 1 %  max < 10 %  p99 < 1 %  p99 < 10 %   blind"
    assert plain[2] == "python [image=A]  idle       none        none     100 µs        1 ms  7.63 %"
    blocks = rendered([table], 40).splitlines()
    assert blocks[:3] == ["t: operational envelope", "impl              load", "python [image=A]  idle"]
    assert "    p99 < 1 %   100 µs" in blocks and "    blind       7.63 %" in blocks
    assert blocks[-1:] == ["green < 1 %, yellow < 10 %, red ≥ 10 %"]  # the legend whole at 40 columns


def test_a_free_text_column_folds_between_its_words():
    table = Table(title="runs")
    for name in ("run", "rep", "why"):
        table.add_column(name)
    table.add_row("3f9c1a", "1", "the wave stopped: give the probe a CPU of its own, then jitterlab run "
                  "c.toml --results results --resume --retry-failed")
    lines = rendered([table], 80).splitlines()
    assert max(len(line) for line in lines) <= 80
    assert any("jitterlab run c.toml --results results --resume --retry-failed" in line for line in lines)


def test_commands_are_found_with_their_arguments_and_without_the_sentence_around():
    text = ("fix: on the host of this container (docker): sysctl -w kernel.sched_rt_runtime_us=-1 (until "
            "reboot); every run: jitterlab show --results 'my results'; apt install sigrok-cli to use it")
    assert commands_in(text) == ["sysctl -w kernel.sched_rt_runtime_us=-1",
                                 "jitterlab show --results 'my results'", "apt install sigrok-cli"]
    assert commands_in("jitterlab report: tiny, by jitterlab 0.1.0; (jitterlab run c.toml)") == [
        "jitterlab run c.toml"]
    assert command_spans("nothing to run here") == []


def test_wrap_never_parts_a_value_from_its_unit_or_a_mark_from_its_value():
    text = Text("the worst period was ≥ 5,588 % off, a stall of 12.5 ms [1.2 % – 3 %] and more words after")
    for width in range(20, 90):
        lines = [line.plain for line in wrap(text, width)]
        joined = "\n".join(lines)
        for piece in ("≥ 5,588 %", "12.5 ms", "[1.2 % – 3 %]"):
            assert any(piece in line for line in lines), (width, joined)
        assert all(len(line) <= width for line in lines), (width, joined)


VERDICT_WORDS = ("worse", "better", "same", "undecided")
CHANGE = re.compile(r"[-+][\d.,]+ % \[[-+][\d.,]+ % – [-+][\d.,]+ %\]")  # "+83.6 % [-7.97 % – +266 %]"


def _words(lines: list[str], word: str) -> int:
    return sum(line.split().count(word) for line in lines)


@pytest.mark.parametrize("columns", [80, 200])
def test_compare_at_80_and_200_columns_cuts_no_verdict_value_or_interval(columns, report_store, capsys,
                                                                         monkeypatch):
    argv = ["compare", "--results", str(report_store.root), "--baseline", "image=1.10",
            "--candidate", "image=1.11"]
    piped = cli(capsys, monkeypatch, argv, None)
    assert not BOX.search(piped) and "…" not in piped  # piped: plain rows, every column, nothing cut
    assert "  test  " in piped.splitlines()[1] and "  decided by" in piped.splitlines()[1]
    shown = cli(capsys, monkeypatch, argv, columns)
    assert "…" not in shown
    lines = [" ".join(BOX.sub(" ", line).split()) for line in shown.splitlines()]
    piped_lines = [" ".join(line.split()) for line in piped.splitlines()]
    changes = [m.group() for line in piped_lines for m in CHANGE.finditer(line)]
    assert len(changes) == 24  # the tested rows of 8 cells: 3 headline metrics as vpin saw them
    for change, n in Counter(changes).items():  # each interval whole, with its change or under it
        value, interval = change.split(" [")
        beside = sum(line.count(change) for line in lines)
        under = sum(a.endswith(value) and b == f"[{interval}" for a, b in zip(
            [" ".join(x.split()[:-1]) for x in lines], lines[1:], strict=False))
        assert beside + under == n, (columns, change)
        assert under == 0 or columns == 80
    for word in VERDICT_WORDS:  # every verdict whole (never "un…"), as often as piped output has it
        assert _words(lines, word) == _words(piped_lines, word), (columns, word)
    at = next((i for i, line in enumerate(lines) if line.startswith("left out at this width:")), len(lines))
    left_out = " ".join(lines[at:at + 2]).partition(" verdicts:")[0]  # folded at 80 columns
    # the groups' values, each with its unit, on one line: never given up, at any width
    values = Counter(m.group() for line in piped_lines[:30] for m in VALUE.finditer(line))
    for value, n in values.items():
        assert sum(line.count(value) for line in lines) >= n, (columns, value)
    for line in shown.splitlines():
        if len(line) > columns:  # only a command longer than the terminal, whole on its line
            assert any(len(c) > columns - 20 for c in commands_in(line)), (columns, line)
    if columns == 80:  # what says how a row was tested is given up first; the cells became headings
        assert left_out == ("left out at this width: view, statistic, runs, test, p (Holm), decided by (a "
                            "wider terminal, or output to a pipe or file, shows them)")
        # a cell whose groups ran under different load says so in its heading, beside its verdicts
        assert "cpu impl=bash period=1ms (load differed)" in lines and "idle impl=bash period=1ms" in lines
        assert lines[2].split() == ["probe", "metric", "baseline", "candidate", "change", "[95", "%", "CI]",
                                    "verdict"]
        assert lines[3].split()[:4] == ["vpin", "max_rel_period_error", "13.3", "%"]  # the baseline's
    else:
        assert left_out == ("left out at this width: view, test (a wider terminal, or output to a pipe or "
                            "file, shows them)")
        assert "verdict" in shown.splitlines()[1] and "baseline" in shown.splitlines()[1]


def test_a_comparison_gives_up_the_interval_under_its_change_then_the_interval_never_the_values():
    from jitterlab.report.comparison import COMPARE_HEADS
    from jitterlab.report.comparison_layout import ComparisonTable

    row = ["idle impl=c-fifo period=1ms", "vpin", "max_rel_period_error", "per-run",
           "geometric mean of run maxima", "5.73 %", "11.5 %", "3 vs 13", "+83.6 % [-68.2 % – +978 %]",
           "welch-t on log values", "0.1", "undecided", "not yet"]
    table = ComparisonTable("image=B vs image=A", COMPARE_HEADS, [row])
    shown = {}
    for width in (126, 90, 75, 60):
        out = console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
        for part in table.fitted(out):
            out.print(part, crop=False)
        shown[width] = [" ".join(line.split()) for line in ANSI.sub("", BOX.sub(" ", out.file.getvalue()))
                        .splitlines()]
        assert all(len(line) <= width for line in out.file.getvalue().splitlines()), width
        text = "\n".join(shown[width])
        # the two values a verdict judges, always; in a table on the row's line, in a record each on its own
        assert "5.73 % 11.5 %" in text or ("baseline 5.73 %" in shown[width] and "candidate 11.5 %" in text)
    # wide enough: the interval beside its change; narrower: under it; narrower still: given up and
    # named; at the narrowest, a record of every column
    assert any(line.endswith("+83.6 % [-68.2 % – +978 %] undecided") for line in shown[126])
    assert shown[90][3].endswith("5.73 % 11.5 % 3 vs 13 +83.6 % undecided")
    assert shown[90][4] == "[-68.2 % – +978 %]"
    assert shown[75][3].endswith("5.73 % 11.5 % +83.6 % undecided") and "[-68.2" not in "".join(shown[75])
    assert "the change's interval" in " ".join(shown[75][4:])
    assert "change [95 % CI] +83.6 % [-68.2 % – +978 %]" in shown[60] and "runs 3 vs 13" in shown[60]


def test_a_comparison_too_narrow_for_any_table_is_one_record_per_row():
    from jitterlab.report.comparison import COMPARE_HEADS
    from jitterlab.report.comparison_layout import ComparisonTable

    row = ["load=cpu impl=python period=1ms image=A", "vpin", "max_rel_period_error", "per-run",
           "geometric mean of run maxima", "5.73 %", "11.5 %", "3 vs 3", "+83.6 % [-68.2 % – +978 %]",
           "welch-t on log values", "0.1", "undecided", "not yet"]
    table = ComparisonTable("image=B vs image=A", COMPARE_HEADS, [row, [*row[:2], "p99_rel_period_error",
                                                                         *row[3:]]])
    out = console(file=io.StringIO(), force_terminal=True, width=44, color_system=None)
    for part in table.fitted(out):
        out.print(part, crop=False)
    lines = [" ".join(line.split()) for line in ANSI.sub("", out.file.getvalue()).splitlines()]
    assert all(len(line) <= 44 for line in lines)
    # every column of each row is there (nothing given up), each value whole on its line
    assert lines.count("verdict undecided") == 2 and lines.count("runs 3 vs 3") == 2
    # a change and its interval may part (at 44 columns they do), the interval never
    assert sum(line.endswith("[-68.2 % – +978 %]") for line in lines) == 2
    assert lines.count("baseline 5.73 %") == 2 and lines.count("test welch-t on log values") == 2
