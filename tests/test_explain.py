"""`jitterlab explain` and the terminal views of a traced run's causes (show RUN_ID, show --runs,
summary), read from a store whose explanations have exact answers (tests/support.py
explained_store: per 1 ms late, 700 µs a task, 200 µs an IRQ, 100 µs the trace does not cover),
piped and in terminals of 80 and 200 columns."""

from __future__ import annotations

import json

import pytest

from jitterlab.cli.main import main
from tests.report.test_layout import check_nothing_broken, cli
from tests.support import explained_store

SHARES = "70 % preempted by stress-ng-cpu [SCHED_OTHER], 20 % IRQ 11 virtio0, 10 % not covered by the trace"


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return str(explained_store(tmp_path_factory.mktemp("explain")))


@pytest.fixture(scope="module")
def emulated(tmp_path_factory):
    return str(explained_store(tmp_path_factory.mktemp("emulated"), emulated=True))


def words(text: str) -> str:
    return " ".join(text.split())


def test_explain_breaks_each_period_down_longest_first(results, capsys, monkeypatch):
    out = cli(capsys, monkeypatch, ["explain", "--results", results, "aaa111"], None)
    flat = words(out)
    assert "run aaa111: board c-mmap 1ms cpu (vpin), repetition 1" in flat
    assert "traced (12,345 events); edges on the trace's clock: direct" in flat
    assert f"causes: {SHARES} (2 periods, 1.5 ms late in all)" in flat
    # the latest first: period 280 (1 ms late), then 13 (500 µs)
    first, second = flat.index("period 280 (among the latest)"), flat.index("period 13 (among the latest)")
    assert first < second and "1 ms late" in flat[first:second]
    rows = flat[first:second]
    assert rows.index("700 µs 70 % wakeup stress-ng-cpu [SCHED_OTHER nice 0] pid 812") \
        < rows.index("200 µs 20 % irq IRQ 11 virtio0") < rows.index("100 µs 10 % not covered")
    assert "(tuning isolated)" in rows and "(tuning irq-away)" in rows
    dat = f"{results}/attachments/aaa111/trace.dat"
    assert f"trace-cmd report {dat}; kernelshark {dat}" in flat


@pytest.mark.parametrize("columns", [80, 200])
@pytest.mark.parametrize("argv", [["explain", "aaa111"], ["show", "aaa111"], ["summary"],
                                  ["show", "--runs"]], ids=" ".join)
def test_the_views_fit_a_terminal_without_breaking_a_value_or_command(results, capsys, monkeypatch,
                                                                     argv, columns):
    argv = [argv[0], "--results", results, *argv[1:]]
    shown = cli(capsys, monkeypatch, argv, columns)
    check_nothing_broken(cli(capsys, monkeypatch, argv, None), shown, columns)


def test_explain_one_period(results, capsys):
    assert main(["explain", "--results", results, "aaa111", "--period", "13"]) == 0
    out = capsys.readouterr().out
    assert "period 13 (among the latest)" in out and "period 280" not in out
    assert "350 µs" in out and "causes:" not in out  # one period: its table says it all


