"""The SQLite backend: a results directory holding results.sqlite (stdlib sqlite3, WAL) and the
run files beside it (raw/<run id>.parquet, attachments/<run id>/, locks/).

Opening for writing creates or migrates the schema, each step in one transaction, so that two
processes opening a new store at once both succeed; opening read-only writes nothing, not even to
an empty file, and works in a directory the user may only read."""

from __future__ import annotations

import contextlib
import os
import random
import re
import sqlite3
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path

from jitterlab.model.errors import RuntimeProblem, UserError, shown
from jitterlab.store.backend import Backend
from jitterlab.store.damage import StoreDamaged
from jitterlab.store.schema import SCHEMA, SCHEMA_VERSION, refuse_newer, schema_version
from jitterlab.store.sqlite_migrations import MIGRATIONS

DB_NAME = "results.sqlite"
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
PATH_MAX = 4096  # Linux: a whole path; NAME_MAX: one component
NAME_MAX = 255


class SqliteBackend(Backend):
    """A results directory: results.sqlite + raw/ + attachments/."""

    name = "sqlite"
    form = "a directory"
    content_addressed = False  # one writer directory: raw/<run id>.parquet

    def __init__(self, db: sqlite3.Connection, root: Path) -> None:
        self._db = db
        self.files = root
        self.where = str(root)

    @classmethod
    def claims(cls, text: str) -> bool:
        return not _URL.match(text)  # every path; a URL is some other backend's

    @classmethod
    def check_spec(cls, text: str) -> str:
        """A directory path that the system can take (the checks of every path users type)."""
        if not text or "\0" in text:
            raise UserError("--results: give a path")
        try:
            size = len(os.fsencode(text))
        except UnicodeEncodeError:
            raise UserError(f"--results: cannot use the path {shown(text)}") from None
        if size > PATH_MAX or any(len(os.fsencode(part)) > NAME_MAX for part in text.split("/")):
            raise UserError(f"--results: path too long ({size} bytes; at most {PATH_MAX}, {NAME_MAX} per "
                            f"name): {shown(text)}")
        return str(Path(text))

    @classmethod
    def exists(cls, spec: str) -> bool:
        return (Path(spec) / DB_NAME).is_file()

    @classmethod
    def open(cls, spec: str, *, create: bool) -> SqliteBackend:
        root = Path(spec)
        db = root / DB_NAME
        if not create:
            if not db.is_file():
                raise UserError(f"{db}: no results here; run a campaign first "
                                "(jitterlab run CAMPAIGN --results DIR) or pass --results")
            return cls(open_read_only(db), root)
        try:
            (root / "raw").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UserError(f"--results {root}: cannot create the results directory: {exc.strerror}; "
                            "choose a writable place") from None
        return cls(open_for_writing(db), root)

    def execute(self, sql: str, args: Sequence = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, args)

    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None:
        self._db.executemany(sql, rows)

    def insert(self, sql: str, args: Sequence) -> int:
        return int(self._db.execute(sql, args).lastrowid)

    def transaction(self) -> contextlib.AbstractContextManager[None]:
        return transaction(self._db)

    def close(self) -> None:
        self._db.close()

    def damage(self, exc: Exception) -> str | None:
        return damage(exc) if isinstance(exc, sqlite3.DatabaseError) else None


def damage(exc: sqlite3.DatabaseError) -> str | None:
    """What a sqlite3 error says is damaged in a results database, if anything."""
    text = str(exc)
    if found := re.match(r"no such table: (?:main\.)?(\S+)", text):
        return f"its table {found[1]} is missing"
    if found := re.match(r"no such column: (\S+)", text):
        return f"a table lacks its column {found[1]}"
    if "malformed" in text or "file is not a database" in text:
        return f"its database file does not read ({text})"
    return None


# how long a writer waits for another one's transaction (a run's commit takes milliseconds; a
# migration of a large store longer)
BUSY_TIMEOUT_S = 120.0


