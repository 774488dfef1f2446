"""report, export and compare refuse an output or a selection that cannot work before they compute
anything, and write what they can (a key whose runs hold values of different types included)."""

from __future__ import annotations

import io
import os

import pyarrow.parquet as pq
import pytest

from jitterlab.campaign.file import load_campaign
from jitterlab.cli.commands import show
from jitterlab.cli.main import COMMANDS, main
from jitterlab.cli.progress import RunProgress
from jitterlab.model.errors import RuntimeProblem, UserError
from jitterlab.model.fakes import cell, run_record
from jitterlab.report.console import SafeConsole
from jitterlab.store.catalog import RunExists, Store
from jitterlab.store.locks import CampaignBusy
from tests.support import local_campaign


@pytest.fixture
def store_dir(tmp_path):
    """Two iperf3 runs, one with bitrate "auto" and one with 100000000, as image-compare has."""
    store = Store(tmp_path / "r")
    cid = store.new_campaign("image-compare", "fp", "c.toml", "", {})
    for i, bitrate in enumerate(("auto", 100_000_000)):
        store.commit_run(run_record(cell("iperf3", {"bitrate": bitrate}), id=f"r{i}", campaign_id=cid,
                                    cell_key=f"k{i}", labels={"image": f"1.{i}"}))
    store.close()
    return tmp_path / "r"