@pytest.mark.parametrize(("argv", "said"), [
    (["aab111"], "RUN_ID 'aab111': no such run in {r}; runs there: aaa111, bbb222, ccc333, ddd444"),
    (["ddd444"], "RUN_ID ddd444: the run was traced but explains no period: no mapping between the probe's "
                 "edges and the trace (no program log)"),
    (["ccc333"], 'RUN_ID ccc333: the run was not traced, so nothing explains its periods; trace its cell '
                 'with trace = "sched" in the campaign\'s [matrix] (docs/tracing.md) and run it again'),
    (["aaa111", "--period", "5"], "--period 5: run aaa111 did not explain that period; it explained "
                                  "periods 13, 280"),
    (["aaa111", "--period", "0"], "argument --period: a period's number as explain prints it (1 or more)"),
])
def test_bad_input_is_one_line_and_exit_2(results, capsys, argv, said):
    assert main(["explain", "--results", results, *argv]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said.format(r=results) in words(err)


def test_a_damaged_explanation_is_one_line_and_exit_2(tmp_path, capsys):
    r = explained_store(tmp_path)
    path = r / "attachments" / "bbb222" / "explained.json"
    path.write_text("{not json")
    assert main(["explain", "--results", str(r), "bbb222"]) == 2
    err = words(capsys.readouterr().err)
    assert f"{path}: run bbb222's explanation is not JSON" in err
    path.write_text(json.dumps({"periods": [{"index": "x"}]}))
    assert main(["explain", "--results", str(r), "bbb222"]) == 2
    err = words(capsys.readouterr().err)
    assert "explanation is damaged (periods[0].index is 'x', not a whole number)" in err
    # show still shows the run, and says why its causes are missing
    assert main(["show", "--results", str(r), "bbb222"]) == 0
    assert "explanation is damaged" in words(capsys.readouterr().out)


def test_explain_help_says_what_it_breaks_down(capsys):
    with pytest.raises(SystemExit):
        main(["explain", "--help"])
    out = words(capsys.readouterr().out)
    assert 'trace = "sched"' in out and "kernelshark" in out and "--period K" in out


def test_show_run_gives_its_causes_under_its_worst_period(results, capsys, monkeypatch):
    out = cli(capsys, monkeypatch, ["show", "--results", results, "aaa111"], None)
    flat = words(out)
    at = flat.index("why late: the kernel trace of the run")
    assert flat.index("worst period: when, in the run") < at < flat.index("metrics")
    assert f"causes {SHARES} (2 periods, 1.5 ms late in all)" in flat
    assert ("fix preempted by stress-ng-cpu [SCHED_OTHER]: a real-time policy for the program (SCHED_FIFO, "
            "e.g. impl c-fifo), or an isolated CPU") in flat
    assert "fix IRQ 11 virtio0: IRQ 11's affinity away from the program's CPU (tuning irq-away)" in flat
    # the same period show places from the probe's edges (period 280 of 378)
    assert "period 280 of 378" in flat and "worst period 280, 1 ms late: 700 µs preempted by" in flat
    assert f"jitterlab explain --results {results} aaa111" in flat


def test_show_of_an_untraced_run_says_nothing_of_causes(results, capsys):
    assert main(["show", "--results", results, "ccc333"]) == 0
    assert "why late" not in capsys.readouterr().out


def test_summary_and_show_give_one_line_per_traced_cell(results, capsys, monkeypatch):
    for argv in (["summary", "--results", results], ["show", "--runs", "--results", results],
                 ["show", "--campaign", "why", "--results", results]):
        out = cli(capsys, monkeypatch, argv, None)
        flat = words(out)
        assert f"- c-mmap 1ms cpu (vpin): {SHARES} (2 runs, 3 periods, 2.5 ms late in all)" in flat
        assert "c-mmap 1ms idle (vpin):" not in flat  # untraced: no line
        assert "c-fifo 1ms cpu (vpin):" not in flat  # traced, nothing explained: no line
        assert flat.count("fix for ") == 2
        if argv[1] == "--runs":
            assert "aaa111 c-mmap 1ms cpu (vpin) 1 ok (traced)" in flat
            assert "ccc333 c-mmap 1ms idle (vpin) 1 ok 100 %" in flat
            assert "ddd444 c-fifo 1ms cpu (vpin) 1 ok (traced)" in flat
        elif argv[0] == "summary":
            # the limits agree: the trace shows no unaccounted time, so no VM stall is blamed
            assert "no isolated CPU" in flat and "a VM (kvm): the hypervisor stops it" not in flat
            assert ("not proposed on board: a VM (kvm) — its traced runs show none of the time it would "
                    "cause (unaccounted)") in flat


def test_an_emulated_explanation_is_functional_evidence_only(emulated, capsys):
    for argv in (["summary"], ["explain", "aaa111"], ["show", "aaa111"]):
        assert main([*argv[:1], "--results", emulated, *argv[1:]]) == 0
        assert "functional evidence only (emulated CPU)" in words(capsys.readouterr().out), argv


def test_the_json_export_keeps_each_traced_runs_explanation(results, capsys):
    assert main(["export", "--results", results, "--format", "json"]) == 0
    runs = {r["id"]: r for r in json.loads(capsys.readouterr().out)["runs"]}
    assert "explanation" not in runs["ccc333"]
    e = runs["aaa111"]["explanation"]
    assert e["aligned_by"] == "direct" and e["events"] == 12_345 and not e["emulated"]
    assert [p["index"] for p in e["periods"]] == [279, 12]
    assert [(p["cause"], p["duration_ns"]) for p in e["periods"][0]["parts"]] == [
        ("wakeup", 700_000), ("irq", 200_000)]
    assert [(s["cause"], s["who"], s["ns"], s["share"]) for s in e["shares"]] == [
        ("wakeup", "stress-ng-cpu [SCHED_OTHER]", 1_050_000, 0.7), ("irq", "IRQ 11 virtio0", 300_000, 0.2),
        ("uncovered", None, 150_000, 0.1)]


def test_show_of_a_run_that_explains_nothing_says_why(results, capsys):
    assert main(["show", "--results", results, "ddd444"]) == 0
    out = words(capsys.readouterr().out)
    assert ("traced traced; nothing explained: no mapping between the probe's edges and the trace (no "
            "program log)") in out and "causes" not in out
