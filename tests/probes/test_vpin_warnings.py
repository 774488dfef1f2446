"""The vpin probe's blind warning gives the remedy that fits the machine it ran on: who jitterlab is
there, whether RT throttling was lifted for the runs, and whether a container's host owns it (what
the runner hands every run as RunContext.throttling, from its target's sysinfo)."""

from __future__ import annotations

import json

import pytest

from jitterlab.cli.main import main
from jitterlab.execution.runner import throttling_of
from jitterlab.measure.context import Throttling
from jitterlab.measure.squarewave.probes.vpin import OWN_CPU, _observer_warnings
from jitterlab.model.facts import SystemFacts
from tests.execution import fakes

THROTTLED = {"rt_runtime_us": 950000, "rt_period_us": 1000000}
BLIND = {"sched": "fifo", "blind_ns": 80_000_000}  # 8 % of a 1 s run


def remedy(info) -> str:
    """The remedy for a run whose target's sysinfo is `info`, as the runner hands it over."""
    [warning] = _observer_warnings(BLIND, 1_000_000_000, throttling_of(SystemFacts.from_json(info)))
    assert warning.message.startswith("the vpin probe was blind 8.0% of the run")
    return warning.remedy


def test_root_in_a_container_is_sent_to_the_host_never_told_to_run_as_root():
    info = {**THROTTLED, "user_id": 0, "container": "docker",
            "rt_throttling": {"setting": "lift", "needed": True, "changed": False,
                              "why": "inside a container (docker)"}}
    text = remedy(info)
    assert text.startswith(OWN_CPU + "; RT throttling stopped it too: inside a container (docker) the "
                           "setting belongs to its host: there, sysctl -w kernel.sched_rt_runtime_us=-1")
    assert "run as root" not in text and "run jitterlab as root" not in text


def test_lifted_throttling_is_not_advised_again():
    info = {**THROTTLED, "rt_runtime_us": -1, "user_id": 0,
            "rt_throttling": {"setting": "lift", "needed": True, "changed": True}}
    assert remedy(info) == (f"{OWN_CPU}: RT throttling was off, so other tasks, interrupts or the hypervisor "
                            "took it")


@pytest.mark.parametrize("setting, words", [("lift", "run jitterlab as root: with campaign.rt_throttling"),
                                             ("keep", 'campaign.rt_throttling = "lift" lifts it')])
def test_a_user_who_is_not_root_learns_what_root_or_the_setting_would_do(setting, words):
    info = {**THROTTLED, "user_id": 1000, "rt_throttling": {"setting": setting, "needed": True}}
    assert words in remedy(info)


def test_without_its_targets_facts_the_remedy_names_both_causes():
    [warning] = _observer_warnings(BLIND, 1_000_000_000, None)
    assert warning.remedy == f'{OWN_CPU}; and RT throttling off (campaign.rt_throttling = "lift", as root)'


def test_blind_intervals_beyond_the_observers_list_are_said_not_excluded():
    """The observer lists 2**20 blind intervals; the periods in those it had no room for are not
    excluded, and the warning says so instead of claiming every blind period was."""
    [full] = _observer_warnings({**BLIND, "blind_dropped": 12}, 1_000_000_000, None)
    assert full.message == ("the vpin probe was blind 8.0% of the run; periods touching the blind intervals "
                            "it listed were excluded, not those in the 12 beyond its list's room")
    [short] = _observer_warnings({"sched": "fifo", "blind_ns": 1_000, "blind_dropped": 3}, 10**12, None)
    assert short.message == ("the vpin observer could not list 3 of its blind intervals: the periods in "
                             "them were not excluded")
    assert _observer_warnings({"sched": "fifo", "blind_ns": 1_000, "blind_dropped": 0}, 10**12, None) == []


def test_each_run_gets_its_targets_facts(tmp_path, monkeypatch):
    fakes.register(monkeypatch)
    seen = []
    prepare = fakes.FakeBenchmark.prepare
    monkeypatch.setattr(fakes.FakeBenchmark, "prepare",
                        lambda self, ctx: seen.append(ctx.throttling) or prepare(self, ctx))
    path = tmp_path / "c.toml"
    path.write_text("\n".join(["[campaign]", 'name = "c"', "repetitions = 2", 'duration = "10ms"',
                               'warmup = "1ms"', 'load_warmup = "1ms"',
                               "[[target]]", 'name = "t"', 'kind = "fake"',
                               f"workdir = {json.dumps(str(tmp_path / 't'))}",
                               "[matrix]", 'benchmark = "fake"', 'load = "fake"', ""]))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 0
    assert len(seen) == 2 and all(isinstance(t, Throttling) for t in seen)  # known, whatever it is here
