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
    commands = [c.__name__.rsplit(".", 1)[1].rstrip("_") for c in COMMANDS]
    assert commands == ["run", "list", "show", "monitor", "report", "compare", "export", "import", "push",
                        "doctor"]
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
