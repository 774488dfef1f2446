"""The steps that bring a results.sqlite written by an older jitterlab up to date, in place: each
runs in one transaction, with foreign keys off while tables are rebuilt (SQLite's recipe)."""

from __future__ import annotations

import json
import sqlite3

from jitterlab.store.schema import ATTACHMENTS, METRIC_READING, RUN_COLUMNS, RUNS

# schema 2's runs table (history: what the 1 -> 2 step creates)
_RUNS_V2 = """
CREATE TABLE runs_v2 (
    id TEXT PRIMARY KEY, campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    cell_key TEXT NOT NULL, repetition INTEGER NOT NULL, target TEXT NOT NULL, benchmark TEXT NOT NULL,
    impl TEXT NOT NULL, load TEXT NOT NULL, period_ns INTEGER NOT NULL, probe TEXT NOT NULL,
    pin TEXT NOT NULL, params_json TEXT NOT NULL, labels_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unmeasurable', 'unavailable')),
    error TEXT, started_ns INTEGER NOT NULL, wall_s REAL NOT NULL, raw_path TEXT, raw_sha256 TEXT,
    sysinfo_id INTEGER REFERENCES sysinfo(id), UNIQUE (campaign_id, cell_key, repetition)
)"""


def migrate_1_to_2(db: sqlite3.Connection) -> None:
    """Schema 2: run status 'unavailable', metric directions, attachments."""
    db.execute(_RUNS_V2)
    db.execute("INSERT INTO runs_v2 SELECT * FROM runs")
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_v2 RENAME TO runs")
    db.execute("CREATE INDEX runs_campaign ON runs(campaign_id)")
    db.execute("ALTER TABLE metrics ADD COLUMN direction TEXT NOT NULL DEFAULT ''")
    db.execute(ATTACHMENTS)


def migrate_2_to_3(db: sqlite3.Connection) -> None:
    """Schema 3: a run holds its cell (cell_json, in the benchmark's key order); squarewave's
    impl/period_ns/probe/pin become generated columns; params_json keeps the run's settings.
    Runs of schema 1 (and imports) had no cell in params_json: it is built from those columns."""
    old = db.execute(
        "SELECT id, campaign_id, cell_key, repetition, target, benchmark, load, impl, period_ns, probe, "
        "pin, params_json, labels_json, status, error, started_ns, wall_s, raw_path, raw_sha256, "
        "sysinfo_id FROM runs").fetchall()
    db.execute(RUNS.replace("CREATE TABLE runs", "CREATE TABLE runs_v3"))
    rows = []
    for (run_id, campaign_id, cell_key, rep, target, benchmark, load, impl, period_ns, probe, pin,
         params_json, *rest) in old:
        params = json.loads(params_json)
        cell = params.pop("cell", None)
        if cell is None:
            cell = ({"impl": impl, "period": period_ns, "probe": probe, "pin": pin}
                    if benchmark == "squarewave" else {})
        rows.append((run_id, campaign_id, cell_key, rep, target, benchmark, load, json.dumps(cell),
                     json.dumps(params, sort_keys=True), *rest))
    marks = ",".join("?" * len(RUN_COLUMNS))
    db.executemany(f"INSERT INTO runs_v3 ({', '.join(RUN_COLUMNS)}) VALUES ({marks})", rows)
    db.execute("DROP TABLE runs")
    db.execute("ALTER TABLE runs_v3 RENAME TO runs")
    db.execute("CREATE INDEX runs_campaign ON runs(campaign_id)")


def migrate_3_to_4(db: sqlite3.Connection) -> None:
    """Schema 4: a metric keeps how it is read (model.reading): summary, scale, stat ('' for the
    metrics stored before: analysis.reading reads those by name, as before)."""
    for column in METRIC_READING:
        db.execute(f"ALTER TABLE metrics ADD COLUMN {column} TEXT NOT NULL DEFAULT ''")


MIGRATIONS = {1: migrate_1_to_2, 2: migrate_2_to_3, 3: migrate_3_to_4}  # version -> the step to version + 1
