"""The scpi probe against simulated instruments (pyvisa-sim, tests/data/scpi/instruments.yaml): one
per shipped profile, read to exactly known figures, and instruments that refuse a command, never
answer, or saw no signal. Profiles are data: shipped ones load, bad ones are one-line errors."""

from __future__ import annotations

import sqlite3
import time
from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.cli.main import main
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import OutsideSignal
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.measure.squarewave.probes.scpi import UNAVAILABLE, period_statistics_metrics
from jitterlab.measure.squarewave.probes.scpi_profile import load_profile, shipped
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.fake import FakeTarget

pytest.importorskip("pyvisa_sim")

SIM = f"{Path(__file__).parent.parent / 'data' / 'scpi' / 'instruments.yaml'}@sim"
SCPI = plugins.PROBES.get("scpi", "test")
RESOURCES = {
    "rto": "USB0::0x0AAD::0x0197::100938::INSTR",
    "rtb": "USB0::0x0AAD::0x01D6::102030::INSTR",
    "keysight": "USB0::0x2A8D::0x1766::MY12345678::INSTR",
    "rigol": "USB0::0x1AB1::0x04CE::DS1ZA000000001::INSTR",
    "rto-old": "USB0::0x0AAD::0x0197::100001::INSTR",
    "rto-silent": "USB0::0x0AAD::0x0197::100002::INSTR",
    "rto-nosignal": "USB0::0x0AAD::0x0197::100003::INSTR",
}
# every simulated instrument reports these period statistics (seconds)
EXPECTED = {"mean_period_ns": 1_000_100, "min_period_ns": 998_000, "max_period_ns": 1_001_300,
            "std_period_ns": 250, "max_rel_period_error": 0.002, "max_delay": 0.0013, "max_early": 0.002}


def _ctx(tmp_path: Path, resource: str, profile: str, channel: str = "1") -> RunContext:
    options = {"resource": resource, "profile": profile, "channel": channel, "backend": SIM,
               "timeout": 300_000_000}
    settings = RunSettings(warmup_ns=50_000_000, options={"probes": {"scpi": options}})
    cell = squarewave_cell("c-fifo", 1_000_000, probe="scpi", pin="external")
    return RunContext(FakeTarget(), settings, cell, 0, "/s", tmp_path, "/b", Placement(None, None), True)


def _own(n_edges: int = 2101) -> SelfLog:
    """The program's log: 1 ms wave; after the 50 ms warm-up, 2001 edges = 1000 whole periods."""
    t = np.arange(n_edges, dtype=np.int64) * 500_000
    return SelfLog(t, (np.arange(n_edges) % 2 == 0).astype(np.uint8), "monotonic", "c-fifo", 0)


def _measure(ctx: RunContext, wait_s: float = 0.15, own: SelfLog | None = None, pin: str = "external"):
    probe = SCPI(ctx)
    try:
        probe.start(PinHandle(pin, (OutsideSignal(),) if pin == "external" else ()))
        time.sleep(wait_s)  # past the warm-up, when the statistics are reset once more
        return probe.stop(own if own is not None else _own())
    finally:
        probe.close()


@pytest.mark.parametrize("profile,instrument,channel,count", [
    ("rs-rto", "rto", "1", 1000), ("rs-rtb", "rtb", "2", 40), ("keysight", "keysight", "1", 1000),
    ("rigol", "rigol", "1", None)])
def test_each_shipped_profile_reads_its_instruments_statistics(tmp_path, profile, instrument, channel, count):
    capture = _measure(_ctx(tmp_path, RESOURCES[instrument], profile, channel))
    summary = {m.name: m.value for m in capture.summary}
    assert {k: summary[k] for k in EXPECTED} == pytest.approx(EXPECTED, rel=1e-12)
    assert summary.get("n_periods") == count
    assert len(capture.t_ns) == 0, "an instrument of statistics hands no edges"
    assert set(UNAVAILABLE) <= set(capture.unavailable)
    assert ("n_periods" in capture.unavailable) == (count is None)
    coverage = {m.name: m.value for m in capture.metrics}.get("probe_coverage")
    messages = " ".join(w.message for w in capture.warnings)
    assert "not the program's wave" in messages
    assert "statistics include it" not in messages, "the warm-up reset happened"
    if count == 1000:
        assert coverage == 1.0 and "periods:" not in messages
    if count == 40:
        assert coverage == 0.04 and "the instrument measured 40 of about 1000 periods" in messages


