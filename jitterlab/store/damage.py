"""A store jitterlab cannot have written so: a table or a column gone, a row whose JSON does not read,
a metric that is no number, a schema version that is none. It is bad input (exit 2), never a bug:
one line naming the store, what is damaged and what to do about it.

Two kinds, two remedies. Without a table, a column or a readable database file no run reads, so the
store is restored from a backup. A damaged row spoils only its campaign or run: `jitterlab check`
lists every one, and `jitterlab push` copies the sound runs into a new store."""

from __future__ import annotations

import json
import shlex

from jitterlab.model.errors import UserError, shown


class RowDamaged(ValueError):
    """One row does not read: `whose` ("run 1a2b", "campaign #3"), `detail` ("cell_json is not JSON
    (...)"). The catalog says in which store (StoreDamaged), or leaves the row out (push, check)."""

    def __init__(self, whose: str, detail: str) -> None:
        super().__init__(f"{whose}: {detail}")
        self.whose, self.detail = whose, detail


class StoreDamaged(UserError):
    """The store holds what jitterlab never writes. `what` names the part ("its table metrics is
    missing"); `row`: the row that does not read, when the rest of the store reads."""

    def __init__(self, spec: str, what: str = "", *, row: RowDamaged | None = None,
                 where: str | None = None) -> None:
        self.spec, self.row = spec, row
        self.what = str(row) if row is not None else what
        super().__init__(f"{where or spec}: the store is damaged: {self.what}; "
                         f"{remedy(spec, rows=row is not None)}")


def remedy(spec: str, *, rows: bool) -> str:
    """What to do about a damaged store at `spec` (the --results text, passwords masked)."""
    results = shlex.quote(spec)
    if rows:
        return f"see every damaged row with jitterlab check --results {results}; {salvage(spec)}"
    return (f"restore the store from a backup (jitterlab check --results {results} tells whether a copy "
            "is sound)")


def salvage(spec: str) -> str:
    """How the sound runs of a store whose rows or files are damaged are kept."""
    results = shlex.quote(spec)
    return (f"copy the sound runs into a new store with jitterlab push --results {results} --to NEW, or "
            "restore the store from a backup")


def json_object(text: object, whose: str, column: str) -> dict:
    """The object a JSON column of `whose` row holds; RowDamaged when it holds none."""
    try:
        value = json.loads(text)  # type: ignore[arg-type]
    except RecursionError:
        raise RowDamaged(whose, f"{column} is not JSON (nested too deeply)") from None
    except (TypeError, ValueError) as exc:  # a JSONDecodeError's message never quotes the text
        raise RowDamaged(whose, f"{column} is not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise RowDamaged(whose, f"{column} is {_kind(value)}, not a JSON object")
    return value


def number(value: object, whose: str, what: str) -> float:
    """A REAL column's value (SQLite keeps whatever it is given: text, a blob)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RowDamaged(whose, f"{what} is {shown(value, 40)}, not a number")
    return value


def whole(value: object, whose: str, what: str) -> int:
    """An INTEGER column's value (SQLite keeps whatever it is given: text, a real)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise RowDamaged(whose, f"{what} is {shown(value, 40)}, not a whole number")
    return value


def _kind(value: object) -> str:
    return {list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false",
            type(None): "null"}.get(type(value), type(value).__name__)
