"""Where results are kept: a store, named by a spec (a results directory, or a database URL), opened
through the backend that speaks it (backends.py). Callers name a store only by its spec: which
files are inside a store is its backend's business.

The functions here import their backends when called: importing a part of the store (raw.py, for
measurement) loads no database driver."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

RESULTS_ENV = "JITTERLAB_RESULTS"


def results_spec(text: str, option: str = "--results") -> str:
    """The --results value checked: a URL of a backend jitterlab speaks (complete: a PostgreSQL URL
    names its raw_dir), or a path the system can take; the spec to open. UserError (one line,
    naming `option`) otherwise: anything that looks like a URL and is not one jitterlab speaks."""
    from jitterlab.store.backends import check_spec

    with named(option):
        return check_spec(text)


@contextlib.contextmanager
def named(option: str) -> Iterator[None]:
    """Errors about a store's spec (checked, opened) name `option` (push's --to), not --results."""
    from jitterlab.model.errors import RuntimeProblem, UserError

    try:
        yield
    except (UserError, RuntimeProblem) as exc:
        text = str(exc)
        if option == "--results" or not text.startswith("--results") or type(exc) not in (
                UserError, RuntimeProblem):
            raise
        raise type(exc)(option + text.removeprefix("--results")) from None


def shown_spec(spec: object) -> str:
    """A --results spec as printed (in a command to run next, say): its passwords as ***."""
    from jitterlab.store.urls import masked

    return masked(str(spec))


def store_exists(spec: str) -> bool:
    """Is there a store at `spec` (a results directory with its database, a database with the
    catalog's tables)? Creates nothing; UserError when it cannot be told (an unreachable database)."""
    from jitterlab.store.backends import backend_for

    return backend_for(spec).exists(spec)

