"""Two groups of runs to compare (--baseline / --candidate KEY=VALUE), the cells both have, and
how a comparison names its cells: what `compare`, `summary`, `report` and `run --until-decided`
share before any statistic."""

from __future__ import annotations

import itertools
import re
from collections import defaultdict
from dataclasses import dataclass

from jitterlab.model.cellnames import PLAIN, CellNames
from jitterlab.model.errors import UserError
from jitterlab.model.records import NO_TUNING, TUNING_KEY, RunRecord
from jitterlab.model.registry import did_you_mean

SHOWN_IDS = 3  # run ids named when groups overlap

# cell fields that --baseline/--candidate may select on besides labels and the benchmark's keys
_FIELDS = ("target", "benchmark", "load")
# a cell of a comparison: those fields and the benchmark's matrix keys as one text
# ("impl=c-fifo period=1ms probe=vpin pin=vpin", "size=64 policy=fifo ...")
_CELL = (*_FIELDS, "params")


@dataclass(frozen=True)
class Selector:
    key: str
    value: str

    @classmethod
    def parse(cls, text: str, option: str) -> Selector:
        key, sep, value = text.partition("=")
        if not sep or not key.strip():
            raise UserError(f"{option} {text!r}: write KEY=VALUE, e.g. {option} image=1.10")
        return cls(key.strip(), value.strip())

    def matches(self, run: RunRecord, names: CellNames = PLAIN) -> bool:
        """Whether the run has this label, cell field or parameter; a parameter's value may be
        written as `names` shows it (period=1ms) or as stored (period=1000000)."""
        if self.key in run.labels:
            return str(run.labels[self.key]) == self.value
        if self.key in _FIELDS:
            return str(getattr(run, self.key)) == self.value
        if self.key == TUNING_KEY:  # a run without one ran under "none"
            return run.cell.tuning == self.value
        if run.cell.has(self.key):  # as stored (1000000) or as written in a campaign (1ms)
            return self.value in (str(run.param(self.key)), names.show_value(run.cell, self.key))
        return False

    def __str__(self) -> str:
        return f"{self.key}={self.value}"


@dataclass(frozen=True)
class Pairing:
    """The cells both groups have, each with its baseline and candidate runs (ok runs only), and
    the fields that name a cell (those not used to select the groups)."""

    cell_fields: tuple[str, ...]
    names: CellNames
    cells: list[tuple[tuple, list[RunRecord], list[RunRecord]]]


def paired(runs: list[RunRecord], baseline: Selector, candidate: Selector,
           names: CellNames = PLAIN) -> Pairing:
    """The ok runs `baseline` and `candidate` select, paired by cell. UserError for a group no run
    has, groups that share a run (a run cannot be both the reference and the judged) and groups
    with no cell in common."""
    group_a = [r for r in runs if baseline.matches(r, names) and r.status == "ok"]
    group_b = [r for r in runs if candidate.matches(r, names) and r.status == "ok"]
    for sel, group, option in ((baseline, group_a, "--baseline"), (candidate, group_b, "--candidate")):
        if not group:
            raise UserError(f"{option} {sel}: no successful run has it; {_closest(sel, runs, names)}"
                            f"labels in the store: {_known_labels(runs)}{_known_params(sel, runs, names)}")
    _refuse_overlap(group_a, group_b, baseline, candidate)
    names = names.among(r.cell for r in group_a + group_b)  # a key that tells cells apart is named
    # a field that selects the groups must not split the cells, else no cell is common
    cell_fields = tuple(f for f in _CELL if f not in (baseline.key, candidate.key))
    selected = (baseline.key, candidate.key)
    cells_a = _by_cell(group_a, cell_fields, names, selected)
    cells_b = _by_cell(group_b, cell_fields, names, selected)
    common = [c for c in cells_a if c in cells_b]
    if not common:
        raise UserError(
            f"--baseline {baseline} and --candidate {candidate} have no cell in common "
            f"({len(cells_a)} and {len(cells_b)} cells; a cell is {' x '.join(cell_fields)}); "
            "compare groups measured with the same matrix")
    return Pairing(cell_fields, names, [(c, cells_a[c], cells_b[c]) for c in common])


def cell_of(fields: tuple[str, ...], cell: tuple) -> str:
    """A cell's fields as one text, as a comparison's notes name it."""
    return _cell_text(fields, cell)


def _refuse_overlap(group_a: list[RunRecord], group_b: list[RunRecord], baseline: Selector,
                    candidate: Selector) -> None:
    """Groups that share runs compare those runs with themselves, and the verdict means nothing."""
    ids_b = {r.id for r in group_b}
    shared = sorted({r.id for r in group_a if r.id in ids_b})
    if shared:
        more = f" and {len(shared) - SHOWN_IDS} more" if len(shared) > SHOWN_IDS else ""
        raise UserError(
            f"--baseline {baseline} and --candidate {candidate} share {len(shared)} "
            f"run{'s' if len(shared) != 1 else ''} ({', '.join(shared[:SHOWN_IDS])}{more}): a run can "
            "be in one group only; choose selectors no run matches both of (e.g. two values of one "
            "key: --baseline load=idle --candidate load=cpu)")


