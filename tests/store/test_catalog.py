"""The SQLite catalog: whole-or-nothing commits, resume bookkeeping, schema versioning."""

from __future__ import annotations

import re
import sqlite3

import pytest

from jitterlab.model.campaigns import StoredCampaign
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric, RunRecord, Warning_
from jitterlab.store import postgres, schema
from jitterlab.store.catalog import SCHEMA_VERSION, RunExists, Store


def record(campaign_id: int, run_id: str = "r1", rep: int = 0, status: str = "ok") -> RunRecord:
    metrics = {
        ("vpin", "max_rel_period_error"): Metric("max_rel_period_error", 0.02, "ratio", "vpin"),
        ("self", "max_rel_period_error"): Metric("max_rel_period_error", 0.01, "ratio", "self"),
    }
    return run_record(
        squarewave_cell("c-fifo", 1_000_000, target="local"), id=run_id, campaign_id=campaign_id,
        cell_key="k", repetition=rep, settings={"duration_ns": 1}, labels={"image": "1.10"},
        status=status, error=None if status == "ok" else "why", started_ns=1, wall_s=0.5,
        metrics=metrics.values() if status == "ok" else (),
    )


def test_commit_and_read_back(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {"image": "1.10"})
    store.commit_run(record(cid), [Warning_("blind 3%", "isolate a CPU")])
    [run] = store.runs(cid)
    assert run.metric("max_rel_period_error", "vpin") == 0.02
    assert run.metric("max_rel_period_error", subject="self") == 0.01
    assert run.labels == {"image": "1.10"}
    assert store.committed(cid) == {("k", 0): "ok"}
    assert [w.message for _, w in store.warnings(cid, "r1")] == ["blind 3%"]


def test_failed_commit_leaves_nothing(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {})
    with pytest.raises(sqlite3.IntegrityError):
        store.commit_run(record(cid), [Warning_(None, "x")])  # type: ignore[arg-type]
    assert store.runs(cid) == []
    assert store.committed(cid) == {}
    with store._lock:
        assert store._db.execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0


def test_recommit_replaces_only_the_run_it_names(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {})
    store.commit_run(record(cid, "r1", status="failed"))
    with pytest.raises(RunExists, match=r"repetition 1 of cell 'k' was committed meanwhile .*run r1\)"):
        store.commit_run(record(cid, "r2"))  # a second jitterlab measured it too: the first is kept
    with pytest.raises(RunExists):
        store.commit_run(record(cid, "r2"), replaces="r0")
    assert [r.id for r in store.runs(cid)] == ["r1"]
    store.commit_run(record(cid, "r2"), replaces="r1")  # --retry-failed
    assert [(r.id, r.status) for r in store.runs(cid)] == [("r2", "ok")]


def test_latest_campaign_by_name(tmp_path):
    store = Store(tmp_path)
    first = store.new_campaign("a", "fp", "a.toml", "[campaign]", {"image": "A"})
    store.new_campaign("b", "fp", "b.toml", "", {})
    later = store.new_campaign("a", "fp2", "a.toml", "", {})
    assert store.latest_campaign("a").id == later
    assert store.latest_campaign("a", "fp") == StoredCampaign(
        first, "a", "fp", "a.toml", "[campaign]", {"image": "A"}, store.campaign(first).created_ns,
        store.campaign(first).jitterlab_version)
    assert store.latest_campaign().name == "a" and store.latest_campaign("zzz") is None
    assert [(c.id, c.name, c.n_runs, c.labels) for c in store.campaigns()] == [
        (first, "a", 0, {"image": "A"}), (first + 1, "b", 0, {}), (later, "a", 0, {})]


def test_persistent_across_reopen(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {})
    store.commit_run(record(cid))
    store.close()
    again = Store(tmp_path, create=False)
    assert len(again.runs(cid)) == 1


def test_missing_store_is_a_user_error(tmp_path):
    with pytest.raises(UserError, match="no results here"):
        Store(tmp_path / "none", create=False)


def test_newer_schema_refused(tmp_path):
    Store(tmp_path).close()
    db = sqlite3.connect(tmp_path / "results.sqlite")
    db.execute("UPDATE schema_version SET version = ?", (SCHEMA_VERSION + 1,))
    db.commit()
    db.close()
    with pytest.raises(UserError, match="newer jitterlab"):
        Store(tmp_path)