@contextlib.contextmanager
def transaction(db: sqlite3.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE ... COMMIT: the write lock is taken first, so what is read inside holds."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _refusal(db_path: Path, exc: sqlite3.Error) -> UserError:
    """What to tell the user about an error opening the database: only a file that is not SQLite
    at all is "not a results database"; a damaged, busy or unreadable one is said to be so."""
    text = str(exc)
    if "file is not a database" in text:
        return UserError(f"{db_path}: not a jitterlab results database ({text}); move it away or "
                         "pass another --results")
    if what := damage(exc):  # SQLite cut short or overwritten in part, a table gone (while migrating)
        return StoreDamaged(str(db_path.parent), what, where=str(db_path))
    if "locked" in text or "busy" in text:
        return RuntimeProblem(f"{db_path}: another process keeps the database locked ({text}); "
                              "try again when it is done")
    return UserError(f"{db_path}: cannot open the results database ({text}); check its permissions, "
                     "or pass another --results")


def open_for_writing(db_path: Path) -> sqlite3.Connection:
    deadline = time.monotonic() + BUSY_TIMEOUT_S
    while True:
        db = None
        try:
            db = sqlite3.connect(db_path, check_same_thread=False, isolation_level=None,
                                 timeout=BUSY_TIMEOUT_S)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")
            db.execute("PRAGMA foreign_keys=ON")
            _create_or_migrate(db, db_path)
            return db
        except sqlite3.Error as exc:
            if db is not None:
                db.close()
            # switching a new file to WAL, or WAL recovery, answers "locked" without waiting for
            # the other process: wait a moment and open again
            if "locked" not in str(exc) or time.monotonic() > deadline:
                raise _refusal(db_path, exc) from None
            time.sleep(random.uniform(0.005, 0.05))
        except BaseException:
            if db is not None:
                db.close()
            raise


def open_read_only(db_path: Path) -> sqlite3.Connection:
    """A connection that cannot write. A store of an older schema is migrated first when the user
    may write it, and refused with how to migrate it when not."""
    uri = f"file:{urllib.parse.quote(str(db_path.absolute()))}?mode=ro"
    try:
        db = _query_ready(sqlite3.connect(uri, uri=True, check_same_thread=False, isolation_level=None,
                                          timeout=BUSY_TIMEOUT_S))
    except sqlite3.OperationalError:
        # WAL needs its -shm index file; where it cannot be created (a directory we may only read,
        # and no writer has it open), read the file as it is
        try:
            db = _query_ready(sqlite3.connect(uri + "&immutable=1", uri=True, check_same_thread=False,
                                              isolation_level=None))
        except sqlite3.Error as exc:
            raise _refusal(db_path, exc) from None
    except sqlite3.Error as exc:
        raise _refusal(db_path, exc) from None
    version = _version(db, db_path)
    if version is None:
        db.close()
        raise UserError(f"{db_path}: empty, no results yet; run a campaign into it (jitterlab run "
                        f"CAMPAIGN --results {db_path.parent}) or pass another --results")
    if version < SCHEMA_VERSION:
        db.close()
        if not os.access(db_path, os.W_OK) or not os.access(db_path.parent, os.W_OK):
            raise UserError(f"{db_path}: written by an older jitterlab (schema {version}); it is migrated "
                            "in place by anyone who may write it (e.g. its owner running jitterlab show "
                            "there), or copy the directory and run jitterlab show on the copy")
        open_for_writing(db_path).close()
        return open_read_only(db_path)
    return db


def _query_ready(db: sqlite3.Connection) -> sqlite3.Connection:
    try:
        db.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except BaseException:
        db.close()
        raise
    return db


def _version(db: sqlite3.Connection, db_path: Path) -> int | None:
    """The schema version, None for an empty database; refuses a file of something else and a
    newer schema."""
    tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables:
        return None
    if "schema_version" not in tables:
        if {"campaigns", "runs"} <= tables:
            raise StoreDamaged(str(db_path.parent), "its table schema_version is missing", where=str(db_path))
        raise UserError(f"{db_path}: not a jitterlab results database (no schema_version table); "
                        "pass another --results")
    version = schema_version(db.execute("SELECT version FROM schema_version").fetchall(),
                             str(db_path.parent), str(db_path))
    refuse_newer(version, db_path)
    return version


def _create_or_migrate(db: sqlite3.Connection, db_path: Path) -> None:
    """Each step reads the version inside its own write transaction: of two processes opening the
    same new (or old) store at once, the second finds the work done."""
    with transaction(db):
        if _version(db, db_path) is None:
            for statement in SCHEMA:
                db.execute(statement)
            return
    # foreign keys are off while tables are rebuilt (SQLite's recipe); each step is atomic
    db.execute("PRAGMA foreign_keys=OFF")
    try:
        while True:
            with transaction(db):
                version = _version(db, db_path)
                assert version is not None
                if version >= SCHEMA_VERSION:
                    return
                MIGRATIONS[version](db)
                db.execute("UPDATE schema_version SET version = ?", (version + 1,))
    finally:
        db.execute("PRAGMA foreign_keys=ON")
