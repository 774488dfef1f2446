"""A store's rows read back into records, checked against what the schema says they hold: a JSON
object where it keeps JSON, label values that are text, cell values of the kinds a matrix key takes
(the keys the schema makes columns of each of its column's type, and in the cell whenever its
cell_key names them), settings and system facts of their fields' types (model/stored.py: whole
numbers for `*_ns`, ...), whole numbers and numbers where its columns are INTEGER and REAL (SQLite
keeps whatever it is given). Anything else is a RowDamaged naming the row and the column."""

from __future__ import annotations

from typing import TypeVar

from jitterlab.model import reading
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import Cell, Metric, RunRecord, StoredSettings
from jitterlab.model.stored import Stored, Unreadable
from jitterlab.store.damage import RowDamaged, json_object, number, whole

# the cell keys schema.RUNS makes generated columns of, with the type of their column
COLUMN_KEYS = {"impl": str, "period": int, "probe": str, "pin": str}
R = TypeVar("R", bound=Stored)


def read_run(row: dict, metrics: dict, attachments: dict) -> RunRecord:
    """A run from its row of RUN_COLUMNS (consumed); RowDamaged when a column does not read."""
    whose = f"run {row['id']}"
    benchmark = row.pop("benchmark")
    params = _cell(json_object(row.pop("cell_json"), whose, "cell_json"), row["cell_key"], whose)
    cell = Cell(row.pop("target"), benchmark, row.pop("load"), tuple(params.items()))
    row["settings"] = _typed(StoredSettings, json_object(row.pop("params_json"), whose, "params_json"), whose,
                             "params_json")
    row["labels"] = read_labels(row.pop("labels_json"), whose)
    whole(row["repetition"], whose, "repetition")
    whole(row["started_ns"], whose, "started_ns")
    number(row["wall_s"], whose, "wall_s")
    return RunRecord(**row, cell=cell, metrics=metrics, attachments=attachments)


def read_metric(run_id: str, probe: str, name: str, value: object, unit: str, direction: str,
                summary: str = "", scale: str = "", stat: str = "") -> Metric:
    """A metric from its row; RowDamaged when its value is no number, or its direction, summary,
    scale or stat is none of the words model.reading knows."""
    what = f"metric {probe}.{name}" if probe else f"metric {name}"
    value = number(value, f"run {run_id}", what)
    if (wrong := reading.undeclared(direction, summary, scale, stat)) is not None:
        field, given = wrong
        raise RowDamaged(f"run {run_id}", f"{what} has the {field} {given!r:.40}, not "
                         f"{', '.join(reading.DECLARED[field])} or empty")
    return Metric(name, value, unit, probe, direction, summary, scale, stat)


def read_labels(text: object, whose: str) -> dict[str, str]:
    """labels_json: an object of text values (a label is key=value text)."""
    found = json_object(text, whose, "labels_json")
    for key, value in found.items():
        if not isinstance(value, str):
            raise RowDamaged(whose, f"labels_json's label {key!r} is not text")
    return found


def _cell(found: dict, cell_key: str, whose: str) -> dict:
    # the identity a run was stored under names its cell's keys ("... period=1000000 ..."): a key of
    # a generated column that it names is in the cell, whatever the benchmark
    if lacking := [k for k in COLUMN_KEYS if k not in found and f" {k}=" in f" {cell_key}"]:
        raise RowDamaged(whose, f"cell_json lacks {', '.join(lacking)}, which its cell_key names")
    for key, value in found.items():
        kind = COLUMN_KEYS.get(key)
        if not isinstance(value, str | int | float | bool) or (
                kind is not None and (not isinstance(value, kind) or isinstance(value, bool))):
            raise RowDamaged(whose, f"cell_json's {key} is {value!r:.40}, not "
                             f"{'a whole number' if kind is int else 'text' if kind else 'a single value'}")
    return found


def read_sysinfo(text: object, sysinfo_id: int) -> SystemFacts:
    """A sysinfo row's facts (from the JSON an older jitterlab wrote, too)."""
    whose = f"sysinfo #{sysinfo_id}"
    return _typed(SystemFacts, json_object(text, whose, "json"), whose, "json")


def _typed(record: type[R], found: dict, whose: str, column: str) -> R:
    """The record of a JSON column's object; RowDamaged naming the key whose value is not of its type."""
    try:
        return record.from_json(found)
    except Unreadable as exc:
        raise RowDamaged(whose, f"{column}'s {exc}") from None