def test_garbage_file_refused(tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(UserError, match="not a jitterlab results database"):
        Store(tmp_path)


def test_directions_attachments_and_unavailable_status(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "", {})
    run = record(cid)
    run = RunRecord(
        **{
            **run.__dict__,
            "status": "unavailable",
            "error": "no systemd",
            "metrics": {("", "events_per_s"): Metric("events_per_s", 5.0, "1/s", "", "higher"),
                        ("", "peak_latency_ns"): Metric("peak_latency_ns", 9.0, "ns", "", "lower", "worst",
                                                        "ratio", "max")},
            "attachments": store.write_attachments(run.id, {"tool output.txt": b"garbled\n"}),
        }
    )
    store.commit_run(run)
    [back] = store.runs(cid)
    assert back.status == "unavailable"
    assert back.metrics[("", "events_per_s")].direction == "higher"
    # how a metric is read is stored with it, whatever its name says
    assert back.metrics[("", "peak_latency_ns")] == Metric("peak_latency_ns", 9.0, "ns", "", "lower", "worst",
                                                          "ratio", "max")
    assert back.attachments == {"tool output.txt": "attachments/r1/tool_output.txt"}
    assert (tmp_path / back.attachments["tool output.txt"]).read_bytes() == b"garbled\n"


def test_schema_1_store_is_migrated_in_place(tmp_path):
    """A store written by schema 1 (no directions, no attachments, no 'unavailable') opens,
    keeps its runs and metrics, and accepts the new things."""
    db = tmp_path / "results.sqlite"
    con = sqlite3.connect(db)
    v1 = """
    CREATE TABLE schema_version (version INTEGER NOT NULL);
    CREATE TABLE campaigns (id INTEGER PRIMARY KEY, name TEXT NOT NULL, fingerprint TEXT NOT NULL,
        source_path TEXT NOT NULL, source TEXT NOT NULL, labels_json TEXT NOT NULL,
        created_ns INTEGER NOT NULL, jitterlab_version TEXT NOT NULL);
    CREATE TABLE sysinfo (id INTEGER PRIMARY KEY, campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
        target TEXT NOT NULL, taken_ns INTEGER NOT NULL, json TEXT NOT NULL);
    CREATE TABLE runs (id TEXT PRIMARY KEY, campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
        cell_key TEXT NOT NULL, repetition INTEGER NOT NULL, target TEXT NOT NULL, benchmark TEXT NOT NULL,
        impl TEXT NOT NULL, load TEXT NOT NULL, period_ns INTEGER NOT NULL, probe TEXT NOT NULL,
        pin TEXT NOT NULL, params_json TEXT NOT NULL, labels_json TEXT NOT NULL,
        status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unmeasurable')),
        error TEXT, started_ns INTEGER NOT NULL, wall_s REAL NOT NULL, raw_path TEXT, raw_sha256 TEXT,
        sysinfo_id INTEGER REFERENCES sysinfo(id), UNIQUE (campaign_id, cell_key, repetition));
    CREATE TABLE metrics (run_id TEXT NOT NULL REFERENCES runs(id), probe TEXT NOT NULL,
        name TEXT NOT NULL, value REAL NOT NULL, unit TEXT NOT NULL, PRIMARY KEY (run_id, probe, name));
    CREATE TABLE warnings (id INTEGER PRIMARY KEY, campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
        run_id TEXT REFERENCES runs(id), target TEXT, message TEXT NOT NULL, remedy TEXT NOT NULL);
    CREATE INDEX runs_campaign ON runs(campaign_id);
    INSERT INTO schema_version VALUES (1);
    INSERT INTO campaigns VALUES (1, 'old', 'fp', 'c.toml', '', '{}', 1, '0.1');
    INSERT INTO runs VALUES ('old1', 1, 'k', 0, 'local', 'squarewave', 'c-fifo', 'idle', 1000000,
        'vpin', 'vpin', '{}', '{}', 'ok', NULL, 1, 0.5, NULL, NULL, NULL);
    INSERT INTO runs VALUES ('old2', 1, 'k2', 0, 'local', 'udp-echo', '', 'idle', 0, '', '',
        '{"cell": {"size": 64, "policy": "fifo"}, "duration_ns": 5}', '{}', 'ok', NULL, 2, 0.5, NULL, NULL,
        NULL);
    INSERT INTO metrics VALUES ('old1', 'vpin', 'max_rel_period_error', 0.02, 'ratio');
    INSERT INTO warnings VALUES (1, 1, 'old1', 'local', 'w', 'r');
    """
    con.executescript(v1)
    con.close()
    store = Store(tmp_path)
    old, old2 = store.runs(1)
    assert old.metric("max_rel_period_error", "vpin") == 0.02
    # schema 3: the cell is a record of its own, built from the old columns or params_json["cell"]
    assert old.cell == squarewave_cell("c-fifo", 1_000_000, target="local") and old.cell_key == "k"
    assert old2.cell == cell("udp-echo", {"size": 64, "policy": "fifo"}, target="local")
    assert old2.settings.as_json() == {"duration_ns": 5}
    assert old.metrics[("vpin", "max_rel_period_error")].direction == ""  # left to the name table
    # schema 4: a metric keeps how it is read; one stored before declares nothing (read by its name)
    stored = old.metrics[("vpin", "max_rel_period_error")]
    assert (stored.summary, stored.scale, stored.stat) == ("", "", "")
    assert store.warnings(1, "old1")[0][1].message == "w"
    new = RunRecord(**{**record(1, "new1", rep=1).__dict__, "status": "unavailable", "metrics": {}})
    store.commit_run(new)
    store.close()
    con = sqlite3.connect(db)
    assert con.execute("SELECT version FROM schema_version").fetchone()[0] == SCHEMA_VERSION == 4
    assert con.execute("PRAGMA foreign_key_check").fetchall() == []
    # squarewave's keys stay readable as columns for SQL written against older schemas
    assert con.execute("SELECT impl, period_ns, probe, pin FROM runs WHERE id = 'old1'").fetchone() == (
        "c-fifo", 1_000_000, "vpin", "vpin")
    assert con.execute("SELECT impl, period_ns FROM runs WHERE id = 'old2'").fetchone() == ("", 0)
    con.close()


def test_the_postgresql_schema_is_the_sqlite_schema_translated():
    """One schema, in schema.py: what PostgreSQL gets has nothing of SQLite's dialect left and
    the same tables, columns and version row."""
    assert len(postgres.SCHEMA) == len(schema.SCHEMA)
    for pg, lite in zip(postgres.SCHEMA, schema.SCHEMA, strict=True):
        assert not re.search(r"json_extract|VIRTUAL|\bREAL\b|INTEGER PRIMARY KEY|_ns INTEGER", pg), pg
        columns = [line.split()[0] for line in lite.splitlines()[1:] if line.startswith("    ")]
        assert [line.split()[0] for line in pg.splitlines()[1:] if line.startswith("    ")] == columns
    assert postgres.SCHEMA[-1] == f"INSERT INTO schema_version VALUES ({schema.SCHEMA_VERSION})"
