"""Sections register themselves in one registry (sections/base.py) that imports none of them; the
package imports them all and hands each the runs it shows."""

from __future__ import annotations

from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.report.sections import SECTIONS, by_section


def test_runs_go_to_their_own_section_first_then_the_standard_one():
    runs = [run_record(cell("cyclictest", {"interval": 1_000_000}), id="c"),
            run_record(squarewave_cell(), id="s"), run_record(cell("not-registered"), id="x")]
    got = [(section.title, [r.id for r in mine]) for section, mine in by_section(runs)]
    assert got == [("Square wave", ["s"]), ("Standard benchmarks", ["c", "x"])]
    assert SECTIONS.names() == ["squarewave", "standard"]