def test_statistics_become_metrics_exactly():
    stats = {"mean": Decimal("1.0001E-3"), "min": Decimal("9.98E-4"), "max": Decimal("1.0013E-3"),
             "std": Decimal("2.5E-7"), "count": Decimal(1000)}
    got = {m.name: m.value for m in period_statistics_metrics(stats, 1_000_000, "scpi")}
    assert got == {**EXPECTED, "n_periods": 1000}
    assert all(m.subject == "scpi" for m in period_statistics_metrics(stats, 1_000_000, "scpi"))


def test_an_instrument_that_refuses_a_setup_command(tmp_path):
    with pytest.raises(RunFailed, match=r"refused the setup of profile 'rs-rto' "
                       r"\(-113,\"Undefined header\"\); is it an instrument of that family\?"):
        _measure(_ctx(tmp_path, RESOURCES["rto-old"], "rs-rto"))


def test_an_instrument_that_never_answers(tmp_path):
    with pytest.raises(RunFailed, match=r"did not answer '\*IDN\?' within 300ms: is it on and reachable\?"):
        _measure(_ctx(tmp_path, RESOURCES["rto-silent"], "rs-rto"))


def test_an_instrument_of_another_family(tmp_path):
    with pytest.raises(RunFailed, match=r"is 'KEYSIGHT TECHNOLOGIES,DSO-X 3024T.*', not a 'Rohde&Schwarz,RT' "
                       r"as profile 'rs-rto' expects"):
        _measure(_ctx(tmp_path, RESOURCES["keysight"], "rs-rto"))


def test_an_instrument_that_saw_no_signal(tmp_path):
    with pytest.raises(RunFailed, match=r"the instrument has no period mean \(9.91E37\)") as caught:
        _measure(_ctx(tmp_path, RESOURCES["rto-nosignal"], "rs-rto"))
    assert caught.value.status == "unmeasurable"


@pytest.mark.filterwarnings("ignore:read string doesn't end with termination characters")
def test_an_address_with_nothing_like_the_instrument_behind_it(tmp_path):
    with pytest.raises(RunFailed, match=r"^instrument USB0::0x1::0x2::3::INSTR is '', not a "
                       r"'Rohde&Schwarz,RT' as profile 'rs-rto' expects"):
        _measure(_ctx(tmp_path, "USB0::0x1::0x2::3::INSTR", "rs-rto"))


def test_a_run_shorter_than_the_warmup_says_the_statistics_include_it(tmp_path):
    capture = _measure(_ctx(tmp_path, RESOURCES["rto"], "rs-rto"), wait_s=0)
    assert any("statistics include it" in w.message for w in capture.warnings)


def test_the_shipped_profiles_load():
    assert set(shipped()) == {"rs-rto", "rs-rtb", "keysight", "rigol"}
    for name in shipped():
        profile = load_profile(name, "probes.scpi.profile")
        assert profile.setup and profile.reset and {"mean", "min", "max", "std"} <= set(profile.read)


GOOD = """
idn = "ACME"
error_query = "SYST:ERR?"
setup = ["MEAS:PER CH{channel}"]
reset = ["MEAS:STAT:RES"]
[read]
mean = { query = "MEAS:STAT? CH{channel}", field = 0 }
min = { query = "MEAS:STAT? CH{channel}", field = 1 }
max = { query = "MEAS:STAT? CH{channel}", field = 2 }
std = { query = "MEAS:STAT? CH{channel}", field = 3 }
"""


def test_a_users_profile_is_read_from_its_path(tmp_path):
    path = tmp_path / "acme.toml"
    path.write_text(GOOD)
    profile = load_profile(str(path), "c.toml: probes.scpi.profile")
    assert profile.commands(profile.setup, "3") == ["MEAS:PER CH3"]
    assert profile.query("max", "3").query == "MEAS:STAT? CH3" and profile.query("max", "3").field == 2
    assert profile.query("count", "3") is None