@pytest.mark.parametrize(("argv", "expected"), [
    (["report", "-o", "{dir}"], "-o {dir}: is a directory; give a file name"),
    (["report", "-o", "{tmp}/no/such/r.html"], "the directory {tmp}/no/such does not exist; create it"),
    (["export", "--format", "csv", "-o", "{tmp}/no/such/x.csv"], "the directory {tmp}/no/such does not"),
    (["export", "--format", "csv", "-o", "{dir}"], "-o {dir}: is a directory"),
    (["export", "--format", "json", "-o", "{dir}"], "-o {dir}: is a directory"),
    (["export", "--format", "parquet", "-o", "{file}"], "-o {file}: is a file; --format parquet writes a "
                                                        "directory"),
    (["compare", "--baseline", "image=1.0", "--candidate", " image = 1.0 "],
     "--baseline and --candidate both select image=1.0"),
    (["report", "-o", "{tmp}/r.html", "--max-run-figures", "99999999999"], "--max-run-figures: give 0 to"),
])
def test_an_impossible_output_or_selection_is_one_error_before_any_work(store_dir, tmp_path, capsys, argv,
                                                                          expected):
    (tmp_path / "a-dir").mkdir()
    (tmp_path / "a-file").write_text("x")
    names = {"{dir}": str(tmp_path / "a-dir"), "{file}": str(tmp_path / "a-file"), "{tmp}": str(tmp_path)}

    def fill(text: str) -> str:
        for key, value in names.items():
            text = text.replace(key, value)
        return text

    assert main([*map(fill, argv), "--results", str(store_dir)]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert fill(expected) in err and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-dir", "a-file", "r"]  # nothing written


def test_parquet_export_of_a_key_with_values_of_two_types(store_dir, tmp_path):
    out = tmp_path / "pq"
    assert main(["export", "--format", "parquet", "-o", str(out), "--results", str(store_dir)]) == 0
    runs = pq.read_table(out / "runs.parquet").to_pydict()
    assert sorted(zip(runs["id"], runs["param.bitrate"], strict=True)) == [("r0", "auto"),
                                                                           ("r1", "100000000")]


@pytest.mark.parametrize(
    ("total_s", "completed_s", "elapsed_s", "left_s"),
    [
        (100.0, 0.0, 0.0, 100.0),  # nothing done yet: the estimate as it is
        (100.0, 20.0, 30.0, 120.0),  # runs took 1.5x their estimate: so will the other 80 s
        (100.0, 50.0, 25.0, 25.0),  # a fast machine
        (100.0, 100.0, 130.0, 0.0),
    ],
)
def test_time_left_follows_the_pace_of_the_runs_so_far(total_s, completed_s, elapsed_s, left_s):
    from jitterlab.cli.progress import eta_s

    assert eta_s(total_s, completed_s, elapsed_s) == pytest.approx(left_s)


# --- how a command ends: the exit status says which kind of trouble it was -------------------------


@pytest.mark.parametrize(("raised", "status"), [
    (UserError("--x: bad input; give another"), 2),
    (RuntimeProblem("campaign 'c' is being measured by pid 1; wait for it"), 1),
    (CampaignBusy("campaign 'c' (#1) is being measured by pid 1; wait for it to end"), 1),
    (RunExists("repetition 1 of cell 'k' was committed meanwhile by another jitterlab"), 1),
    (KeyboardInterrupt(), 130),
])
def test_each_kind_of_trouble_has_its_exit_status_and_one_line(monkeypatch, capsys, raised, status):
    def fail(args):
        raise raised

    monkeypatch.setattr(show, "run", fail)
    assert main(["show"]) == status
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert (str(raised) or "interrupted") in err


def test_a_bug_keeps_its_traceback(monkeypatch):
    def fail(args):
        raise ZeroDivisionError("a bug")

    monkeypatch.setattr(show, "run", fail)
    with pytest.raises(ZeroDivisionError, match="a bug"):
        main(["show"])


def test_a_campaign_being_measured_by_another_is_refused_with_exit_1(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "busy"\nduration = "1s"\n[[target]]\nname = "local"\n'
                    f'kind = "local"\nworkdir = "{tmp_path / "w"}"\n'
                    '[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\n')
    campaign = load_campaign(path)
    store = Store(tmp_path / "r")
    cid = store.new_campaign(campaign.name, campaign.fingerprint, str(path), campaign.source, {})
    store.lock_campaign(cid, campaign.name)  # "another jitterlab": the lock is per open file
    try:
        assert main(["run", str(path), "--results", str(tmp_path / "r"), "--resume"]) == 1
    finally:
        store.close()
    err = capsys.readouterr().err.replace("\n", "")
    assert f"campaign 'busy' (#{cid}) in {tmp_path / 'r'} is being measured by pid {os.getpid()}" in err
    assert not (tmp_path / "w").exists()  # refused before any target was opened


def test_an_unreachable_database_exits_1(capsys):
    pytest.importorskip("psycopg")
    url = "postgresql:///jl_tests?host=/nonexistent/sock&raw_dir=/nonexistent/raw"
    assert main(["show", "--results", url]) == 1
    err = capsys.readouterr().err.replace("\n", "")
    assert err.startswith("error: --results postgresql:///jl_tests") and "cannot connect" in err


def test_help_names_every_kind_of_target_and_every_command(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "on local, ssh, labgrid or qemu targets" in " ".join(out.split())
    commands = [c.__name__.rsplit(".", 1)[1].rstrip("_").replace("_", "-") for c in COMMANDS]
    assert commands == ["run", "summary", "tune", "list", "show", "explain", "monitor", "report", "compare",
                        "export", "import", "push", "check", "doctor", "labgrid-board", "lava-bundle"]
    listed = [line.split()[0] for line in out.splitlines() if line.startswith("    ") and line[4] != " "]
    assert listed == commands  # each with its help line, in this order


# --- progress while measuring ------------------------------------------------------------------


def test_a_log_gets_one_line_per_run_with_the_time_left_and_notices_escaped():
    out = SafeConsole(file=io.StringIO(), force_terminal=False, width=200)
    with RunProgress(out) as progress:
        progress.plan({"board": (2, 10.0)})
        progress("board", "c-fifo 1ms #1", 5.0)
        progress("board", None, 5.0)
        progress("board", "c-fifo 1ms #2", 5.0)
        progress.notice("board", "stopped a leftover \x1b[2J")
    lines = out.file.getvalue().splitlines()
    assert lines[0] == "board: [1/2] c-fifo 1ms #1, about 10 s left"
    assert lines[1].startswith("board: [2/2] c-fifo 1ms #2, about ")
    assert lines[2] == "board: stopped a leftover \\x1b[2J"


def test_a_terminal_gets_one_bar_per_target_however_many_rounds_and_none_left_once_measured():
    """--until-decided plans a round after another: the target's bar starts again, no bar is added;
    the bars are transient, so the run ends on its answer, not on eleven finished bars."""
    out = SafeConsole(file=io.StringIO(), force_terminal=True, width=100)
    with RunProgress(out) as progress:
        for round_runs in (3, 1, 1):
            progress.plan({"board": (round_runs, 2.0 * round_runs)})
            for i in range(round_runs):
                progress("board", f"fake #{i + 1}", 2.0)
                progress("board", None, 2.0)
        [bar] = progress.bar.tasks
        assert (bar.total, bar.completed, bar.description) == (2.0, 2.0, "board: fake #1")
    assert progress.bar.live.transient and not progress.bar.live.is_started


# --- hints name the option where the user gives it ---------------------------------------------


def test_doctor_over_ssh_url_advises_its_own_options_not_a_target_table(tmp_path):
    from jitterlab.targets.ssh.options import from_url, parse_options
    from jitterlab.targets.ssh.target import SSHTarget

    key = tmp_path / "id"
    key.write_text("k")
    for options, accept, refused in (
        (from_url("ssh://root@board:2222", "TARGET", {"key": str(key)}), "--accept-new-host-key",
         "give --key ~/.ssh/<your key>"),
        (parse_options({"host": "board"}, "c.toml: target[1]"), "set accept_new_host_key = true in its "
         "[[target]]", 'set key = "~/.ssh/<your key>" in its [[target]]'),
    ):
        target = SSHTarget("board", options)
        try:
            unknown = str(target.failure("Host key verification failed."))
            denied = str(target.failure("root@board: Permission denied (publickey)."))
        finally:
            target.close()
        assert f"or {accept} to trust it" in unknown or f"or give {accept} to trust it" in unknown
        assert refused in denied
        if options.from_command_line:
            assert "[[target]]" not in unknown + denied


def test_a_bad_load_value_in_compare_lists_the_loads(store_dir, capsys):
    assert main(["compare", "--baseline", "load=cpuu", "--candidate", "image=1.1", "--results",
                 str(store_dir)]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "--baseline load=cpuu: no successful run has it" in err and "load takes: idle" in err


# --- one rule for naming a cell ----------------------------------------------------------------


def _iperf3_cells():
    auto = "auto"
    return [cell("iperf3", {"protocol": "tcp", "direction": "send", "bitrate": auto, "parallel": 1,
                            "length": auto, "port": 15211, "peer": ""}),
            cell("iperf3", {"protocol": "udp", "direction": "send", "bitrate": 100_000_000, "parallel": 1,
                            "length": auto, "port": 15211, "peer": ""})]


def test_a_key_at_its_default_is_named_where_it_tells_cells_apart():
    from jitterlab.campaign.cells import names

    tcp, udp = _iperf3_cells()
    assert names().params_text(tcp) == ""  # alone: its defaults are left out
    among = names().among([tcp, udp])
    assert among.params_text(tcp) == "protocol=tcp bitrate=auto"
    assert among.params_text(udp) == "protocol=udp bitrate=100M"


def test_compare_names_the_default_protocol_beside_udp():
    from jitterlab.analysis.compare import Selector, cell_text, compare
    from jitterlab.campaign.cells import names
    from jitterlab.model.records import Metric

    runs = [run_record(c, id=f"{image}{i}{rep}", labels={"image": image}, cell_key=str(i),
                       metrics=[Metric("mbit_per_s", 900.0 + rep + (image == "b"), "Mbit/s", "", "higher")])
            for image in ("a", "b") for i, c in enumerate(_iperf3_cells()) for rep in range(3)]
    result = compare(runs, Selector("image", "a"), Selector("image", "b"), names=names())
    texts = {cell_text(result, row) for row in result.rows}
    assert texts == {"protocol=tcp bitrate=auto", "protocol=udp bitrate=100M"}


def test_dry_run_leaves_out_defaults_that_tell_no_cell_apart(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "d"\nduration = "1s"\n[matrix]\nimpl = "c-fifo"\n'
                    'period = ["10ms", "1ms"]\nprobe = ["vpin", "self"]\npin = "vpin"\n')
    assert main(["run", str(path), "--dry-run"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "squarewave" in line]
    assert len(rows) == 4 and not any("pin=vpin" in row.replace("probe=vpin", "") for row in rows)
    assert sum("probe=vpin" in row for row in rows) == 2  # probe tells the cells apart: named
    assert all("impl=c-fifo" in row for row in rows)  # not a default: named


def test_the_package_metadata_needs_no_deprecated_license_table():
    import tomllib
    from pathlib import Path

    meta = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text())
    assert meta["project"]["license"] == "MIT"  # an SPDX expression, not the deprecated {text = ...}
    [setuptools] = [r for r in meta["build-system"]["requires"] if r.startswith("setuptools")]
    assert setuptools == "setuptools>=77"  # the first that reads SPDX license expressions


def test_show_on_a_store_without_a_campaign_says_how_to_make_one(tmp_path, capsys):
    Store(tmp_path / "r").close()
    assert main(["show", "--results", str(tmp_path / "r")]) == 2
    results = tmp_path / "r"
    assert capsys.readouterr().err.replace("\n", "") == (
        f"error: {results}: no campaign here yet; measure one into it (jitterlab run CAMPAIGN --results "
        f"{results}) or import a capture (jitterlab import edges FILE --period PERIOD --results {results})")
    assert main(["show", "--results", str(results), "--campaign", "x"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --campaign 'x': not in {results}; campaigns there: none")


def test_counts_flags_and_sizes_read_as_words(tmp_path, capsys):
    from jitterlab.model.facts import SystemFacts
    from jitterlab.report.format import format_value
    from jitterlab.report.terminal import console, sysinfo_table

    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "one"\nrepetitions = 1\n[[target]]\nname = "local"\nkind = "local"\n'
                    '[matrix]\nbenchmark = "squarewave"\nimpl = "bash"\nperiod = "10ms"\n')
    assert main(["run", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "one: 1 cell x 1 repetition of 5 s" in out and "\n1 run, estimated" in out
    assert format_value(1.0, "flag") == "yes" and format_value(0.0, "flag") == "no"  # max_is_lower_bound
    shown = console(file=io.StringIO())
    shown.print(sysinfo_table(SystemFacts.given(mem_available_kb=23_963_604)))
    [line] = [x for x in shown.file.getvalue().splitlines() if "GB" in x]
    assert line.split() == ["other", "mem_available", "24.54", "GB"]  # the name no longer says kB


def test_help_keeps_an_example_whole_and_names_compares_default_runs(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = capsys.readouterr().out
    example = ("jitterlab compare --baseline image=1.10 --candidate image=1.11 --metric "
               "max_rel_period_error --format json --fail-on worse")
    assert f"\n  {example}\n" in out  # on one line, to copy
    text = " ".join(out.split())
    assert "excludes no change" not in text
    assert "repeat to compare across several (default: every run of the store)" in text


def test_dry_run_estimates_each_cell_as_a_person_plans_it(tmp_path, capsys):
    """The estimate column was one run's time under a title of 3 repetitions: a cell of 3 runs read 1 s."""
    lines = dry_run_lines(tmp_path, capsys, '[matrix]\nbenchmark = "squarewave"\nimpl = ["bash", "c-fifo"]\n'
                          'period = "10ms"\nload = ["idle", "cpu"]\n', name="three", repetitions=3,
                          duration="2s")
    assert lines[0] == "three: 4 cells x 3 repetitions of 2 s"
    assert lines[1].split("  ")[-2:] == ["per run", "per cell (3 runs)"]
    for row in lines[2:6]:
        per_run, per_cell = (float(x) for x in row.replace(" s", "").split()[-2:])
        assert per_cell == pytest.approx(3 * per_run, abs=1.0)  # each rounded to a second


def test_dry_run_gives_each_table_its_own_duration(tmp_path, capsys):
    lines = dry_run_lines(tmp_path, capsys, '[[matrix]]\nimpl = "c-fifo"\nperiod = "10ms"\n[[matrix]]\n'
                          'impl = "bash"\nperiod = "100ms"\nduration = "5s"\n', name="two", duration="1s")
    assert lines[0] == "two: 2 cells x 1 repetition of 1 s to 5 s"
    per_run = {row.split()[2]: row.split()[-4] for row in lines[2:4]}
    assert per_run == {"impl=c-fifo": "1", "impl=bash": "5"}


def dry_run_lines(tmp_path, capsys, matrix: str, **campaign: object) -> list[str]:
    """The lines `run --dry-run` prints for a campaign of this machine with these tables."""
    assert main(["run", str(local_campaign(tmp_path, matrix, **campaign)), "--dry-run"]) == 0
    return capsys.readouterr().out.splitlines()
