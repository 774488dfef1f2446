"""One verdict per row, whatever shows it: one store (two images of a board, synthetic edges with
raw series) read by `summary`, `compare` (terminal, JSON), the HTML `report` and the judgement of
`run --until-decided`; every tested row has the same verdict in each, row for row."""

from __future__ import annotations

import html
import json
import re
import shlex
import sqlite3

import pytest

from jitterlab import plugins
from jitterlab.analysis.compare import Selector
from jitterlab.analysis.samples import reader
from jitterlab.campaign.cells import names
from jitterlab.cli.main import main
from jitterlab.execution.until_decided import Watch, judge
from jitterlab.report.html import render
from jitterlab.report.layout import commands_in
from jitterlab.store.catalog import Store
from tests.report.conftest import build_store

VERDICT_WORDS = ("worse", "better", "same", "undecided")


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    path = tmp_path_factory.mktemp("one") / "store"
    build_store(path).close()
    db = sqlite3.connect(path / "results.sqlite")  # one campaign name, two label sets: what summary compares
    db.execute("UPDATE campaigns SET name = 'board'")
    db.commit()
    db.close()
    return path


def _by_row(cells: dict, metric: str, probe: str) -> str:
    return cells.get((metric, probe), "")


def test_every_output_gives_every_tested_row_the_same_verdict(root, capsys, tmp_path):
    args = ["--results", str(root), "--baseline", "image=1.10", "--candidate", "image=1.11"]
    # compare --format json: the reference, cell by cell
    assert main(["compare", *args, "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    tested = {(" ".join(str(v) for v in r["cell"].values() if str(v)), r["probe"], r["metric"]): r["verdict"]
              for r in doc["rows"] if r["tested"]}
    assert set(tested.values()) >= {"worse"}
    assert len(tested) == 2 * 2 * 2 * 3  # impl x load x period x headline metric
    # as the probe the cells chose (vpin) saw them: the program's own timestamps beside it are shown
    assert {p for _, p, _ in tested} == {"vpin"}  # (--all), never tested: they would double Holm's family
    assert {r["probe"] for r in doc["rows"] if not r["tested"]} >= {"self"}
    assert {m for _, _, m in tested} == set(plugins.traits("squarewave").headline)
    assert doc["format"] == "jitterlab.compare/3"

    # compare's table, as a log gets it (not a terminal): same rows, same verdicts
    assert main(["compare", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    heads = re.split(r"\s{2,}", lines[1].strip())
    table = {}
    for line in lines[2:]:
        cols = re.split(r"\s{2,}", line.strip())
        if len(cols) == len(heads) or len(cols) == len(heads) - 1:  # "decided" may be empty
            row = dict(zip(heads, cols, strict=False))
            verdict = row.get("verdict", "").removesuffix(" (load differed)")  # the cpu cells' load doubled
            if verdict in VERDICT_WORDS:
                table[(row["cell"], row["probe"], row["metric"])] = verdict
    full = {_short(k, doc): v for k, v in tested.items()}
    assert table == full

    # the summary screen: the decided rows with their verdicts, the undecided counted
    assert main(["summary", *args]) == 0
    out = capsys.readouterr().out
    decided = {}
    for line in out.splitlines():
        m = re.match(r"  (worse|better|same)\s+(.+?) \((vpin|self)\)  (\S+)  ", line)
        if m:
            decided[(m.group(2), m.group(3), m.group(4))] = m.group(1)
    # at most 8 are listed, the worst first; the rest counted
    listed = {k: v for k, v in full.items() if v != "undecided"}
    assert decided.items() <= listed.items() and len(decided) == min(8, len(listed))
    more = re.search(r"\.\.\. and (\d+) more decided rows", out)
    assert len(decided) + (int(more.group(1)) if more else 0) == len(listed)
    assert more is not None  # and the command that shows them runs as printed, with every verdict
    [again] = [c for line in out.splitlines() if "more decided rows" in line for c in commands_in(line)]
    assert main(shlex.split(again)[1:]) == 0
    shown = capsys.readouterr().out
    assert len(re.findall(r"  (worse|better|same)( \(load differed\))?  ", shown)) >= len(listed)
    n_undecided = sum(v == "undecided" for v in full.values())
    assert (f"{n_undecided} undecided" in out) == bool(n_undecided)

    # the HTML report's comparison table
    store = Store(root, create=False)
    try:
        # without per-run figures (18 drawn, a fifth of this test's time): its comparison table is read
        render(store, tmp_path / "r.html", campaigns=["board"], figure_files=False, max_run_figures=0)
        page = (tmp_path / "r.html").read_text()
        runs = store.runs()
        looped = judge(runs, Watch(Selector("image", "1.10"), Selector("image", "1.11")), names(),
                       reader(store.read_series, plugins.traits))
    finally:
        store.close()
    section = page[page.index('id="compare"'):]
    cells = [[html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]
             for row in re.findall(r"<tr>(.*?)</tr>", section, re.S)]
    in_page = {(c[0], c[1], c[2]): c[11].removesuffix(" (load differed)") for c in cells
               if len(c) == 13 and c[11].removesuffix(" (load differed)") in VERDICT_WORDS}
    assert in_page == full

    # the judgement of run --until-decided over the same runs
    assert {_short(k, doc): r.verdict for r in looped.tested_rows
            for k in [(" ".join(str(v) for v in r.cell if str(v)), r.probe, r.metric)]} == full


def _short(key: tuple, doc: dict) -> tuple:
    """A row's cell as the tables name it: the fields that differ between rows (compare's cell_text)."""
    cell, probe, metric = key
    rows = [r for r in doc["rows"] if r["tested"]]
    fields = doc["cell_fields"]
    varying = [f for f in fields if len({str(r["cell"][f]) for r in rows}) > 1] or fields
    for r in rows:
        if " ".join(str(v) for v in r["cell"].values() if str(v)) == cell:
            return (" ".join(str(r["cell"][f]) for f in fields if f in varying and str(r["cell"][f])), probe,
                    metric)
    raise AssertionError(cell)
