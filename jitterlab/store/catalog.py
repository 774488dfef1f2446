"""The catalog of a store: campaigns, runs, metrics, sysinfo and warnings, written once against the
Backend interface (backend.py), whatever database holds it. One transaction per run.

What it reads is checked as it is read: a table or column gone (at open), a JSON column that does not
read, a metric that is no number are a damaged store (damage.py: one line, exit 2), never a traceback
in whichever command happened to read it."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import threading
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path

from jitterlab import __version__
from jitterlab.model.campaigns import CampaignEntry, StoredCampaign
from jitterlab.model.errors import RuntimeProblem, UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import RunRecord, Warning_
from jitterlab.model.series import Series
from jitterlab.store.backends import open_backend
from jitterlab.store.damage import RowDamaged, StoreDamaged, whole
from jitterlab.store.files import RunFiles
from jitterlab.store.locks import CampaignLock
from jitterlab.store.rows import read_labels, read_metric, read_run, read_sysinfo
from jitterlab.store.schema import RUN_COLUMNS, SCHEMA_VERSION, columns

__all__ = ["SCHEMA_VERSION", "RunExists", "RunRecord", "Store"]


class RunExists(RuntimeProblem):
    """The run a commit would add is there already (another jitterlab committed it meanwhile)."""


class Store:
    """A store opened from its spec (a results directory, a database URL: see backends.py). Safe to
    share between threads and processes.

    `create=False` opens an existing store read-only: nothing is written (show, report, export,
    compare work in a directory the user may only read, and an empty file gets no schema)."""

    def __init__(self, spec: Path | str, *, create: bool = True) -> None:
        self._lock = threading.RLock()
        self._locks: list[CampaignLock] = []
        self.read_only = not create
        self._db = open_backend(str(spec), create=create)
        self.where = self._db.where
        self.root = self._db.files  # raw/ and attachments/ live here; rows hold paths relative to it
        self.raw_dir = self.root / "raw"
        self.content_addressed = self._db.content_addressed
        self._files = RunFiles(self.root, self.content_addressed)
        try:
            self._check_tables()
        except BaseException:
            self._db.close()
            raise

    def _check_tables(self) -> None:
        """Every table and column of the schema is there (a store damaged by hand, or by a tool that
        dropped one, is refused when opened rather than in whichever query first needs it)."""
        for table, expected in columns().items():
            with self._read():
                found = {d[0] for d in self._db.execute(f"SELECT * FROM {table} LIMIT 0").description}
            if lacking := [c for c in expected if c not in found]:
                raise self._damaged(f"its table {table} lacks the column{'s' * (len(lacking) > 1)} "
                                    f"{', '.join(lacking)}")

    def _damaged(self, what: str = "", *, row: RowDamaged | None = None) -> StoreDamaged:
        return StoreDamaged(self.where, what, row=row)

    @contextlib.contextmanager
    def _read(self) -> Iterator[None]:
        """Hold the lock; an error of the database that says the store is damaged (the backend
        knows which) becomes StoreDamaged, and a row that does not read too."""
        with self._lock:
            try:
                yield
            except RowDamaged as exc:
                raise self._damaged(row=exc) from None
            except StoreDamaged:
                raise
            except Exception as exc:
                what = self._db.damage(exc)
                if what is None:
                    raise
                raise self._damaged(what) from None

    @contextlib.contextmanager
    def _tx(self) -> Iterator[None]:
        with self._read(), self._db.transaction():
            yield

    def close(self) -> None:
        with self._lock:
            self._db.close()
            for lock in self._locks:
                lock.release()
            self._locks.clear()

    def lock_campaign(self, campaign_id: int, name: str) -> None:
        """Hold the campaign's lock until close(): a second jitterlab measuring it is refused
        (CampaignBusy, naming who measures it)."""
        with self._lock:
            if any(lock.campaign_id == campaign_id for lock in self._locks):
                return  # ours already
            self._locks.append(self._db.lock_campaign(campaign_id, name))

    # --- campaigns -------------------------------------------------------------------------

    def new_campaign(self, name: str, fingerprint: str, source_path: str, source: str, labels: dict,
                     created_ns: int | None = None, version: str = __version__) -> int:
        with self._tx():
            return self._insert_campaign(name, fingerprint, source_path, source, labels, created_ns, version)

    def _insert_campaign(self, name: str, fingerprint: str, source_path: str, source: str,
                         labels: dict, created_ns: int | None = None, version: str = __version__) -> int:
        return self._db.insert(
            "INSERT INTO campaigns (name, fingerprint, source_path, source, labels_json, "
            "created_ns, jitterlab_version) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (name, fingerprint, source_path, source, json.dumps(labels, sort_keys=True),
             created_ns if created_ns is not None else time.time_ns(), version),
        )

    def campaign_named(self, name: str, fingerprint: str, source_path: str, source: str,
                       labels: dict) -> int:
        """The latest campaign of that name, created when there is none, in one transaction (two
        imports at once into a new store share one campaign)."""
        with self._tx():
            row = self._db.execute("SELECT id FROM campaigns WHERE name = ? ORDER BY id DESC LIMIT 1",
                                   (name,)).fetchone()
            if row is not None:
                return int(row[0])
            return self._insert_campaign(name, fingerprint, source_path, source, labels)

    def campaign(self, campaign_id: int) -> StoredCampaign:
        """Every field of one campaign."""
        keys = ("id", "name", "fingerprint", "source_path", "source", "labels_json", "created_ns",
                "jitterlab_version")
        with self._read():
            row = self._db.execute(f"SELECT {', '.join(keys)} FROM campaigns WHERE id = ?",
                                   (campaign_id,)).fetchone()
            if row is None:
                raise UserError(f"{self.where}: no campaign #{campaign_id}")
            found = dict(zip(keys, row, strict=True))
            found["labels"] = read_labels(found.pop("labels_json"), f"campaign #{campaign_id}")
            whole(found["created_ns"], f"campaign #{campaign_id}", "created_ns")
        return StoredCampaign(**found)

    def find_campaign(self, name: str, fingerprint: str, created_ns: int) -> int | None:
        """The id of the campaign that is this one (pushed from another store), if any."""
        with self._read():
            row = self._db.execute(
                "SELECT id FROM campaigns WHERE name = ? AND fingerprint = ? AND created_ns = ?",
                (name, fingerprint, created_ns)).fetchone()
        return int(row[0]) if row else None

    def latest_campaign(self, name: str | None = None,
                        fingerprint: str | None = None) -> StoredCampaign | None:
        """The campaign created last (of this name; with this fingerprint: its settings and labels),
        None when there is none."""
        query = "SELECT id FROM campaigns"
        args: tuple = ()
        if name is not None:
            query += " WHERE name = ?"
            args = (name,)
            if fingerprint is not None:
                query += " AND fingerprint = ?"
                args = (name, fingerprint)
        with self._read():
            row = self._db.execute(query + " ORDER BY id DESC LIMIT 1", args).fetchone()
        return None if row is None else self.campaign(int(row[0]))

    def campaigns(self, damaged: dict[int, str] | None = None) -> list[CampaignEntry]:
        """Every campaign, oldest first. `damaged`: a campaign whose row does not read is left out
        and put there (id -> why) instead of refusing the store (push, check)."""
        found = []
        with self._read():
            rows = self._db.execute(
                "SELECT c.id, c.name, c.created_ns, COUNT(r.id), c.labels_json FROM campaigns c "
                "LEFT JOIN runs r ON r.campaign_id = c.id GROUP BY c.id ORDER BY c.id"
            ).fetchall()
            for r in rows:
                try:
                    labels = read_labels(r[4], f"campaign #{r[0]}")
                    whole(r[2], f"campaign #{r[0]}", "created_ns")
                except RowDamaged as exc:
                    if damaged is None:
                        raise
                    damaged[r[0]] = exc.detail
                    continue
                found.append(CampaignEntry(r[0], r[1], r[2], r[3], labels))
        return found

    def add_sysinfo(self, campaign_id: int, target: str, info: SystemFacts) -> int:
        with self._tx():
            return self._db.insert(
                "INSERT INTO sysinfo (campaign_id, target, taken_ns, json) VALUES (?, ?, ?, ?)",
                (campaign_id, target, time.time_ns(),
                 json.dumps(info.as_json(), sort_keys=True, default=str)),
            )

    def sysinfo(self, sysinfo_id: int) -> SystemFacts | None:
        """The facts of one snapshot, None when there is no such row."""
        with self._read():
            row = self._db.execute("SELECT json FROM sysinfo WHERE id = ?", (sysinfo_id,)).fetchone()
            return read_sysinfo(row[0], sysinfo_id) if row else None

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
        with self._read():
            rows = self._db.execute(query + " ORDER BY id", args).fetchall()
        return [(r[0], Warning_(r[1], r[2])) for r in rows]

    # --- runs ------------------------------------------------------------------------------

    def target_warnings(self, campaign_id: int) -> list[tuple[str | None, Warning_]]:
        """(target, warning) of the warnings that belong to no run (a target's, the campaign's)."""
        with self._read():
            rows = self._db.execute(
                "SELECT target, message, remedy FROM warnings WHERE campaign_id = ? AND run_id IS NULL "
                "ORDER BY id", (campaign_id,)).fetchall()
        return [(r[0], Warning_(r[1], r[2])) for r in rows]

    def committed(self, campaign_id: int) -> dict[tuple[str, int], str]:
        """(cell_key, repetition) -> status of every run already committed."""
        with self._read():
            rows = self._db.execute(
                "SELECT cell_key, repetition, status FROM runs WHERE campaign_id = ?", (campaign_id,)
            ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    def write_series(self, run_id: str, series: Mapping[str, Series]) -> tuple[str, str]:
        """Write a run's raw series durably before it is committed; (path relative to the
        store's root, sha256). A shared (PostgreSQL) store names the file by its hash."""
        return self._files.write_series(run_id, series)

    def adopt_raw(self, run_id: str, source: Path, sha256: str) -> str:
        """Copy a run's raw file from another store (its sha256 checked); the relative path."""
        return self._files.adopt_raw(run_id, source, sha256)

    def write_attachments(self, run_id: str, files: Mapping[str, bytes]) -> dict[str, str]:
        """Write a run's attachments durably under attachments/<run_id>/ before the run is
        committed; returns name -> path relative to the results directory."""
        return self._files.write_attachments(run_id, files)

    def read_series(self, run: RunRecord) -> dict[str, Series]:
        """The run's raw series ({} when it has none); UserError when its file is missing or is
        not the bytes the store recorded."""
        return self._files.read_series(run)

    def run_ids(self, campaign_id: int) -> dict[tuple[str, int], str]:
        """(cell_key, repetition) -> id of every run committed."""
        with self._read():
            rows = self._db.execute(
                "SELECT cell_key, repetition, id FROM runs WHERE campaign_id = ?", (campaign_id,)
            ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    def damaged(self, campaign_id: int) -> dict[tuple[str, int], str]:
        """(cell_key, repetition) -> why, of the runs whose raw file is missing or not the bytes
        the store recorded (its sha256)."""
        with self._read():
            rows = self._db.execute(
                "SELECT cell_key, repetition, raw_path, raw_sha256 FROM runs WHERE campaign_id = ? "
                "AND raw_path IS NOT NULL", (campaign_id,)).fetchall()
        found = {}
        for key, rep, raw_path, sha in rows:
            why = self._files.damage(raw_path, sha)
            if why is not None:
                found[(key, rep)] = why
        return found

    def file_damage(self, run: RunRecord) -> str | None:
        """Why the run's raw file or an attachment is not what the run recorded, or None."""
        if run.raw_path and (why := self._files.damage(run.raw_path, run.raw_sha256)):
            return why
        for path in run.attachments.values():
            if not (self.root / path).is_file():
                return f"{path} is missing"
        return None

    def commit_run(self, run: RunRecord, warnings: Sequence[Warning_] = (), *,
                   series: Mapping[str, Series] | None = None, files: Mapping[str, bytes] | None = None,
                   replaces: str | None = None, next_repetition: bool = False) -> RunRecord:
        """The one way a run enters the store (measured or imported): its raw `series` and
        attachment `files` (name -> bytes), when given, are written durably under their final
        names first and the run names them; then the run, its metrics, attachments and warnings
        are inserted in one transaction. When that fails, the files written here are removed (no
        row names them). Returns the run as stored.

        A run of the same cell and repetition is replaced only when it is the run `replaces` names
        (a retried failed or damaged run); any other is refused (RunExists): it was committed
        meanwhile by another jitterlab, and is kept. `next_repetition`: the run takes the next
        free repetition of its cell, counted inside the transaction (concurrent imports)."""
        written_raw, written_files = None, {}
        try:
            if series is not None:
                written_raw, sha = self._files.write_series(run.id, series)
                run = dataclasses.replace(run, raw_path=written_raw, raw_sha256=sha)
            if files:
                written_files = self._files.write_attachments(run.id, files)
                run = dataclasses.replace(run, attachments={**run.attachments, **written_files})
            return self._insert_run(run, warnings, replaces, next_repetition)
        except BaseException:
            self._files.discard(written_raw, written_files)
            raise

    def _insert_run(self, run: RunRecord, warnings: Sequence[Warning_], replaces: str | None,
                    next_repetition: bool) -> RunRecord:
        with self._tx():
            if next_repetition:
                row = self._db.execute(
                    "SELECT COALESCE(MAX(repetition) + 1, 0) FROM runs WHERE campaign_id = ? "
                    "AND cell_key = ?", (run.campaign_id, run.cell_key)).fetchone()
                run = dataclasses.replace(run, repetition=int(row[0]))
            existing = self._db.execute(
                "SELECT id FROM runs WHERE campaign_id = ? AND cell_key = ? AND repetition = ?",
                (run.campaign_id, run.cell_key, run.repetition),
            ).fetchone()
            if existing is not None and existing[0] != replaces:
                raise RunExists(
                    f"{self.where}: repetition {run.repetition + 1} of cell {run.cell_key!r} was "
                    f"committed meanwhile by another jitterlab (run {existing[0]}); it is kept, and "
                    f"run {run.id} is not stored"
                )
            if existing is not None:
                for table in ("metrics", "warnings", "attachments"):
                    self._db.execute(f"DELETE FROM {table} WHERE run_id = ?", (existing[0],))
                self._db.execute("DELETE FROM runs WHERE id = ?", (existing[0],))
            marks = ",".join("?" * len(RUN_COLUMNS))
            self._db.execute(
                f"INSERT INTO runs ({', '.join(RUN_COLUMNS)}) VALUES ({marks})",
                (
                    run.id,
                    run.campaign_id,
                    run.cell_key,
                    run.repetition,
                    run.target,
                    run.benchmark,
                    run.load,
                    json.dumps(dict(run.cell.params)),  # in the benchmark's key order
                    json.dumps(run.settings.as_json(), sort_keys=True),
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
                "INSERT INTO metrics (run_id, probe, name, value, unit, direction, summary, scale, stat) "
                "VALUES (?,?,?,?,?,?,?,?,?)",
                [(run.id, m.subject, m.name, m.value, m.unit, m.direction, m.summary, m.scale, m.stat)
                 for m in run.metrics.values()],
            )
            self._db.executemany(
                "INSERT INTO attachments (run_id, name, path, sha256, size_bytes) VALUES (?,?,?,?,?)",
                self._files.attachment_rows(run),
            )
            self._insert_warnings(run.campaign_id, run.id, run.target, warnings)
        return run

    def runs(self, campaign_id: int | None = None, run_id: str | None = None,
             damaged: dict[str, str] | None = None) -> list[RunRecord]:
        """The runs of a campaign, of an id's prefix, or all, in the order they started. `damaged`: a
        run whose row does not read is left out and put there (id -> why) instead of refusing the
        store (push, check)."""
        query = f"SELECT {', '.join(RUN_COLUMNS)} FROM runs"
        clauses, args = [], []
        if campaign_id is not None:
            clauses.append("campaign_id = ?")
            args.append(campaign_id)
        if run_id is not None:
            clauses.append("id LIKE ?")
            args.append(run_id + "%")
        if clauses:
            query += " WHERE " + " AND ".join(clauses)
        records = []
        with self._read():
            cur = self._db.execute(query + " ORDER BY started_ns, id", args)
            names = [d[0] for d in cur.description]
            rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
            metrics: dict[str, dict] = {r["id"]: {} for r in rows}
            attachments: dict[str, dict] = {r["id"]: {} for r in rows}
            bad: dict[str, RowDamaged] = {}  # run id -> why it does not read (its campaign, a metric)
            campaign_ids = {r[0] for r in self._db.execute("SELECT id FROM campaigns")} if rows else set()
            for r in rows:  # SQLite keeps a foreign key that it is not asked to check
                if r["campaign_id"] not in campaign_ids:
                    bad[r["id"]] = RowDamaged(f"run {r['id']}",
                                              f"campaign_id {r['campaign_id']!r:.40} names no campaign")
            if rows:
                marks = ",".join("?" * len(rows))
                ids = [r["id"] for r in rows]
                for run_id_, probe, name, value, unit, *reading in self._db.execute(
                    "SELECT run_id, probe, name, value, unit, direction, summary, scale, stat FROM metrics "
                    f"WHERE run_id IN ({marks})",
                    ids,
                ):
                    try:
                        metrics[run_id_][(probe, name)] = read_metric(run_id_, probe, name, value, unit,
                                                                      *reading)
                    except RowDamaged as exc:
                        bad.setdefault(run_id_, exc)
                for run_id_, name, path in self._db.execute(
                    f"SELECT run_id, name, path FROM attachments WHERE run_id IN ({marks}) ORDER BY name",
                    ids,
                ):
                    attachments[run_id_][name] = path
            for r in rows:
                try:
                    if r["id"] in bad:
                        raise bad[r["id"]]
                    records.append(read_run(r, metrics[r["id"]], attachments[r["id"]]))
                except RowDamaged as exc:
                    if damaged is None:
                        raise
                    damaged[r["id"]] = exc.detail
        return records

