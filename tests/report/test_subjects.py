"""What a metric is of (its subject) and what an observer is: a run's own subject is what its
benchmark declares (model.traits), an observer's independence what its probe declares; nothing reads
squarewave's cell key in the generic record or compares an observer's name ("self")."""

from __future__ import annotations

import pytest

from jitterlab import plugins
from jitterlab.measure.squarewave.probes.base import ProbeBase
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.registry import Entry
from jitterlab.model.traits import OWN_VIEW, UNKNOWN_OBSERVER
from jitterlab.report import limits
from jitterlab.report.figures.squarewave import probe_label
from jitterlab.report.summary_screen import _evidence_line
from jitterlab.report.traits import observer, own, own_metric, subject_of


class MirrorProbe(ProbeBase):
    """An observer that is the program itself under another name: only its declaration tells."""

    needs = ()
    independent = False
    location = "program"


@pytest.fixture
def mirror(monkeypatch):
    entry = Entry("mirror", "the program's mirror", MirrorProbe)
    monkeypatch.setitem(plugins.PROBES._entries, "mirror", entry)


def wave(probe: str, run_id: str, blind_ns: float = 50_000_000.0):
    return run_record(squarewave_cell("c-fifo", 1_000_000, probe=probe), id=run_id,
                      settings={"duration_ns": 1_000_000_000}, metrics=[
                          Metric("max_rel_period_error", 0.2, "ratio", probe),
                          Metric("blind_time_ns", blind_ns, "ns", probe),
                          Metric("max_rel_period_error", 0.1, "ratio", OWN_VIEW),
                          Metric("load_loadavg_1m", 0.5, "", "")])


def test_a_runs_own_subject_is_what_its_benchmark_declares():
    assert plugins.traits("squarewave").subject == "probe" and plugins.traits("cyclictest").subject == ""
    run = wave("vpin", "w")
    assert subject_of(run) == "vpin" and own(run, "max_rel_period_error") == 0.2
    assert own_metric(run, "load_loadavg_1m").subject == ""  # a run-wide metric, when its own has none
    # the record itself asks for the subject it is given: "" is the run as a whole
    assert run.metric("max_rel_period_error") is None and run.metric("max_rel_period_error", OWN_VIEW) == 0.1
    threads = run_record(cell("cyclictest", {"policy": "fifo"}), metrics=[
        Metric("latency_max_ns", 40.0, "ns"), Metric("latency_max_ns", 30.0, "ns", "thread1")])
    assert subject_of(threads) == "" and own(threads, "latency_max_ns") == 40.0
    assert threads.metric("latency_max_ns", "thread1") == 30.0


def test_an_observer_is_asked_what_it_is_never_compared_by_name(mirror):
    assert not observer(OWN_VIEW).independent and observer("vpin").independent
    assert (observer("mirror").independent, observer("mirror").location) == (False, "program")
    assert observer("no-longer-registered") == UNKNOWN_OBSERVER and UNKNOWN_OBSERVER.independent
    mine, polled, gone = [wave("mirror", "m")], [wave("vpin", "v")], [wave("no-longer-registered", "g")]
    # a probe that is not independent has no blind share and is read as the program's own view
    assert limits.blind_share(mine) is None
    assert limits.blind_share(polled) == (0.05, 0.05) and limits.blind_share(gone) == (0.05, 0.05)
    assert probe_label("mirror") == "mirror (the program's own timestamps)"
    assert probe_label(OWN_VIEW) == "self (the program's own timestamps)"
    assert probe_label("vpin") == "vpin (independent probe)"
    lines = _evidence_line("board", {}, mine + polled).plain.splitlines()
    assert "  probe mirror: the program's own timestamps (no independent check)" in lines
    assert "  probe vpin: independent of the program, blind 5 % of the measured time" in lines  # one run
