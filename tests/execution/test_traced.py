"""A traced cell (trace = "sched"): its key, its refusal where the target cannot trace, the periods it
explains and how it names who took the time. Synthetic and fake: nothing is timed here."""

from __future__ import annotations

import json

import numpy as np
import pytest

from jitterlab.analysis import attribution
from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.execution import traced
from jitterlab.model import explanation as ex
from jitterlab.targets.fake import FakeTarget

CAMPAIGN = """
[campaign]
name = "t"
duration = "1s"
repetitions = 1
[[target]]
name = "f"
kind = "fake"
[matrix]
benchmark = "squarewave"
impl = ["c-fifo"]
period = "1ms"
{trace}
"""


def write(tmp_path, trace: str):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(trace=trace))
    return path


def test_trace_is_part_of_the_cell_only_when_asked(tmp_path):
    untraced = load_campaign(write(tmp_path, "")).cells
    both = load_campaign(write(tmp_path, 'trace = ["off", "sched"]')).cells
    assert [c.param("trace") for c in untraced] == [None]  # a cell stored before the key keeps its identity
    assert both[0].key == untraced[0].key
    assert both[1].key == f"{untraced[0].key} trace=sched"  # never pooled with the untraced one


def test_a_bad_trace_value_is_one_line(tmp_path, capsys):
    assert main(["run", str(write(tmp_path, 'trace = "sched_switch"')), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert "matrix.trace" in err and "known: off, sched" in err and len(err.strip().splitlines()) == 1


def test_dry_run_says_per_cell_why_its_target_cannot_trace(tmp_path, capsys):
    assert main(["run", str(write(tmp_path, 'trace = ["sched", "off"]')), "--dry-run"]) == 0
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if "cannot trace" in line]
    assert len(said) == 1  # the traced cell only
    assert "trace=sched" in said[0] and "target 'f'" in said[0] and "CONFIG_TRACING" in said[0]


def test_refusal_names_the_target_and_why():
    fake = FakeTarget("box")
    fake.respond(["sh", "-c"], "uid 1000\nkernel tracefs\nmounted\n")
    assert traced.refusal(fake) == ("cannot trace on target 'box': tracing needs root: run jitterlab as "
                                    "root on the target (or give the target's user root)")


def test_the_worst_periods_and_those_past_the_envelope_are_chosen():
    rel = np.array([0.5, -0.2, 0.05, 0.3, 0.0, 0.2, 0.15, 0.01, 0.9])
    used = np.ones(len(rel), dtype=bool)
    used[8] = False  # excluded (blind): never explained
    assert traced.chosen(rel, used, worst_n=2) == {0: ex.WORST, 3: ex.WORST, 5: ex.ENVELOPE, 6: ex.ENVELOPE}
    assert traced.chosen(rel, used, worst_n=10) == {0: "worst", 2: "worst", 3: "worst", 5: "worst",
                                                     6: "worst", 7: "worst"}  # late ones only
    assert traced.chosen(np.zeros(3), np.ones(3, dtype=bool)) == {}


@pytest.mark.parametrize(("who", "text"), [
    (attribution.Task("stress-ng-cpu", 812, 120), "stress-ng-cpu [SCHED_OTHER nice 0] pid 812"),
    (attribution.Task("jl-burst", 9, 89), "jl-burst [SCHED_FIFO/RR 10] pid 9"),
    (attribution.Irq(11, "virtio0"), "IRQ 11 virtio0"),
    (attribution.Irq(-1, ""), "hrtimer callback"),
    (attribution.Softirq(3), "softirq NET_RX"),
    (attribution.Move(0, 1), "moved from CPU 0 to CPU 1"),
])
def test_who_reads_as_a_person_reads_it_and_survives_json(who, text):
    kept = traced.who(who)
    assert kept is not None and kept.text == text
    assert ex.Who.from_json(json.loads(json.dumps(kept.as_json()))) == kept
