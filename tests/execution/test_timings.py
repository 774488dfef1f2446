"""`jitterlab run --timings FILE`: every phase of the command and of each run timed as one JSON line,
nested as the phases are, without changing what the runs store (fake targets: nothing real runs)."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from jitterlab.execution.timings import RUN_PHASES
from jitterlab.store.catalog import Store
from jitterlab.targets import fake
from tests.execution import fakes
from tests.execution.test_runner import campaign, nothing_left_running, run


@pytest.fixture
def plan(monkeypatch):
    monkeypatch.setattr(fake, "OPENED", [])
    return fakes.register(monkeypatch)


def stored(results) -> list[tuple]:
    store = Store(results, create=False)
    try:
        return sorted((r.target, r.repetition, r.status, sorted((k, m.value) for k, m in r.metrics.items()))
                      for r in store.runs())
    finally:
        store.close()


def test_every_run_phase_is_timed_once_per_run_inside_its_run(tmp_path, plan):
    timings = tmp_path / "timings.jsonl"
    assert run(campaign(tmp_path, targets=("a", "b"), reps=2), "--timings", str(timings)) == 0
    lines = [json.loads(line) for line in timings.read_text().splitlines()]
    assert all(set(p) == {"phase", "target", "start_s", "end_s"} and p["end_s"] >= p["start_s"]
               for p in lines)
    counts = Counter((p["phase"], p["target"]) for p in lines)
    for target in ("a", "b"):
        assert counts[("run", target)] == 2
        for phase in (*RUN_PHASES, "commit", "scratch removal"):
            assert counts[(phase, target)] == 2, (phase, target)
        for phase in ("target prepare", "deploy (build programs)", "analysis warm (waited)"):
            assert counts[(phase, target)] == 1, (phase, target)
    for phase in ("open (store, preflight)", "preflight (open targets)", "announce", "measure (the runner)",
                  "end (tables, summary screen)", "close"):
        assert counts[(phase, "")] == 1, phase
    # each run's phases lie inside that run, in the order execution/run.py calls them
    for target in ("a", "b"):
        whole = sorted((p for p in lines if p["phase"] == "run" and p["target"] == target),
                       key=lambda p: p["start_s"])
        for one in whole:
            inside = [p for p in lines if p["target"] == target and p["phase"] != "run"
                      and one["start_s"] <= p["start_s"] and p["end_s"] <= one["end_s"]]
            assert [p["phase"] for p in sorted(inside, key=lambda p: p["start_s"])] == [
                *RUN_PHASES, "scratch removal", "commit"]
    nothing_left_running()


def test_timed_runs_store_what_untimed_runs_store(tmp_path, plan):
    (tmp_path / "timed").mkdir()
    (tmp_path / "plain").mkdir()
    assert run(campaign(tmp_path / "plain", reps=2)) == 0
    assert run(campaign(tmp_path / "timed", reps=2), "--timings", str(tmp_path / "t.jsonl")) == 0
    assert stored(tmp_path / "timed" / "results") == stored(tmp_path / "plain" / "results")
    assert (plan.counts["start fake"], plan.counts["stop fake"]) == (2, 2)  # the load kept, timed or not


def test_a_timings_file_that_cannot_be_written_is_one_line_naming_the_option(tmp_path, plan, capsys):
    where = tmp_path / "no-such-dir" / "t.jsonl"
    assert run(campaign(tmp_path, reps=1), "--timings", str(where)) == 2
    err = capsys.readouterr().err
    assert "--timings" in err and str(where) in err.replace("\n", "")
    assert not (tmp_path / "results").exists() or stored(tmp_path / "results") == []

