"""The end of `jitterlab run`, on the fake target: the warnings of its runs and cells grouped by
cause (each once, with how many runs and the remedy), then the summary screen last."""

from __future__ import annotations

import dataclasses
import re

from jitterlab.model.records import Warning_
from jitterlab.targets import fake
from tests.execution import fakes
from tests.execution.test_runner import campaign, run


def test_run_ends_with_the_warnings_of_its_runs_grouped_then_the_summary_screen(tmp_path, monkeypatch,
                                                                                 capsys):
    monkeypatch.setattr(fake, "OPENED", [])
    fakes.register(monkeypatch)
    analyse = fakes.FakeBenchmark.analyse

    def with_warnings(self, ctx, measured):
        done = analyse(self, ctx, measured)
        blind = (3, 9, 5)[ctx.repetition]
        return dataclasses.replace(done, warnings=[
            Warning_(f"probe blind {blind} % of the run", "give the probe a CPU of its own"),
            Warning_("the pin is external: the figures are the instrument's", "wire the pin")])

    monkeypatch.setattr(fakes.FakeBenchmark, "analyse", with_warnings)
    assert run(campaign(tmp_path, reps=3)) == 0
    out = capsys.readouterr().out.splitlines()
    start = out.index("warnings about runs and cells, grouped by cause")
    assert out[start + 1].split() == ["warning", "affects", "remedy"]
    rows = [re.split(r"\s{2,}", line) for line in out[start + 2:start + 4]]
    assert [(r[0], r[1].split(" (")[0], r[2]) for r in rows] == [
        ("probe blind 3–9 % of the run", "3 runs", "give the probe a CPU of its own"),
        ("the pin is external: the figures are the instrument's", "3 runs", "wire the pin")]
    assert sum("probe blind" in line for line in out) == 1  # once, not once per run
    assert out[start + 4].startswith("results: ")
    screen = out.index("fake: what holds here")
    assert screen > start + 4
    assert out[-1].startswith("every run and its warnings: jitterlab show --runs --results ")