@pytest.mark.parametrize("text,message", [
    (GOOD.replace("idn", "idm"), r"unknown key 'idm'; did you mean 'idn'"),
    (GOOD.replace('mean = { query = "MEAS:STAT? CH{channel}", field = 0 }\n', ""), r"read: missing mean"),
    (GOOD.replace("field = 1", "field = 'x'"), r"read.min: expected \{ query"),
    (GOOD.replace("[read]", "[read]\nmedian = { query = 'X?' }"), r"read.median: unknown statistic"),
    (GOOD + "\n[[", r"not valid TOML"),
])
def test_a_bad_profile_is_a_one_line_error(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(UserError, match=message) as caught:
        load_profile(str(path), "c.toml: probes.scpi.profile")
    assert "\n" not in str(caught.value)


def test_an_unknown_shipped_profile_names_the_shipped_ones():
    with pytest.raises(UserError, match=r"unknown profile 'rs-rt0'; did you mean 'rs-rto'.*shipped: "
                       r"keysight, rigol, rs-rtb, rs-rto"):
        load_profile("rs-rt0", "c.toml: probes.scpi.profile")


CAMPAIGN = """
[campaign]
name = "scope"
duration = "300ms"
warmup = "50ms"
[[target]]
name = "local"
kind = "local"
workdir = "{workdir}"
[matrix]
benchmark = "squarewave"
impl = "c-file"
period = "1ms"
probe = "scpi"
pin = "external"
[probes.scpi]
resource = "{resource}"
profile = "keysight"
backend = "{backend}"
"""


@pytest.mark.slow
def test_a_campaign_stores_the_instruments_figures_and_leaves_percentiles_out(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w", resource=RESOURCES["keysight"], backend=SIM))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 0
    db = sqlite3.connect(tmp_path / "r" / "results.sqlite")
    rows = db.execute("SELECT probe, name, value FROM metrics")
    metrics = {(probe, name): value for probe, name, value in rows}
    assert metrics[("scpi", "mean_period_ns")] == 1_000_100 and metrics[("scpi", "n_periods")] == 1000
    assert ("scpi", "p99_rel_period_error") not in metrics, "unavailable, not invented"
    assert ("self", "p99_rel_period_error") in metrics
    warnings = " ".join(str(r) for r in db.execute("SELECT * FROM warnings"))
    assert "the scpi probe cannot give p50_rel_period_error" in warnings


def test_a_campaign_without_the_instruments_address_is_refused(tmp_path):
    path = tmp_path / "c.toml"
    text = CAMPAIGN.format(workdir=tmp_path / "w", resource="x", backend=SIM).replace('resource = "x"\n', "")
    path.write_text(text)
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 2


def test_a_simulated_instrument_never_reads_as_the_programs_pin(tmp_path):
    capture = _measure(_ctx(tmp_path, RESOURCES["rto"], "rs-rto"), pin="gpiod")
    metrics = {m.name: m for m in capture.metrics}
    assert metrics["program_pin_watched"].value == 0 and metrics["program_pin_watched"].subject == "scpi"
    assert metrics["program_pin_watched"].direction == "none" and metrics["program_pin_watched"].unit == ""
    messages = [w.message for w in capture.warnings]
    assert any("is a simulated instrument: its figures are made up" in m for m in messages)
    assert not any("watched another signal" in m for m in messages), "its statistics fit the program's"


@pytest.mark.parametrize("own,expected", [
    (SelfLog(np.arange(2101, dtype=np.int64) * 1_000_000, (np.arange(2101) % 2).astype(np.uint8),
             "monotonic", "c-fifo", 0),
     "the instrument's mean period (1.0001ms) is not the program's (2ms by its own log): it watched another"),
    (SelfLog(np.arange(201, dtype=np.int64) * 500_000, (np.arange(201) % 2).astype(np.uint8),
             "monotonic", "c-fifo", 0),
     "the instrument counted 1,000 periods, the program made 100: it watched another signal"),
])
def test_statistics_that_are_not_the_programs_are_marked(tmp_path, own, expected):
    capture = _measure(_ctx(tmp_path, RESOURCES["rto"], "rs-rto"), own=own, pin="gpiod")
    assert {m.name: m.value for m in capture.metrics}["program_pin_watched"] == 0
    assert any(expected in w.message and "probes.scpi.channel" in w.remedy for w in capture.warnings)
