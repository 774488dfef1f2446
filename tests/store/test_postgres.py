"""The PostgreSQL store: the catalog's behaviour on both backends, bad URLs, push between stores,
and two controllers writing into one database at once."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import EdgeSeries
from jitterlab.store import pgserver
from jitterlab.store.catalog import Store
from jitterlab.store.push import push
from jitterlab.store.raw import read_raw
from jitterlab.store.schema import SCHEMA_VERSION

pytestmark = pytest.mark.skipif(pgserver.available() is not None, reason=str(pgserver.available()))


@pytest.fixture(scope="module")
def server():
    with pgserver.throwaway_server("jl_tests") as url:
        yield url


@pytest.fixture
def pg_url(server, tmp_path, request):
    """A fresh database on the module's server, with a raw directory of this test's own."""
    import psycopg

    name = "t_" + request.node.name.lower().replace("[", "_").replace("]", "").replace("-", "_")[:50]
    admin = server.replace("/jl_tests?", "/postgres?")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return server.replace("/jl_tests?", f"/{name}?") + f"&raw_dir={tmp_path / 'raw'}"


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request, tmp_path):
    root = tmp_path / "results" if request.param == "sqlite" else request.getfixturevalue("pg_url")
    opened = Store(root)
    yield opened
    opened.close()


def record(cid, run_id="r1", rep=0, status="ok", metrics=()):
    return run_record(squarewave_cell(target="local"), id=run_id, campaign_id=cid, cell_key="k",
                      repetition=rep, settings={"duration_ns": 1}, labels={"image": "1.10"}, status=status,
                      error=None if status == "ok" else "why", metrics=metrics)


def test_commit_read_back_and_resume_bookkeeping(store):
    cid = store.new_campaign("c", "fp", "c.toml", "src", {"image": "1.10"})
    raw_path, sha = store.write_series("r1", {"vpin": EdgeSeries([1, 2, 3], [1, 0, 1])})
    run = record(cid, metrics=[Metric("max_rel_period_error", 0.02, "ratio", "vpin", "lower"),
                               Metric("n_periods", 1e9 + 1, "count", "vpin", "none")])
    store.commit_run(run.__class__(**{**run.__dict__, "raw_path": raw_path, "raw_sha256": sha}),
                     [Warning_("blind 3%", "isolate a CPU")])
    [back] = store.runs(cid)
    assert back.cell == run.cell and back.labels == {"image": "1.10"}
    assert back.settings.as_json() == {"duration_ns": 1}
    assert back.metric("max_rel_period_error", "vpin") == 0.02 and back.metric("n_periods", "vpin") == 1e9 + 1
    assert back.metrics[("vpin", "max_rel_period_error")].direction == "lower"
    assert store.committed(cid) == {("k", 0): "ok"}
    assert [w.message for _, w in store.warnings(cid, "r1")] == ["blind 3%"]
    assert read_raw(store.root / back.raw_path, back.raw_sha256)["vpin"].t_ns.tolist() == [1, 2, 3]
    assert store.latest_campaign("c").id == cid and [c.n_runs for c in store.campaigns()] == [1]
    assert store.runs(run_id="r")[0].id == "r1"


def test_a_failed_commit_leaves_nothing(store):
    cid = store.new_campaign("c", "fp", "c.toml", "src", {})
    with pytest.raises(Exception):  # noqa: B017  (sqlite3 or psycopg: the driver's own error)
        store.commit_run(record(cid), [Warning_(None, "x")])  # type: ignore[arg-type]
    assert store.runs(cid) == [] and store.committed(cid) == {}


def test_squarewave_keys_stay_columns_in_postgresql(pg_url):
    import psycopg

    store = Store(pg_url)
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    store.commit_run(record(cid))
    store.commit_run(run_record(cell("cyclictest", {"interval": 1000}), id="r2", campaign_id=cid))
    store.close()
    with psycopg.connect(pg_url.split("&raw_dir=")[0]) as conn:
        rows = conn.execute("SELECT id, impl, period_ns, probe, pin FROM runs ORDER BY id").fetchall()
        assert rows == [("r1", "c-fifo", 1_000_000, "vpin", "vpin"), ("r2", "", 0, "", "")]
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("postgresql:///jl_tests?host=/nonexistent/sock&raw_dir=/tmp/x",
         r"^--results postgresql:///jl_tests\?host=/nonexistent/sock&raw_dir=/tmp/x: cannot connect: "),
        ("postgresql://u:secret@127.0.0.1:1/db", r"say where raw series and attachments go: add \?raw_dir="),
        ("postgresql://u:secret@127.0.0.1:1/db?raw_dir=/tmp/x", r"^--results postgresql://u:\*\*\*@127.0.0.1:1/db"),
    ],
)
def test_bad_urls_are_one_line_without_the_password(url, expected, monkeypatch):
    monkeypatch.delenv("JITTERLAB_RAW_DIR", raising=False)
    with pytest.raises(UserError, match=expected) as err:
        Store(url)
    assert "secret" not in str(err.value) and "\n" not in str(err.value)


def test_a_newer_schema_and_an_empty_database_are_refused(pg_url):
    import psycopg

    with pytest.raises(UserError, match="no results in this database yet"):
        Store(pg_url, create=False)
    Store(pg_url).close()
    with psycopg.connect(pg_url.split("&raw_dir=")[0], autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION + 1,))
    with pytest.raises(UserError, match=f"written by a newer jitterlab \\(schema {SCHEMA_VERSION + 1}"):
        Store(pg_url)


def test_push_copies_everything_once_and_verifies_raw_files(tmp_path, pg_url):
    local = Store(tmp_path / "local")
    cid = local.new_campaign("offline", "fp", "c.toml", "src", {"board": "bbb"})
    local.add_warnings(cid, [Warning_("no isolcpus", "isolate")], target="local")
    sid = local.add_sysinfo(cid, "local", SystemFacts.given(kernel_release="6.1"))
    for i in range(3):
        raw, sha = local.write_series(f"r{i}", {"self": EdgeSeries([i, i + 1], [1, 0])})
        run = record(cid, f"r{i}", rep=i)
        local.commit_run(run.__class__(**{**run.__dict__, "raw_path": raw, "raw_sha256": sha,
                                         "sysinfo_id": sid,
                                         "attachments": local.write_attachments(f"r{i}", {"log": b"x"})}),
                         [Warning_(f"w{i}", "r")])
    shared = Store(pg_url)
    first = push(local, shared)
    again = push(local, shared)
    assert (first.campaigns, first.runs, first.skipped) == (1, 3, 0)
    assert (again.campaigns, again.runs, again.skipped) == (0, 0, 3)
    [camp] = shared.campaigns()
    runs = shared.runs(camp.id)
    assert [r.id for r in runs] == ["r0", "r1", "r2"] and camp.labels == {"board": "bbb"}
    for r in runs:
        assert r.raw_path == f"raw/{r.raw_sha256[:2]}/{r.raw_sha256}.parquet"  # named by content
        assert read_raw(shared.root / r.raw_path, r.raw_sha256)["self"].t_ns.tolist() == [r.repetition,
                                                                                         r.repetition + 1]
        assert shared.sysinfo(r.sysinfo_id).as_json() == {"kernel_release": "6.1"}
        assert (shared.root / r.attachments["log"]).read_bytes() == b"x"
    assert [t for t, _ in shared.target_warnings(camp.id)] == ["local"]
    # a raw file damaged after its run is refused, and nothing of that run is pushed
    cid2 = local.new_campaign("later", "fp", "c.toml", "", {})
    raw, sha = local.write_series("bad", {"self": EdgeSeries([7, 9], [1, 0])})
    run = record(cid2, "bad")
    local.commit_run(run.__class__(**{**run.__dict__, "raw_path": raw, "raw_sha256": sha}))
    (local.root / raw).write_bytes(b"PAR1 damaged")
    assert push(local, shared).damaged == [
        ("bad", f"its raw file {raw} was changed after the run (its sha256 differs)")]
    assert "bad" not in {r.id for r in shared.runs()}


CAMPAIGN = """
[campaign]
name = "shared"
repetitions = 2
duration = "200ms"
warmup = "20ms"
[[target]]
name = "{name}"
kind = "local"
workdir = "{workdir}"
[matrix]
impl = "python"
period = ["10ms", "20ms"]
probe = "self"
"""


def test_two_controllers_write_into_one_database_at_once(tmp_path, pg_url):
    procs = []
    for name in ("ctl-a", "ctl-b"):
        path = tmp_path / f"{name}.toml"
        path.write_text(CAMPAIGN.format(name=name, workdir=tmp_path / name))
        argv = [sys.executable, "-m", "jitterlab", "run", str(path), "--results", pg_url]
        procs.append(subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                      env={**os.environ, "PYTHONUNBUFFERED": "1"}))
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    store = Store(pg_url, create=False)
    runs = store.runs()
    assert len(runs) == 8 and len({r.id for r in runs}) == 8
    assert sorted((r.target, r.cell_key, r.repetition) for r in runs) == sorted(
        {(r.target, r.cell_key, r.repetition) for r in runs})
    for r in runs:
        assert read_raw(store.root / r.raw_path, r.raw_sha256)  # every file whole, by its hash
    assert len(store.campaigns()) == 2
    assert not any(Path(store.raw_dir).glob(".*.parquet"))  # no staging file left


def test_store_exists_asks_the_database_and_creates_nothing(pg_url):
    from jitterlab.store import store_exists

    assert not store_exists(pg_url)
    assert not store_exists(pg_url)  # asking created no table
    Store(pg_url).close()
    assert store_exists(pg_url)
    with pytest.raises(UserError, match=r"^--results postgresql:///jl\?host=/nonexistent/sock&"
                                        r"raw_dir=/tmp/x: cannot connect: "):
        store_exists("postgresql:///jl?host=/nonexistent/sock&raw_dir=/tmp/x")


def test_an_older_schema_is_migrated_once_by_the_backends_own_steps(pg_url, monkeypatch):
    import psycopg

    from jitterlab.store import postgres

    Store(pg_url).close()
    with psycopg.connect(pg_url.split("&raw_dir=")[0], autocommit=True) as conn:
        conn.execute("UPDATE schema_version SET version = %s", (SCHEMA_VERSION - 1,))
    steps = []

    def step(backend):
        steps.append(backend.where)
        backend.execute("ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT ''")

    monkeypatch.setattr(postgres, "MIGRATIONS", {SCHEMA_VERSION - 1: step})
    Store(pg_url, create=False).close()
    Store(pg_url).close()  # found up to date: the step is not run again
    assert len(steps) == 1
    with psycopg.connect(pg_url.split("&raw_dir=")[0]) as conn:
        assert conn.execute("SELECT version FROM schema_version").fetchone() == (SCHEMA_VERSION,)
        assert "note" in {r[0] for r in conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = 'runs'")}


@pytest.mark.parametrize(("statement", "what", "rows"), [
    ("DROP TABLE metrics", "its table metrics is missing", False),
    ("ALTER TABLE warnings DROP COLUMN remedy", "its table warnings lacks the column remedy", False),
    ("DELETE FROM schema_version", "its table schema_version holds 0 rows, not 1", False),
    ("UPDATE campaigns SET labels_json = '{not json'", "campaign #1: labels_json is not JSON (Expecting "
     "property name enclosed in double quotes: line 1 column 2 (char 1))", True),
])
def test_a_damaged_database_is_one_line_naming_it_without_the_password(pg_url, capsys, statement, what, rows):
    import psycopg

    from jitterlab.cli.main import main
    from jitterlab.store import shown_spec
    from jitterlab.store.damage import remedy

    store = Store(pg_url)
    store.commit_run(record(store.new_campaign("c", "fp", "c.toml", "", {"image": "a"})))
    store.close()
    with psycopg.connect(pg_url.split("&raw_dir=")[0], autocommit=True) as conn:
        conn.execute(statement)
    url = pg_url.replace("user=", "password=secret&user=")  # trust authentication: any password will do
    out = Path(pg_url.split("raw_dir=")[1]).parent
    commands = [["summary"], ["report", "--trend", "max_rel_period_error", "-o", str(out / "t.html")]]
    if not rows:  # compare reads no campaign row
        commands.append(["compare", "--baseline", "image=a", "--candidate", "image=b"])
    for argv in commands:
        assert main([*argv, "--results", url]) == 2
        err = capsys.readouterr().err.replace("\n", "")
        shown = shown_spec(url)
        assert err == f"error: {shown}: the store is damaged: {what}; {remedy(shown, rows=rows)}"
        assert "secret" not in err


def test_only_a_writer_makes_the_raw_directory(pg_url, tmp_path):
    Store(pg_url).close()
    assert (tmp_path / "raw" / "raw").is_dir()  # the writer's
    elsewhere = pg_url.replace(f"raw_dir={tmp_path / 'raw'}", f"raw_dir={tmp_path / 'elsewhere'}")
    reader = Store(elsewhere, create=False)
    assert reader.runs() == [] and not (tmp_path / "elsewhere").exists()
    reader.close()
