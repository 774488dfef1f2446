"""Where results are kept: a store, named by a spec (a results directory, or a database URL), opened
through the backend that speaks it (backends.py). Callers name a store only by its spec: which
files are inside a store is its backend's business.

The functions here import their backends when called: importing a part of the store (raw.py, for
measurement) loads no database driver."""

from __future__ import annotations

RESULTS_ENV = "JITTERLAB_RESULTS"


def results_spec(text: str) -> str:
    """The --results value checked: a URL of a backend jitterlab speaks (complete: a PostgreSQL URL
    names its raw_dir), or a path the system can take; the spec to open. UserError (one line,
    naming --results) otherwise."""
    from jitterlab.store.backends import check_spec

    return check_spec(text)


def store_exists(spec: str) -> bool:
    """Is there a store at `spec` (a results directory with its database, a database with the
    catalog's tables)? Creates nothing; UserError when it cannot be told (an unreachable database)."""
    from jitterlab.store.backends import backend_for

    return backend_for(spec).exists(spec)

