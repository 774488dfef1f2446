"""A store's rows read back into records, checked against what the schema says they hold: a JSON
object where it keeps JSON, label values that are text, cell values of the kinds a matrix key takes
(and the squarewave keys the schema makes columns of, of their column's type), whole numbers and
numbers where its columns are INTEGER and REAL (SQLite keeps whatever it is given). Anything else
is a RowDamaged naming the row and the column."""

from __future__ import annotations

from jitterlab.model.records import Cell, Metric, RunRecord
from jitterlab.store.damage import RowDamaged, json_object, number, whole

# the cell keys schema.RUNS makes generated columns of, with the type of their column
COLUMN_KEYS = {"impl": str, "period": int, "probe": str, "pin": str}


def read_run(row: dict, metrics: dict, attachments: dict) -> RunRecord:
    """A run from its row of RUN_COLUMNS (consumed); RowDamaged when a column does not read."""
    whose = f"run {row['id']}"
    cell = Cell(row.pop("target"), row.pop("benchmark"), row.pop("load"),
                tuple(_cell(json_object(row.pop("cell_json"), whose, "cell_json"), whose).items()))
    row["settings"] = json_object(row.pop("params_json"), whose, "params_json")
    row["labels"] = read_labels(row.pop("labels_json"), whose)
    whole(row["repetition"], whose, "repetition")
    whole(row["started_ns"], whose, "started_ns")
    number(row["wall_s"], whose, "wall_s")
    return RunRecord(**row, cell=cell, metrics=metrics, attachments=attachments)


def read_metric(run_id: str, probe: str, name: str, value: object, unit: str, direction: str) -> Metric:
    """A metric from its row; RowDamaged when its value is no number or its direction none known."""
    what = f"metric {probe}.{name}" if probe else f"metric {name}"
    try:
        return Metric(name, number(value, f"run {run_id}", what), unit, probe, direction)
    except ValueError as exc:  # Metric's own check: a direction it does not know
        if isinstance(exc, RowDamaged):
            raise
        raise RowDamaged(f"run {run_id}", f"{what} has the direction {direction!r}, not lower, higher, "
                         "none or empty") from None


def read_labels(text: object, whose: str) -> dict[str, str]:
    """labels_json: an object of text values (a label is key=value text)."""
    found = json_object(text, whose, "labels_json")
    for key, value in found.items():
        if not isinstance(value, str):
            raise RowDamaged(whose, f"labels_json's label {key!r} is not text")
    return found


def _cell(found: dict, whose: str) -> dict:
    for key, value in found.items():
        kind = COLUMN_KEYS.get(key)
        if not isinstance(value, str | int | float | bool) or (
                kind is not None and (not isinstance(value, kind) or isinstance(value, bool))):
            raise RowDamaged(whose, f"cell_json's {key} is {value!r:.40}, not "
                             f"{'a whole number' if kind is int else 'text' if kind else 'a single value'}")
    return found
