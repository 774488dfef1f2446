"""The shipped quickstart trips none of the tool's own warnings on a 2-CPU machine: its placement
keeps loads off the probe's CPU, and it measures enough repetitions for the report and compare."""

from __future__ import annotations

from pathlib import Path

from jitterlab.analysis.compare import MIN_RUNS
from jitterlab.campaign.file import load_campaign
from jitterlab.execution import preflight
from jitterlab.model.fakes import run_record
from jitterlab.model.records import Metric
from jitterlab.report.sections import by_section

QUICKSTART = Path(__file__).parent.parent / "examples" / "quickstart.toml"


def test_the_quickstart_places_program_probe_and_loads_apart_on_two_cpus():
    campaign = load_campaign(QUICKSTART)
    warnings: list = []
    placement = preflight._placement(campaign, list(campaign.cells), 2, warnings)
    assert warnings == []
    assert (placement.program_cpus, placement.probe_cpu, placement.load_cpus) == ((0,), 1, (0,))


def test_the_quickstart_measures_enough_repetitions_for_the_report_and_compare():
    campaign = load_campaign(QUICKSTART)
    assert campaign.repetitions >= MIN_RUNS
    runs = [run_record(cell, id=f"{i}-{rep}", repetition=rep,
                       metrics=[Metric("max_rel_period_error", 0.01, "ratio", "vpin")])
            for i, cell in enumerate(campaign.cells) for rep in range(campaign.repetitions)]
    assert [w for section, mine in by_section(runs) for w in section.warnings(mine)] == []
