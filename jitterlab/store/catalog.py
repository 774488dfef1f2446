"""results.sqlite: campaigns, runs, metrics, sysinfo and warnings. One transaction per run."""

from __future__ import annotations

import contextlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from jitterlab import __version__
from jitterlab.errors import UserError
from jitterlab.records import Metric, Warning_
from jitterlab.store.raw import sha256_file, write_atomic

SCHEMA_VERSION = 2

_SCHEMA = """
CREATE TABLE schema_version (version INTEGER NOT NULL);
CREATE TABLE campaigns (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    source_path TEXT NOT NULL,
    source TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    created_ns INTEGER NOT NULL,
    jitterlab_version TEXT NOT NULL
);
CREATE TABLE sysinfo (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    target TEXT NOT NULL,
    taken_ns INTEGER NOT NULL,
    json TEXT NOT NULL
);
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    cell_key TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    target TEXT NOT NULL,
    benchmark TEXT NOT NULL,
    impl TEXT NOT NULL,
    load TEXT NOT NULL,
    period_ns INTEGER NOT NULL,
    probe TEXT NOT NULL,
    pin TEXT NOT NULL,
    params_json TEXT NOT NULL,
    labels_json TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed', 'timeout', 'unmeasurable', 'unavailable')),
    error TEXT,
    started_ns INTEGER NOT NULL,
    wall_s REAL NOT NULL,
    raw_path TEXT,
    raw_sha256 TEXT,
    sysinfo_id INTEGER REFERENCES sysinfo(id),
    UNIQUE (campaign_id, cell_key, repetition)
);
CREATE TABLE metrics (
    run_id TEXT NOT NULL REFERENCES runs(id),
    probe TEXT NOT NULL,
    name TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (run_id, probe, name)
);
CREATE TABLE attachments (
    run_id TEXT NOT NULL REFERENCES runs(id),
    name TEXT NOT NULL,
    path TEXT NOT NULL,
    sha256 TEXT NOT NULL,
    size_bytes INTEGER NOT NULL,
    PRIMARY KEY (run_id, name)
);
CREATE TABLE warnings (
    id INTEGER PRIMARY KEY,
    campaign_id INTEGER NOT NULL REFERENCES campaigns(id),
    run_id TEXT REFERENCES runs(id),
    target TEXT,
    message TEXT NOT NULL,
    remedy TEXT NOT NULL
);
CREATE INDEX runs_campaign ON runs(campaign_id);
"""


@dataclass(frozen=True)
class RunRecord:
    """A run as stored. Metrics are keyed (probe, name)."""

    id: str
    campaign_id: int
    cell_key: str
    repetition: int
    target: str
    benchmark: str
    impl: str
    load: str
    period_ns: int
    probe: str
    pin: str
    params: dict
    labels: dict
    status: str
    error: str | None
    started_ns: int
    wall_s: float
    raw_path: str | None
    raw_sha256: str | None
    sysinfo_id: int | None
    metrics: dict[tuple[str, str], Metric]
    attachments: dict[str, str] = field(default_factory=dict)  # name -> path in the results dir

    def param(self, name: str, default: object = None) -> object:
        """A matrix parameter of the run's cell (e.g. "size_bytes" of a udp-echo run)."""
        return self.params.get("cell", {}).get(name, default)

    def metric(self, name: str, probe: str | None = None) -> float | None:
        """A metric of the run's own probe (or of `probe`), None when absent."""
        found = self.metrics.get((self.probe if probe is None else probe, name))
        return found.value if found else None


