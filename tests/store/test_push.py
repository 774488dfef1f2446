"""push between two results directories: what is sound is pushed, each damaged run is named and left
out, and the command exits 1 for it; the destination is named and checked like --results."""

from __future__ import annotations

import pytest

from jitterlab.cli.main import main
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.series import EdgeSeries
from jitterlab.store.catalog import Store
from jitterlab.store.push import push


def offline_store(root, n=5):
    """A results directory with `n` runs r0..r(n-1), each with a raw file and an attachment."""
    store = Store(root)
    cid = store.new_campaign("offline", "fp", "c.toml", "", {})
    for i in range(n):
        raw, sha = store.write_series(f"r{i}", {"self": EdgeSeries([i, i + 1], [1, 0])})
        run = run_record(squarewave_cell(), id=f"r{i}", campaign_id=cid, repetition=i, raw_path=raw,
                         raw_sha256=sha)
        store.commit_run(run, files={"log": f"run {i}".encode()})
    return store


def test_a_push_leaves_out_each_damaged_run_and_pushes_the_rest(tmp_path):
    local = offline_store(tmp_path / "local")
    runs = {r.id: r for r in local.runs()}
    (local.root / runs["r1"].raw_path).unlink()  # deleted
    (local.root / runs["r2"].raw_path).write_bytes(b"PAR1 changed")  # other bytes
    (local.root / runs["r3"].attachments["log"]).unlink()
    dest = Store(tmp_path / "lab")
    done = push(local, dest)
    assert done.runs == 2 and sorted(r.id for r in dest.runs()) == ["r0", "r4"]
    assert done.damaged == [("r1", "its raw file raw/r1.parquet is missing"),
                            ("r2", "its raw file raw/r2.parquet was changed after the run (its sha256 "
                                   "differs)"),
                            ("r3", "its attachment attachments/r3/log is missing")]
    assert sorted(p.name for p in (dest.root / "raw").glob("*")) == ["r0.parquet", "r4.parquet"]
    again = push(local, dest)  # the sound runs are there; the damaged ones are named again
    assert (again.runs, again.skipped, len(again.damaged)) == (0, 2, 3)


def test_the_push_command_names_each_damaged_run_and_exits_1(tmp_path, capsys):
    local = offline_store(tmp_path / "local", n=3)
    (local.root / local.runs()[0].raw_path).unlink()
    local.close()
    assert main(["push", "--results", str(tmp_path / "local"), "--to", str(tmp_path / "lab")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("pushed 2 runs")
    assert err.splitlines() == ["run r0 was not pushed: its raw file raw/r0.parquet is missing",
                                f"1 run of {tmp_path / 'local'} is damaged and was not pushed; the others "
                                "were"]


@pytest.mark.parametrize(("to", "says"), [
    ("PostgreSQL://u@h/db?raw_dir=/x", "error: --to 'PostgreSQL://u@h/db?raw_dir=/x': jitterlab cannot keep "
                                       "results in a PostgreSQL: URL; give postgresql://"),
    ("postgresql:/u@h/db", "error: --to 'postgresql:/u@h/db': jitterlab cannot keep results in a "
                           "postgresql:"),
    ("postgresql+psycopg://u@h/db", "error: --to 'postgresql+psycopg://u@h/db': jitterlab cannot keep"),
    ("http://x/y", "error: --to 'http://x/y': jitterlab cannot keep results in a http: URL"),
    ("", "error: --to: give a path"),
    ("postgresql://u:pw@[::1/db?raw_dir=/x&password=secret",
     "error: --to 'postgresql://u:***@[::1/db?raw_dir=/x&password=***': not a URL (Invalid IPv6 URL)"),
    ("postgresql://u@h/db?password=secret", "error: --to postgresql://u@h/db?password=***: say where raw"),
])
def test_push_refuses_a_destination_it_does_not_speak_and_creates_nothing(tmp_path, monkeypatch, capsys,
                                                                          to, says):
    monkeypatch.delenv("JITTERLAB_RAW_DIR", raising=False)
    offline_store(tmp_path / "local", n=1).close()
    monkeypatch.chdir(tmp_path)
    assert main(["push", "--results", "local", "--to", to]) == 2
    err = capsys.readouterr().err
    assert err.startswith(says) and "secret" not in err and "pw" not in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["local"]
