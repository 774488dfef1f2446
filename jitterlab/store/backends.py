"""The store backends jitterlab speaks, and the one function that picks a backend from the text users
give with --results (a path or a URL). A new backend is its module and one line here."""

from __future__ import annotations

import re

from jitterlab.model.errors import UserError, shown
from jitterlab.store.backend import Backend
from jitterlab.store.postgres import PostgresBackend
from jitterlab.store.sqlite import SqliteBackend

# asked in this order: the first that claims a spec opens it (SQLite takes any path, so it comes last)
BACKENDS: tuple[type[Backend], ...] = (PostgresBackend, SqliteBackend)

_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")


def backend_for(text: str) -> type[Backend]:
    """The backend whose spec `text` is; UserError (one line) when none speaks it."""
    for backend in BACKENDS:
        if backend.claims(text):
            return backend
    scheme = _URL.match(text)
    what = f"a {scheme.group(1)}:// URL" if scheme else "this"
    forms = "; or ".join(b.form for b in BACKENDS)
    text = re.sub(r"^([^/]*//[^/@]*?:)[^@/]*@", r"\1***@", text)  # a URL's password is never shown
    raise UserError(f"--results {shown(text)}: jitterlab cannot keep results in {what}; give {forms}")


def check_spec(text: str) -> str:
    """The --results text as a spec of a backend jitterlab speaks, checked by that backend."""
    return backend_for(text).check_spec(text)


def open_backend(spec: str, *, create: bool) -> Backend:
    return backend_for(spec).open(spec, create=create)
