"""The SQLite catalog: whole-or-nothing commits, resume bookkeeping, schema versioning."""

from __future__ import annotations

import sqlite3

import pytest

from jitterlab.errors import UserError
from jitterlab.records import Metric, Warning_
from jitterlab.store.catalog import SCHEMA_VERSION, RunRecord, Store


def record(campaign_id: int, run_id: str = "r1", rep: int = 0, status: str = "ok") -> RunRecord:
    metrics = {
        ("vpin", "max_rel_period_error"): Metric("max_rel_period_error", 0.02, "ratio", "vpin"),
        ("self", "max_rel_period_error"): Metric("max_rel_period_error", 0.01, "ratio", "self"),
    }
    return RunRecord(
        id=run_id,
        campaign_id=campaign_id,
        cell_key="k",
        repetition=rep,
        target="local",
        benchmark="squarewave",
        impl="c-fifo",
        load="idle",
        period_ns=1_000_000,
        probe="vpin",
        pin="vpin",
        params={"duration_ns": 1},
        labels={"image": "1.10"},
        status=status,
        error=None if status == "ok" else "why",
        started_ns=1,
        wall_s=0.5,
        raw_path=None,
        raw_sha256=None,
        sysinfo_id=None,
        metrics=metrics if status == "ok" else {},
    )


def test_commit_and_read_back(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {"image": "1.10"})
    store.commit_run(record(cid), [Warning_("blind 3%", "isolate a CPU")])
    [run] = store.runs(cid)
    assert run.metric("max_rel_period_error") == 0.02
    assert run.metric("max_rel_period_error", probe="self") == 0.01
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


def test_recommit_replaces_the_same_repetition(tmp_path):
    store = Store(tmp_path)
    cid = store.new_campaign("c", "fp", "c.toml", "src", {})
    store.commit_run(record(cid, "r1", status="failed"))
    store.commit_run(record(cid, "r2"))
    assert [r.id for r in store.runs(cid)] == ["r2"]


def test_latest_campaign_by_name(tmp_path):
    store = Store(tmp_path)
    first = store.new_campaign("a", "fp", "a.toml", "", {})
    store.new_campaign("b", "fp", "b.toml", "", {})
    assert store.latest_campaign("a")["id"] == first
    assert store.latest_campaign()["name"] == "b"
    assert store.latest_campaign("zzz") is None


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
