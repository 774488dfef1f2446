"""Backends behind one interface: the --results spec picks one, a store is found without creating one,
the catalog works unchanged on a backend it has never heard of, and a run's files enter the store
with its rows or not at all."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path
from typing import ClassVar

import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import EdgeSeries
from jitterlab.store import backends, results_spec, store_exists
from jitterlab.store.backend import Backend
from jitterlab.store.catalog import RunExists, Store
from jitterlab.store.postgres import PostgresBackend
from jitterlab.store.schema import SCHEMA
from jitterlab.store.sqlite import SqliteBackend


def test_the_spec_text_picks_the_backend():
    assert backends.backend_for("results") is SqliteBackend
    assert backends.backend_for("/srv/lab results/a:b") is SqliteBackend
    assert backends.backend_for("postgresql://lab@db/jl?raw_dir=/srv") is PostgresBackend
    assert backends.backend_for("postgres:///jl?raw_dir=/srv") is PostgresBackend


@pytest.mark.parametrize(("text", "expected"), [
    ("mysql://lab:secret@db/jl", r"^--results 'mysql://lab:\*\*\*@db/jl': jitterlab cannot keep results "
                                 r"in a mysql: URL; give postgresql://user@host/db\?raw_dir=DIR, or a "
                                 r"directory \(./NAME for a directory named like a URL\)$"),
    # what looks like a URL never becomes a directory named like it
    ("PostgreSQL://u@h/db?raw_dir=/x", r"in a PostgreSQL: URL; give postgresql://user@host/db\?raw_dir=DIR "
                                       r"\(written so: lower case, two slashes, no driver name\)"),
    ("postgresql:/u@h/db?raw_dir=/x", r"^--results 'postgresql:/u@h/db\?raw_dir=/x': jitterlab cannot keep"),
    ("postgres:u@h/db", r"in a postgres: URL"),
    ("postgresql+psycopg://u:secret@h/db", r"in a postgresql\+psycopg: URL"),
    ("http://x/y", r"in a http: URL"),
    ("file:/x", r"in a file: URL"),
    ("postgresql://u@[::1/db?raw_dir=/x&password=secret",
     r"^--results 'postgresql://u@\[::1/db\?raw_dir=/x&password=\*\*\*': not a URL \(Invalid IPv6 URL\); "
     r"write it postgresql://user@host/db\?raw_dir=DIR \(\[::1\] for an IPv6 address\)$"),
    ("postgresql://u@h/db?sslpassword=secret&password=secret", r"^--results postgresql://u@h/db\?"
                                                               r"sslpassword=\*\*\*&password=\*\*\*: say"),
    ("", r"^--results: give a path$"),
    ("a/" + "x" * 300, r"^--results: path too long \(302 bytes; at most 4096, 255 per name\)"),
    ("postgresql://u:secret@db/jl", r"^--results postgresql://u:\*\*\*@db/jl: say where raw series"),
])
def test_results_spec_refuses_in_one_line(text, expected, monkeypatch):
    monkeypatch.delenv("JITTERLAB_RAW_DIR", raising=False)
    with pytest.raises(UserError, match=expected) as err:
        results_spec(text)
    assert "\n" not in str(err.value) and "secret" not in str(err.value)


def test_a_spec_as_printed_never_shows_a_password():
    from jitterlab.store import shown_spec

    assert shown_spec("postgresql://u:p%40ss@h/db?password=x&sslpassword=y&raw_dir=/r") == (
        "postgresql://u:***@h/db?password=***&sslpassword=***&raw_dir=/r")
    assert shown_spec("results") == "results"


def test_results_spec_keeps_what_it_accepts(monkeypatch):
    assert results_spec("results/") == "results"
    assert results_spec("./http:/x") == "./http:/x" and results_spec("runs:2024") == "runs:2024"
    url = "postgresql://u:secret@db/jl?raw_dir=/srv/jl"
    assert results_spec(url) == url  # the password is needed to connect
    monkeypatch.setenv("JITTERLAB_RAW_DIR", "/srv/jl")
    assert results_spec("postgresql://db/jl") == "postgresql://db/jl"


def test_store_exists_creates_nothing(tmp_path):
    where = tmp_path / "r"
    assert not store_exists(str(where)) and not where.exists()
    where.mkdir()
    assert not store_exists(str(where)) and list(where.iterdir()) == []
    Store(where).close()
    assert store_exists(str(where))


class MemoryBackend(Backend):
    """A backend the catalog has never heard of: SQLite in memory, files in a directory named by
    the spec (memory://DIR). All a new backend needs is this class and its registration."""

    name, form, content_addressed = "memory", "memory://DIR", True
    opened: ClassVar[dict[str, sqlite3.Connection]] = {}

    def __init__(self, db: sqlite3.Connection, files: Path) -> None:
        self._db, self.files, self.where = db, files, f"memory://{files}"

    @classmethod
    def claims(cls, text):
        return text.startswith("memory://")

    @classmethod
    def check_spec(cls, text):
        return text

    @classmethod
    def exists(cls, spec):
        return spec in cls.opened

    @classmethod
    def open(cls, spec, *, create):
        if spec not in cls.opened:
            if not create:
                raise UserError(f"{spec}: nothing here")
            db = cls.opened[spec] = sqlite3.connect(":memory:", isolation_level=None,
                                                    check_same_thread=False)
            for statement in SCHEMA:
                db.execute(statement)
        return cls(cls.opened[spec], Path(spec.removeprefix("memory://")))

    def execute(self, sql, args=()):
        return self._db.execute(sql, args)

    def executemany(self, sql, rows):
        self._db.executemany(sql, rows)

    def insert(self, sql, args):
        return int(self._db.execute(sql, args).lastrowid)

    @contextlib.contextmanager
    def transaction(self):
        self._db.execute("BEGIN")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def close(self):
        pass  # the database lives as long as the test


@pytest.fixture
def memory(monkeypatch, tmp_path):
    monkeypatch.setattr(backends, "BACKENDS", (MemoryBackend, *backends.BACKENDS))
    MemoryBackend.opened.clear()
    return f"memory://{tmp_path / 'files'}"


def test_the_catalog_works_on_a_backend_it_does_not_know(memory):
    assert not store_exists(memory)
    store = Store(memory)
    assert store_exists(memory) and store.where == memory
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    store.lock_campaign(cid, "c")
    run = run_record(squarewave_cell(), id="r1", campaign_id=cid,
                     metrics=[Metric("max_rel_period_error", 0.02, "ratio", "vpin")])
    stored = store.commit_run(run, [Warning_("w", "r")], series={"vpin": EdgeSeries([1, 2, 3], [1, 0, 1])},
                              files={"log": b"x"})
    [back] = Store(memory, create=False).runs(cid)
    assert back == stored and back.raw_path == f"raw/{stored.raw_sha256[:2]}/{stored.raw_sha256}.parquet"
    assert store.read_series(back)["vpin"].t_ns.tolist() == [1, 2, 3]
    assert (store.root / back.attachments["log"]).read_bytes() == b"x"
    assert (store.root / "locks" / f"campaign-{cid}.lock").is_file()
    store.close()


def test_commit_run_writes_the_files_it_is_given_and_names_them(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    run = run_record(squarewave_cell(), id="r1", campaign_id=cid)
    stored = store.commit_run(run, series={"vpin": EdgeSeries([5, 6], [1, 0])}, files={"tool out": b"y"})
    assert stored.raw_path == "raw/r1.parquet"
    assert stored.attachments == {"tool out": "attachments/r1/tool_out"}
    [back] = store.runs(cid)
    assert back == stored
    assert store.read_series(back)["vpin"].t_ns.tolist() == [5, 6]
    assert store.read_series(run_record(squarewave_cell(), id="none")) == {}


def test_a_refused_commit_leaves_no_file_behind(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    store.commit_run(run_record(squarewave_cell(), id="first", campaign_id=cid))
    second = run_record(squarewave_cell(), id="second", campaign_id=cid)
    with pytest.raises(RunExists):
        store.commit_run(second, series={"vpin": EdgeSeries([5, 6], [1, 0])}, files={"log": b"z"})
    assert not (tmp_path / "raw" / "second.parquet").exists()
    assert not (tmp_path / "attachments" / "second" / "log").exists()
    assert [r.id for r in store.runs(cid)] == ["first"]


READERS = [["summary"], ["show"], ["report", "-o", "r.html"], ["export", "--format", "csv"],
           ["compare", "--baseline", "a=1", "--candidate", "a=2"]]


@pytest.mark.parametrize("argv", READERS)
def test_a_database_that_cannot_be_reached_makes_no_raw_directory(tmp_path, monkeypatch, capsys, argv):
    pytest.importorskip("psycopg")
    from jitterlab.cli.main import main

    monkeypatch.chdir(tmp_path)
    url = f"postgresql:///jl?host={tmp_path / 'no-server'}&raw_dir={tmp_path / 'raw'}"
    assert main([*argv, "--results", url]) == 1
    assert "cannot connect" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


MALFORMED = {  # a PostgreSQL URL no server can answer: the part that is wrong, before any connection
    "postgresql://u@127.0.0.1:99999/db?raw_dir=RAW": "the port 99999 is out of range (1 to 65535)",
    "postgresql://u@h:0/db?raw_dir=RAW": "the port 0 is out of range (1 to 65535)",
    "postgresql://u@h1,h2:5x/db?raw_dir=RAW": "the port '5x' is not a number",
    "postgresql://u@h/db?port=70000&raw_dir=RAW": "the port 70000 is out of range (1 to 65535)",
    "postgresql://u%zz@h/db?raw_dir=RAW": "the user name 'u%zz' has a % that starts no %XX escape (write a % "
                                          "as %25)",
    "postgresql://u:se%zzcret@h/db?raw_dir=RAW": "the password has a % that starts no %XX escape",
    "postgresql://u@h/d%zzb?raw_dir=RAW": "the database name 'd%zzb' has a % that starts no %XX escape",
    "postgresql://u@h/db?host=%zz&raw_dir=RAW": "the value of host '%zz' has a % that starts no %XX escape",
}


@pytest.mark.parametrize(("url", "says"), MALFORMED.items())
def test_a_malformed_database_url_is_a_mistake_in_the_command_naming_its_part(tmp_path, capsys, url, says):
    from jitterlab.cli.main import main

    url = url.replace("RAW", str(tmp_path / "raw"))
    assert main(["show", "--results", url]) == 2
    err = capsys.readouterr().err.replace("\n", "")
    assert err.startswith(f"error: --results {url.replace('se%zzcret', '***')}: {says}"), err
    assert "secret" not in err
    assert err.endswith("; write it postgresql://user@host:port/db?raw_dir=DIR")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("query", "says"), [
    ("foo=bar", 'libpq cannot use this URL: invalid URI query parameter: "foo"; fix it'),
    ("sslmode=bogus", 'libpq cannot use this URL: invalid sslmode value: "bogus"; fix it'),
])
def test_a_url_libpq_refuses_before_connecting_exits_2(tmp_path, capsys, query, says):
    pytest.importorskip("psycopg")
    from jitterlab.cli.main import main

    url = f"postgresql://u@127.0.0.1/db?{query}&raw_dir={tmp_path / 'raw'}"
    assert main(["summary", "--results", url]) == 2
    assert says in capsys.readouterr().err.replace("\n", "")
    assert list(tmp_path.iterdir()) == []
