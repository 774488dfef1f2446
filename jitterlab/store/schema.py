"""The catalog's schema: the current tables, written once in SQLite's spelling (a backend translates
them to its dialect), their version, and the refusal of a store written by a newer jitterlab. The
steps that bring an older store up to date are each backend's own (sqlite_migrations.py)."""

from __future__ import annotations

import functools
import sqlite3

from jitterlab.model.errors import UserError, shown
from jitterlab.store.damage import StoreDamaged

SCHEMA_VERSION = 4

RUNS = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    cell_key TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    target TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    load TEXT NOT NULL,
    cell_json TEXT NOT NULL,
    params_json TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unmeasurable', 'unavailable')),
    error TEXT,
    started_ns INTEGER NOT NULL,
    wall_s REAL NOT NULL,
    raw_path TEXT,
    raw_sha256 TEXT,
    sysinfo_id INTEGER REFERENCES sysinfo(id),
    impl TEXT GENERATED ALWAYS AS (coalesce(json_extract(cell_json, '$.impl'), '')) VIRTUAL,
    period_ns INTEGER GENERATED ALWAYS AS (coalesce(json_extract(cell_json, '$.period'), 0)) VIRTUAL,
    probe TEXT GENERATED ALWAYS AS (coalesce(json_extract(cell_json, '$.probe'), '')) VIRTUAL,
    pin TEXT GENERATED ALWAYS AS (coalesce(json_extract(cell_json, '$.pin'), '')) VIRTUAL,
    UNIQUE (campaign_id, cell_key, repetition)
)"""
# squarewave's keys stay readable as columns (impl, period_ns, probe, pin) for SQL written against
# schemas 1-2: generated from the cell, never written
RUN_COLUMNS = ("id", "campaign_id", "cell_key", "repetition", "target", "benchmark", "load", "cell_json",
               "params_json", "labels_json", "status", "error", "started_ns", "wall_s", "raw_path",
               "raw_sha256", "sysinfo_id")

# how a metric is read, beside its direction (schema 4; model.reading)
METRIC_READING = ("summary", "scale", "stat")

ATTACHMENTS = """
CREATE TABLE attachments (
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
)"""

SCHEMA = [
    "CREATE TABLE schema_version (version INTEGER NOT NULL)",
    """CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    source_path TEXT NOT NULL,
    source TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    created_ns INTEGER NOT NULL,
    jitterlab_version TEXT NOT NULL
)""",
    """CREATE TABLE sysinfo (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    target TEXT NOT NULL,
    taken_ns INTEGER NOT NULL,
    json TEXT NOT NULL
)""",
    RUNS,
    """CREATE TABLE metrics (
    run_id TEXT NOT NULL REFERENCES runs(id),
    probe TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL DEFAULT '',
    summary TEXT NOT NULL DEFAULT '',
    scale TEXT NOT NULL DEFAULT '',
    stat TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, probe, name)
)""",
    ATTACHMENTS,
    """CREATE TABLE warnings (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    run_id TEXT REFERENCES runs(id),
    target TEXT,
    message TEXT NOT NULL,
    remedy TEXT NOT NULL
)""",
    "CREATE INDEX runs_campaign ON runs(campaign_id)",
    f"INSERT INTO schema_version VALUES ({SCHEMA_VERSION})",
]


def schema_version(rows: list, spec: str, where: str) -> int:
    """The version in the rows of the schema_version table: one whole number, or the store is damaged."""
    if len(rows) != 1:
        raise StoreDamaged(spec, f"its table schema_version holds {len(rows)} rows, not 1", where=where)
    version = rows[0][0]
    if isinstance(version, bool) or not isinstance(version, int):
        raise StoreDamaged(spec, f"its schema version is {shown(version, 40)}, not a whole number",
                           where=where)
    return version


def refuse_newer(version: int, where: object) -> None:
    """A store written by a newer jitterlab is not touched: its tables may mean something else."""
    if version > SCHEMA_VERSION:
        raise UserError(f"{where}: written by a newer jitterlab (schema {version}, this one knows "
                        f"{SCHEMA_VERSION}); upgrade jitterlab (pip install -U jitterlab)")


@functools.cache
def columns() -> dict[str, tuple[str, ...]]:
    """table -> its stored columns, as SCHEMA makes them (read back from SQLite, never listed twice)."""
    db = sqlite3.connect(":memory:")
    try:
        for statement in SCHEMA:
            db.execute(statement)
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {t: tuple(r[1] for r in db.execute(f"PRAGMA table_info({t})")) for t in tables}
    finally:
        db.close()
