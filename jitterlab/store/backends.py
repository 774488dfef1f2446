"""The store backends jitterlab speaks, and the one function that picks a backend from the text users
give with --results (a path or a URL). A new backend is its module and one line here."""

from __future__ import annotations

from jitterlab.model.errors import UserError, shown
from jitterlab.store import urls
from jitterlab.store.backend import Backend
from jitterlab.store.postgres import PostgresBackend
from jitterlab.store.sqlite import SqliteBackend

# asked in this order: the first that claims a spec opens it (SQLite takes any path, so it comes last)
BACKENDS: tuple[type[Backend], ...] = (PostgresBackend, SqliteBackend)
# the backend of plain paths: never given a text that looks like a URL, which would silently become a
# directory named like it (./PostgreSQL:/u@h/db)
PATHS: type[Backend] = SqliteBackend


def backend_for(text: str) -> type[Backend]:
    """The backend whose spec `text` is; UserError (one line) when none speaks it."""
    scheme = urls.scheme(text)
    for backend in BACKENDS:
        if backend.claims(text) and not (backend is PATHS and scheme is not None):
            return backend
    forms = "; or ".join(b.form for b in BACKENDS if b is not PATHS)
    hint = ""
    if scheme and scheme.lower().startswith("postgres"):
        hint = " (written so: lower case, two slashes, no driver name)"
    what = f"a {scheme}: URL" if scheme else "this"
    raise UserError(f"--results {shown(urls.masked(text))}: jitterlab cannot keep results in {what}; give "
                    f"{forms}{hint}, or a directory (./NAME for a directory named like a URL)")


def check_spec(text: str) -> str:
    """The --results text as a spec of a backend jitterlab speaks, checked by that backend."""
    backend = backend_for(text)
    spec = backend.check_spec(text)
    # ./http:/x stays a path when it is opened (a normalized path would lose its ./)
    return f"./{spec}" if backend is PATHS and urls.scheme(spec) else spec


def open_backend(spec: str, *, create: bool) -> Backend:
    return backend_for(spec).open(spec, create=create)
