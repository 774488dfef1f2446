"""A mistyped word on the command line gets the closest thing it could have meant, in one line (exit
2): an option, a choice, a metric, a selector's label or cell key, a campaign, a target; an empty
label value, a threshold without its unit and an absurd run count are said as what they are."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.analysis.thresholds import DEFAULT_THRESHOLDS, parse_thresholds
from jitterlab.cli.main import build_parser, main
from jitterlab.cli.mistyped import reworded, unknown_option
from jitterlab.model.errors import UserError
from jitterlab.model.labels import label_pair
from jitterlab.model.registry import nearest, offered
from tests.support import imported_store


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """A store of two imported captures, image=a and image=b (33 metrics each)."""
    return imported_store(tmp_path_factory.mktemp("mistyped"), "ab", "--campaign", "bench")


def error_of(argv: list[str], capsys) -> str:
    assert main(argv) == 2, argv
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err.removeprefix("error: ").rstrip("\n")


def test_an_unknown_option_gets_the_closest_one_before_its_value_is_misread(tmp_path, capsys):
    capture = tmp_path / "c.csv"
    assert error_of(["import", "edges", str(capture), "--period", "1ms", "--lable", "image=a"], capsys) == (
        "jitterlab import edges: no option '--lable'; did you mean '--label'? (see jitterlab import edges "
        "--help)")
    # the word after it was taken for the run id, and the error was about that
    assert error_of(["show", "--resluts", "r"], capsys).startswith(
        "jitterlab show: no option '--resluts'; did you mean '--results'?")
    assert error_of(["compare", "--treshold=3"], capsys).startswith(
        "jitterlab compare: no option '--treshold'; did you mean '--threshold'?")


def test_an_option_of_another_command_names_that_command(capsys):
    assert error_of(["summary", "--watch", "x"], capsys) == (
        "jitterlab summary: no option '--watch'; --watch is an option of jitterlab run (see jitterlab "
        "summary --help)")


def test_an_option_like_none_offers_the_nearest_three_of_the_command(capsys):
    message = error_of(["run", "c.toml", "--zzzz"], capsys)
    head, _, rest = message.partition("; its options: ")
    assert head == "jitterlab run: no option '--zzzz'"
    names, _, tail = rest.partition(" (the nearest of ")
    assert len(names.split(", ")) == 3 and all(n.startswith("--") for n in names.split(", "))
    assert tail.endswith("; see jitterlab run --help)")


def test_what_argparse_reads_as_a_value_or_an_abbreviation_is_left_to_it():
    parser = build_parser()
    run = parser._subparsers._group_actions[0].choices["run"]
    commands = {"run": run}
    for words in (["c.toml", "--max-runs", "-1"], ["c.toml", "--dry"], ["c.toml", "--label=-x=1"],
                  ["--", "--not-an-option"], ["c.toml", "-"], ["c.toml", "--until", "a=1..a=2"]):
        assert unknown_option(run, words, commands) is None, words
    assert unknown_option(run, ["-x"], commands).startswith("jitterlab run: no option '-x'")


def test_an_invalid_choice_gets_the_closest_choice(capsys):
    assert error_of(["export", "--format", "jsn"], capsys) == (
        "jitterlab export: argument --format: invalid choice 'jsn'; did you mean 'json'? (choose from csv, "
        "json, junit, kcidb, lava, parquet) (see jitterlab export --help)")
    assert error_of(["shwo"], capsys).startswith(
        "jitterlab: argument COMMAND: invalid choice 'shwo'; did you mean 'show'? (choose from run, ")
    assert reworded("argument X: expected one argument") == "argument X: expected one argument"


def test_an_unknown_metric_offers_the_nearest_three_not_every_name(results, capsys):
    base = ["--results", str(results), "--baseline", "image=a", "--candidate", "image=b"]
    message = error_of(["compare", *base, "--metric", "max_rel_period_eror"], capsys)
    assert message.startswith("--metric max_rel_period_eror: no such metric in these runs; they have: "
                              "max_rel_period_error, ")
    assert message.endswith(" (the nearest of 33; `jitterlab show RUN_ID` lists every metric of a run)")
    assert len(message) < 250
    message = error_of(["report", "--results", str(results), "--trend", "p99_rel_period_eror", "-o",
                        "x.html"], capsys)
    assert message.startswith("--trend p99_rel_period_eror: no successful run has this metric; they have: "
                              "p99_rel_period_error, ") and len(message) < 250


@pytest.mark.parametrize(("selector", "meant"), [
    ("imag=a", "image=a"), ("impl=externl", "impl=external"), ("probe=imprt", "probe=import"),
    ("load=unknwn", "load=unknown"), ("period=2ms", "period=1ms")])
def test_a_selector_no_run_has_gets_the_closest_label_or_cell_key(results, capsys, selector, meant):
    message = error_of(["compare", "--results", str(results), "--baseline", selector, "--candidate",
                        "image=b"], capsys)
    assert message.startswith(f"--baseline {selector}: no successful run has it; did you mean {meant!r}? "
                              "labels in the store: image=a, image=b")


def test_a_mistyped_campaign_and_target_get_the_closest(results, capsys):
    assert error_of(["show", "--results", str(results), "--campaign", "bnech"], capsys) == (
        f"--campaign 'bnech': not in {results}; did you mean 'bench'? campaigns there: bench")
    assert error_of(["doctor", "locla"], capsys).startswith(
        "TARGET 'locla': did you mean `local`? give `local`")
    assert error_of(["doctor"], capsys).startswith(
        "jitterlab doctor: which target? give `local` (this machine")


def test_a_label_says_which_part_is_missing():
    for text, says in (("image=", "--label 'image=': no value after '='; a label has one, e.g. --label "
                                  "image=1.11"),
                       ("=b", "--label '=b': no key before '='; write KEY=VALUE, e.g. --label image=b"),
                       ("image", "--label 'image': write KEY=VALUE, e.g. --label image=1.11"),
                       ("\x1b[2J=", "--label '\\x1b[2J=': no value after '='; a label has one, e.g. --label "
                                    "image=1.11")):
        with pytest.raises(UserError) as info:
            label_pair(text)
        assert str(info.value) == says
    assert label_pair(" kernel = 6.6 ") == ("kernel", "6.6")


def test_run_and_import_refuse_an_empty_label_value_the_same_way(tmp_path, capsys):
    campaign = tmp_path / "c.toml"
    campaign.write_text('[campaign]\nname = "t"\nduration = "1s"\n[matrix]\nimpl = "c-fifo"\n'
                        'period = "10ms"\nprobe = "self"\n')
    says = "--label 'image=': no value after '='; a label has one, e.g. --label image=1.11"
    assert error_of(["run", str(campaign), "--dry-run", "--label", "image="], capsys) == says
    imported = ["import", "edges", str(campaign), "--period", "1ms", "--label", "image="]
    assert error_of(imported, capsys) == says


def test_a_threshold_below_1_without_its_unit_is_refused_naming_both_readings():
    with pytest.raises(UserError) as info:
        parse_thresholds(["0.2"])
    assert str(info.value) == ("--threshold '0.2': the threshold is in percent, so this reads as 0.2 %; "
                               "write the unit: --threshold 20% (a fraction of 0.2) or --threshold 0.2%")
    with pytest.raises(UserError, match=r"write the unit: --threshold timing=5% \(a fraction of 0.05\) or "
                                        r"--threshold timing=0.05%$"):
        parse_thresholds(["timing=0.05"])
    assert parse_thresholds(["20%"]) == dict.fromkeys(DEFAULT_THRESHOLDS, 0.2)
    assert parse_thresholds(["0.5%"]) == dict.fromkeys(DEFAULT_THRESHOLDS, 0.005)
    assert parse_thresholds(["rate=2"])["rate"] == 0.02  # 1 or more: percent, as documented


@pytest.mark.parametrize("value", ["99999999999999999999", "-1", "1e3", "", "1000001"])
def test_max_runs_past_its_bound_is_refused_as_it_is_read(tmp_path, capsys, value):
    campaign = tmp_path / "c.toml"
    campaign.write_text('[campaign]\nname = "t"\nduration = "1s"\n[matrix]\nimpl = ["c-fifo", "python"]\n'
                        'period = "10ms"\nprobe = "self"\n')
    message = error_of(["run", str(campaign), "--dry-run", "--until-decided", "impl=c-fifo..impl=python",
                        f"--max-runs={value}"], capsys)
    assert message == (f"jitterlab run: argument --max-runs: give a whole number of extra runs from 0 to "
                       f"1,000,000, got {value!r} (see jitterlab run --help)")


def test_offered_lists_few_names_whole_and_many_by_the_nearest():
    assert offered("x", ["b", "a"]) == "a, b"
    many = [f"metric_{i}" for i in range(20)]
    assert offered("metric_7x", many, "see LIST") == (
        "metric_7, metric_17, metric_9 (the nearest of 20; see LIST)")
    assert nearest("max_rel_period_eror", ["p99_rel_period_error", "max_rel_period_error"], 1) == [
        "max_rel_period_error"]