class Store:
    """A results directory: results.sqlite + raw/. Safe to share between threads."""

    def __init__(self, root: Path, *, create: bool = True) -> None:
        self.root = Path(root)
        self.raw_dir = self.root / "raw"
        db = self.root / "results.sqlite"
        if not db.exists() and not create:
            raise UserError(
                f"{db}: no results here; run a campaign first "
                "(jitterlab run CAMPAIGN --results DIR) or pass --results"
            )
        try:
            self.raw_dir.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(
                f"--results {self.root}: cannot create the results directory: "
                f"{exc.strerror}; choose a writable place"
            ) from None
        self._lock = threading.RLock()
        try:
            self._db = sqlite3.connect(db, check_same_thread=False, isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._migrate(db)
        except sqlite3.DatabaseError as exc:
            raise UserError(
                f"{db}: not a jitterlab results database ({exc}); move it away or pass another --results"
            ) from None

    def _migrate(self, db: Path) -> None:
        tables = {r[0] for r in self._db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables:
            with self._tx():
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._db.execute(statement)
                self._db.execute("INSERT INTO schema_version VALUES (?)", (SCHEMA_VERSION,))
            return
        if "schema_version" not in tables:
            raise UserError(f"{db}: not a jitterlab results database; pass another --results")
        version = self._db.execute("SELECT version FROM schema_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise UserError(
                f"{db}: written by a newer jitterlab (schema {version}, this one knows "
                f"{SCHEMA_VERSION}); upgrade jitterlab (pip install -U jitterlab)"
            )
        if version == 1:
            self._migrate_1_to_2()

    def _migrate_1_to_2(self) -> None:
        """Schema 2: run status 'unavailable', metric directions, attachments. Done in place, in
        one transaction; foreign keys are off while the runs table is rebuilt (SQLite's recipe)."""
        runs_ddl = _SCHEMA.split("CREATE TABLE runs", 1)[1].split(";", 1)[0]
        attachments_ddl = _SCHEMA.split("CREATE TABLE attachments", 1)[1].split(";", 1)[0]
        self._db.execute("PRAGMA foreign_keys=OFF")
        try:
            with self._tx():
                self._db.execute("CREATE TABLE runs_v2" + runs_ddl)
                self._db.execute("INSERT INTO runs_v2 SELECT * FROM runs")
                self._db.execute("DROP TABLE runs")
                self._db.execute("ALTER TABLE runs_v2 RENAME TO runs")
                self._db.execute("CREATE INDEX runs_campaign ON runs(campaign_id)")
                self._db.execute("ALTER TABLE metrics ADD COLUMN direction TEXT NOT NULL DEFAULT ''")
                self._db.execute("CREATE TABLE attachments" + attachments_ddl)
                self._db.execute("UPDATE schema_version SET version = 2")
        finally:
            self._db.execute("PRAGMA foreign_keys=ON")

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # --- campaigns -------------------------------------------------------------------------

    def new_campaign(self, name: str, fingerprint: str, source_path: str, source: str, labels: dict) -> int:
        with self._tx():
            cur = self._db.execute(
                "INSERT INTO campaigns (name, fingerprint, source_path, source, labels_json, "
                "created_ns, jitterlab_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    name,
                    fingerprint,
                    source_path,
                    source,
                    json.dumps(labels, sort_keys=True),
                    time.time_ns(),
                    __version__,
                ),
            )
            return int(cur.lastrowid)

    def latest_campaign(self, name: str | None = None) -> dict | None:
        query = "SELECT id, name, fingerprint, source_path, created_ns FROM campaigns"
        args: tuple = ()
        if name is not None:
            query += " WHERE name = ?"
            args = (name,)
        with self._lock:
            row = self._db.execute(query + " ORDER BY id DESC LIMIT 1", args).fetchone()
        if row is None:
            return None
        return dict(zip(("id", "name", "fingerprint", "source_path", "created_ns"), row, strict=True))

    def campaigns(self) -> list[dict]:
        with self._lock:
            rows = self._db.execute(
                "SELECT c.id, c.name, c.created_ns, COUNT(r.id), c.labels_json FROM campaigns c "
                "LEFT JOIN runs r ON r.campaign_id = c.id GROUP BY c.id ORDER BY c.id"
            ).fetchall()
        return [
            {"id": r[0], "name": r[1], "created_ns": r[2], "n_runs": r[3], "labels": json.loads(r[4])}
            for r in rows
        ]

    def add_sysinfo(self, campaign_id: int, target: str, info: dict) -> int:
        with self._tx():
            cur = self._db.execute(
                "INSERT INTO sysinfo (campaign_id, target, taken_ns, json) VALUES (?, ?, ?, ?)",
                (campaign_id, target, time.time_ns(), json.dumps(info, sort_keys=True, default=str)),
            )
            return int(cur.lastrowid)

    def sysinfo(self, sysinfo_id: int) -> dict:
        with self._lock:
            row = self._db.execute("SELECT json FROM sysinfo WHERE id = ?", (sysinfo_id,)).fetchone()
        return json.loads(row[0]) if row else {}

    def add_warnings(
        self, campaign_id: int, warnings: Iterable[Warning_], *, target: str | None = None
    ) -> None:
        with self._tx():
            self._insert_warnings(campaign_id, None, target, warnings)

    def _insert_warnings(
        self, campaign_id: int, run_id: str | None, target: str | None, warnings: Iterable[Warning_]
    ) -> None:
        self._db.executemany(
            "INSERT INTO warnings (campaign_id, run_id, target, message, remedy) VALUES (?,?,?,?,?)",
            [(campaign_id, run_id, target, w.message, w.remedy) for w in warnings],
        )

    def warnings(self, campaign_id: int, run_id: str | None = None) -> list[tuple[str | None, Warning_]]:
        query = "SELECT run_id, message, remedy FROM warnings WHERE campaign_id = ?"
        args: tuple = (campaign_id,)
        if run_id is not None:
            query += " AND run_id = ?"
            args += (run_id,)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY id", args).fetchall()
        return [(r[0], Warning_(r[1], r[2])) for r in rows]

    # --- runs ------------------------------------------------------------------------------

    def committed(self, campaign_id: int) -> dict[tuple[str, int], str]:
        """(cell_key, repetition) -> status of every run already committed."""
        with self._lock:
            rows = self._db.execute(
                "SELECT cell_key, repetition, status FROM runs WHERE campaign_id = ?", (campaign_id,)
            ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    def write_attachments(self, run_id: str, files: dict[str, bytes]) -> dict[str, str]:
        """Write a run's attachments durably under attachments/<run_id>/ before the run is
        committed; returns name -> path relative to the results directory."""
        paths = {}
        for name, content in files.items():
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "file"
            relative = f"attachments/{run_id}/{safe}"
            write_atomic(self.root / relative, content)
            paths[name] = relative
        return paths

    def commit_run(self, run: RunRecord, warnings: Sequence[Warning_] = ()) -> None:
        """Insert a run with its metrics, attachments and warnings in one transaction; the raw
        file and attachments are already durable under their final names."""
        with self._tx():
            for table in ("metrics", "warnings", "attachments"):
                self._db.execute(
                    f"DELETE FROM {table} WHERE run_id IN (SELECT id FROM runs WHERE campaign_id = ? "
                    "AND cell_key = ? AND repetition = ?)",
                    (run.campaign_id, run.cell_key, run.repetition),
                )
            self._db.execute(
                "DELETE FROM runs WHERE campaign_id = ? AND cell_key = ? AND repetition = ?",
                (run.campaign_id, run.cell_key, run.repetition),
            )
            self._db.execute(
                "INSERT INTO runs (id, campaign_id, cell_key, repetition, target, benchmark, impl, load,"
                " period_ns, probe, pin, params_json, labels_json, status, error, started_ns, wall_s,"
                " raw_path, raw_sha256, sysinfo_id) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                (
                    run.id,
                    run.campaign_id,
                    run.cell_key,
                    run.repetition,
                    run.target,
                    run.benchmark,
                    run.impl,
                    run.load,
                    run.period_ns,
                    run.probe,
                    run.pin,
                    json.dumps(run.params, sort_keys=True),
                    json.dumps(run.labels, sort_keys=True),
                    run.status,
                    run.error,
                    run.started_ns,
                    run.wall_s,
                    run.raw_path,
                    run.raw_sha256,
                    run.sysinfo_id,
                ),
            )
            self._db.executemany(
                "INSERT INTO metrics (run_id, probe, name, value, unit, direction) VALUES (?,?,?,?,?,?)",
                [(run.id, m.probe, m.name, m.value, m.unit, m.direction) for m in run.metrics.values()],
            )
            self._db.executemany(
                "INSERT INTO attachments (run_id, name, path, sha256, size_bytes) VALUES (?,?,?,?,?)",
                [
                    (run.id, name, path, sha256_file(self.root / path), (self.root / path).stat().st_size)
                    for name, path in run.attachments.items()
                ],
            )
            self._insert_warnings(run.campaign_id, run.id, run.target, warnings)

    def runs(self, campaign_id: int | None = None, run_id: str | None = None) -> list[RunRecord]:
        query = "SELECT * FROM runs"
        clauses, args = [], []
        if campaign_id is not None:
            clauses.append("campaign_id = ?")
            args.append(campaign_id)
        if run_id is not None:
            clauses.append("id LIKE ?")
            args.append(run_id + "%")
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        with self._lock:
            cur = self._db.execute(query + " ORDER BY started_ns, id", args)
            columns = [d[0] for d in cur.description]
            rows = [dict(zip(columns, r, strict=True)) for r in cur.fetchall()]
            metrics: dict[str, dict] = {r["id"]: {} for r in rows}
            attachments: dict[str, dict] = {r["id"]: {} for r in rows}
            if rows:
                marks = ",".join("?" * len(rows))
                ids = [r["id"] for r in rows]
                for run_id_, probe, name, value, unit, way in self._db.execute(
                    "SELECT run_id, probe, name, value, unit, direction FROM metrics "
                    f"WHERE run_id IN ({marks})",
                    ids,
                ):
                    metrics[run_id_][(probe, name)] = Metric(name, value, unit, probe, way)
                for run_id_, name, path in self._db.execute(
                    f"SELECT run_id, name, path FROM attachments WHERE run_id IN ({marks}) ORDER BY name",
                    ids,
                ):
                    attachments[run_id_][name] = path
        records = []
        for r in rows:
            r["params"] = json.loads(r.pop("params_json"))
            r["labels"] = json.loads(r.pop("labels_json"))
            records.append(RunRecord(**r, metrics=metrics[r["id"]], attachments=attachments[r["id"]]))
        return records
