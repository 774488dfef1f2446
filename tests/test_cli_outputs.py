"""report, export and compare refuse an output or a selection that cannot work before they compute
anything, and write what they can (a key whose runs hold values of different types included)."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from jitterlab.cli.main import main
from jitterlab.model.fakes import cell, run_record
from jitterlab.store.catalog import Store


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
    from jitterlab.cli.main import eta_s

    assert eta_s(total_s, completed_s, elapsed_s) == pytest.approx(left_s)
