"""What a store backend is: where a store's catalog lives (a database, reached through a connection)
and where its files live (raw series, attachments, campaign locks), behind one interface, so that
the catalog (catalog.py) is written once.

A backend is one module (sqlite.py, postgres.py) with one class deriving from `Backend`, and one
line in backends.py that registers it. The class answers for the spec text users give with
--results (a path, a URL): whether it is one of its own, whether a store is there, and how to open
it; an opened backend carries the connection. What differs between databases stays inside:

- SQL: the catalog writes SQLite's spelling (`?` placeholders); a backend translates its own
  (`insert` returns the new row's id however its database says it);
- transactions: `transaction()` takes the write lock first, so what is read inside holds;
- the schema: created by `open(create=True)`, migrated in place by the backend's own steps;
- files: the directory under which `raw/` and `attachments/` live, and whether raw series are
  named by their content hash (a store that several controllers share) or by their run id;
- a campaign's lock (one jitterlab measures a campaign at a time);
- which of its driver's errors say that the store is damaged (a table gone, a file cut short).
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from jitterlab.store.locks import CampaignLock


class Cursor(Protocol):
    """What a query answers: sqlite3's cursor API, the part the catalog reads."""

    description: Any

    def fetchone(self) -> Any: ...

    def fetchall(self) -> list: ...

    def __iter__(self) -> Iterator: ...


class Backend(ABC):
    """One opened store: its catalog's connection and the place of its files."""

    name: ClassVar[str]  # as users know it ("sqlite", "postgresql")
    form: ClassVar[str]  # how a spec of it is written, for help and errors
    where: str  # the store as shown to users (never a password)
    files: Path  # the directory under which raw/ and attachments/ live
    content_addressed: bool  # raw series named by their sha256 (shared by controllers), else by run id

    # --- the spec: chosen, checked, found and opened ------------------------------------------------

    @classmethod
    @abstractmethod
    def claims(cls, text: str) -> bool:
        """Is this --results text one of this backend's (a URL of its scheme, a path)?"""

    @classmethod
    @abstractmethod
    def check_spec(cls, text: str) -> str:
        """The spec as it is to be used; UserError (one line, naming --results) when it cannot be."""

    @classmethod
    @abstractmethod
    def exists(cls, spec: str) -> bool:
        """Is there a store at `spec`? Creates nothing; UserError when it cannot be told (the
        database cannot be reached)."""

    @classmethod
    @abstractmethod
    def open(cls, spec: str, *, create: bool) -> Backend:
        """Open the store, its schema created (`create`) or migrated in place. `create=False`:
        read-only use; an absent or empty store is a UserError saying how to make one."""

    # --- the connection ------------------------------------------------------------------------------

    @abstractmethod
    def execute(self, sql: str, args: Sequence = ()) -> Cursor:
        """One statement in SQLite's spelling (`?` placeholders)."""

    @abstractmethod
    def executemany(self, sql: str, rows: Iterable[Sequence]) -> None: ...

    @abstractmethod
    def insert(self, sql: str, args: Sequence) -> int:
        """An INSERT into a table with an integer `id`; the new row's id."""

    @abstractmethod
    def transaction(self) -> contextlib.AbstractContextManager[None]:
        """BEGIN (the write lock first) ... COMMIT, ROLLBACK on any exception."""

    @abstractmethod
    def close(self) -> None: ...

    def damage(self, exc: Exception) -> str | None:
        """What is damaged in the store, when this error of the driver says so ("its table metrics is
        missing"); None for any other error (a bug, a lost connection, a constraint), which is raised
        as it is."""
        return None

    def lock_campaign(self, campaign_id: int, name: str) -> CampaignLock:
        """Take the lock of a campaign (CampaignBusy naming its holder when another has it): by
        default an flock in the store's files directory, which the kernel releases however its
        holder ends."""
        lock = CampaignLock(self.files, campaign_id, name)
        lock.acquire()
        return lock
