"""The report's sections: each module registers its section in SECTIONS (base.py); this imports
them all, so a new section is one module plus its import here, and base.py imports none of them."""

from __future__ import annotations

from jitterlab.model.records import RunRecord
from jitterlab.report.sections import squarewave, standard  # noqa: F401  (register squarewave, standard)
from jitterlab.report.sections.base import DEFAULT, SECTIONS, Section, SectionContext
from jitterlab.report.warning_groups import Note

__all__ = ["SECTIONS", "Section", "SectionContext", "by_section", "section_notes"]


def by_section(runs: list[RunRecord]) -> list[tuple[Section, list[RunRecord]]]:
    """The runs grouped by the section that shows them: benchmarks with their own section first
    (in name order), then the standard one."""
    groups: dict[str, list[RunRecord]] = {}
    for r in runs:
        name = r.benchmark if r.benchmark in SECTIONS and r.benchmark != DEFAULT else DEFAULT
        groups.setdefault(name, []).append(r)
    order = sorted(n for n in groups if n != DEFAULT) + ([DEFAULT] if DEFAULT in groups else [])
    return [(SECTIONS.get(n, "report"), groups[n]) for n in order]


def section_notes(runs: list[RunRecord]) -> list[Note]:
    """What the sections tell of these runs that only stored runs can (too few repetitions, ...),
    each note of a cell or a run as the section made it."""
    return [note for section, mine in by_section(runs) for note in section.warnings(mine)]