def _by_cell(runs: list[RunRecord], fields: tuple[str, ...], names: CellNames,
             selected: tuple[str, ...] = ()) -> dict[tuple, list[RunRecord]]:
    out: dict[tuple, list[RunRecord]] = defaultdict(list)
    for r in runs:
        key = tuple(names.params_text(r.cell, leave_out=selected) if f == "params" else getattr(r, f)
                    for f in fields)
        out[key].append(r)
    return dict(out)


def _cell_text(fields: tuple[str, ...], cell: tuple) -> str:
    return " ".join(str(v) for v in cell if str(v))


def full_cell_text(comparison, row) -> str:
    """A row's cell with every field, as the comparison's notes name it."""
    return _cell_text(comparison.cell_fields, row.cell)


def cell_text(comparison, row) -> str:
    """A cell as the reader wants it: the fields that differ between the rows ("idle impl=c-fifo
    period=1ms"); those every row shares are in common_text()."""
    varying = _varying_fields(comparison)
    return _cell_text(comparison.cell_fields, tuple(v for i, v in enumerate(row.cell) if i in varying))


def common_text(comparison) -> str:
    """What every row of the comparison shares ("target=board benchmark=squarewave"), or ""."""
    varying = _varying_fields(comparison)
    first = comparison.rows[0].cell if comparison.rows else ()
    return " ".join(f"{f}={v}" for i, (f, v) in enumerate(zip(comparison.cell_fields, first, strict=False))
                    if i not in varying and str(v))


def _varying_fields(comparison) -> set[int]:
    cells_seen = {r.cell for r in comparison.rows}
    varying = {i for i in range(len(comparison.cell_fields)) if len({c[i] for c in cells_seen}) > 1}
    return varying or set(range(len(comparison.cell_fields)))  # one cell: name it whole


def _known_params(selector: Selector, runs: list[RunRecord], names: CellNames) -> str:
    """The values a cell field (load=cpuu) or cell key (policy=fifoo) takes in the store, when the
    selector names one."""
    if selector.key in _FIELDS:
        values = sorted({str(getattr(r, selector.key)) for r in runs})
    elif selector.key == TUNING_KEY:
        values = sorted({r.cell.tuning for r in runs})
    else:
        values = sorted({names.show_value(r.cell, selector.key) for r in runs if r.cell.has(selector.key)})
    return f"; {selector.key} takes: {', '.join(values)}" if values else ""


def _closest(selector: Selector, runs: list[RunRecord], names: CellNames) -> str:
    """"did you mean 'image=A'? " for the label, cell field or parameter of these runs closest to a
    mistyped selector (imag=A, impl=pyton), else ""."""
    pairs = {f"{k}={v}" for r in runs for k, v in r.labels.items()}
    pairs |= {f"{f}={getattr(r, f)}" for r in runs for f in _FIELDS}
    pairs |= {f"{TUNING_KEY}={r.cell.tuning}" for r in runs}
    pairs |= {f"{k}={names.show_value(r.cell, k)}" for r in runs for k, _ in r.cell.params}
    return did_you_mean(str(selector), pairs - {str(selector)})


def _known_labels(runs: list[RunRecord]) -> str:
    pairs = sorted({f"{k}={v}" for r in runs for k, v in r.labels.items()})
    return ", ".join(pairs) or "none (give --label k=v to import, or labels in the campaign)"


def mixed_labels(pairing: Pairing, baseline: Selector,
                 candidate: Selector) -> dict[str, tuple[tuple[str, ...], tuple[str, ...]]]:
    """The labels besides the selecting ones that take more than one value among the runs compared:
    label -> (its values in the baseline's runs, in the candidate's). A group that holds several
    pools them (image=A and image=B behind one impl=c-mmap); groups apart in it differ in more than
    the selected key."""
    values: dict[str, tuple[set[str], set[str]]] = defaultdict(lambda: (set(), set()))
    for _, a_runs, b_runs in pairing.cells:
        for side, group in enumerate((a_runs, b_runs)):
            for r in group:
                for k, v in r.labels.items():
                    values[k][side].add(str(v))
    return {k: (tuple(sorted(a, key=_natural)), tuple(sorted(b, key=_natural)))
            for k, (a, b) in sorted(values.items())
            if k not in (baseline.key, candidate.key) and len(a | b) > 1}


def label_pairs(runs: list[RunRecord]) -> list[tuple[Selector, Selector]]:
    """Consecutive value pairs of every label key that takes more than one value, then each tuning
    the runs were measured under against "none" (for reports)."""
    values: dict[str, set[str]] = defaultdict(set)
    for r in runs:
        for k, v in r.labels.items():
            values[k].add(str(v))
    pairs = []
    for key in sorted(values):
        vals = sorted(values[key], key=_natural)
        pairs += [(Selector(key, x), Selector(key, y)) for x, y in itertools.pairwise(vals)]
    # the tunings a campaign measured are a group like a label's values, each judged against "none"
    tunings = {r.cell.tuning for r in runs}
    if NO_TUNING in tunings:
        pairs += [(Selector(TUNING_KEY, NO_TUNING), Selector(TUNING_KEY, t))
                  for t in sorted(tunings - {NO_TUNING})]
    return pairs


def _natural(text: str) -> list:
    """"1.10" sorts after "1.9"."""
    return [(0, int(p), "") if p.isdigit() else (1, 0, p) for p in re.split(r"(\d+)", text)]
