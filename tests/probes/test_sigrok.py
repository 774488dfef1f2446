"""The sigrok probe: its refusals, what it makes of sigrok-cli's complaints, a capture of the real
demo device decoded to the exact period, a capture cut short, and a whole campaign with it."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.cli.main import main
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import OutsideSignal
from jitterlab.measure.squarewave.probes.logs import SelfLog
from jitterlab.measure.squarewave.probes.sigrok import _scan_channels, classify, demo_period_ns, format_rate
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import remove_records

SIGROK = plugins.PROBES.get("sigrok", "test")
needs_sigrok = pytest.mark.skipif(shutil.which("sigrok-cli") is None, reason="apt install sigrok-cli")


def settings(duration_ns: int = 1_000_000_000, **options) -> RunSettings:
    return RunSettings(duration_ns=duration_ns, options={"probes": {"sigrok": options}})


def test_a_samplerate_too_low_for_the_period_is_refused_with_the_fix():
    cell = squarewave_cell(period_ns=1_000_000, probe="sigrok", pin="external")
    SIGROK.check(cell, settings(samplerate=40_000), Where("c.toml", ("matrix",)))  # 20 per half period
    with pytest.raises(UserError, match=r'^c.toml: probes.sigrok.samplerate: 39kHz takes 19.5 samples per '
                       r'half period of 1ms, fewer than 20; use samplerate >= 40kHz or a period >= '
                       r'1.02564ms'):
        SIGROK.check(cell, settings(samplerate=39_000), Where("c.toml", ("matrix",)))


def test_the_demo_driver_needs_pin_external_and_its_own_rate_and_period():
    check = SIGROK.check
    demo = {"driver": "demo", "channel": "D7", "samplerate": 200_000}
    matrix = Where("c", ("matrix",))
    check(squarewave_cell(period_ns=1_280_000, probe="sigrok", pin="external"), settings(**demo), matrix)
    with pytest.raises(UserError, match=r'^c: matrix.pin: driver "demo" captures sigrok\'s own test pattern, '
                       r'not pin \'vpin\'; use pin = "external"'):
        check(squarewave_cell(period_ns=1_280_000, probe="sigrok"), settings(**demo), Where("c", ("matrix",)))
    with pytest.raises(UserError, match=r'matrix.period: the demo pattern on D7 has a period of 1.28ms; '
                       r'set period = "1.28ms"'):
        check(squarewave_cell(period_ns=1_000_000, probe="sigrok", pin="external"), settings(**demo),
              Where("c", ("matrix",)))
    with pytest.raises(UserError, match=r'probes.sigrok.samplerate: the demo device makes its pattern at '
                       r'200kHz; set samplerate = "200kHz"'):
        check(squarewave_cell(period_ns=1_280_000, probe="sigrok", pin="external"),
              settings(**{**demo, "samplerate": 24_000_000}), Where("c", ("matrix",)))
    assert demo_period_ns("D0", 200_000) == 10_000 and demo_period_ns("A0", 200_000) is None


def test_a_campaign_reads_the_options_and_refuses_a_bad_rate(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w", rate='"fast"'))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 2


@pytest.mark.parametrize("log,expected", [
    ("No devices found.", "no fx2lafw device found: plug the analyzer in to this machine"),
    ("sr: fx2lafw: Unable to claim USB interface: LIBUSB_ERROR_BUSY", "the fx2lafw analyzer is busy"),
    ("sr: usb: LIBUSB_ERROR_ACCESS", "no permission to open the fx2lafw analyzer"),
    ("Failed to set device option 'samplerate': invalid argument.", "refused an option"),
    ("Driver fx2lafw not found.", "sigrok knows no driver 'fx2lafw'"),
    ("something odd\nand then this\n", "sigrok-cli said: and then this"),
])
def test_sigrok_complaints_become_a_cause_and_a_fix(log, expected):
    assert expected in classify(log, "fx2lafw")
    assert "\n" not in classify(log, "fx2lafw")


def test_scan_output_gives_the_devices_channels():
    out = ("The following devices were found:\n"
           "demo - Demo device with 13 channels: D0 D1 D2 D3 D4 D5 D6 D7 A0 A1 A2 A3 A4\n")
    assert _scan_channels(out)[:3] == ["D0", "D1", "D2"] and len(_scan_channels(out)) == 13
    assert _scan_channels("") == []
    rates = [format_rate(r) for r in (24_000_000, 200_000, 1_500_000, 7)]
    assert rates == ["24MHz", "200kHz", "1.5MHz", "7Hz"]


def _ctx(tmp_path: Path, period_ns: int, duration_ns: int, **options) -> RunContext:
    target = LocalTarget("local", str(tmp_path / "w"))
    cell = squarewave_cell("python", period_ns, probe="sigrok", pin="external")
    run_settings = RunSettings(duration_ns=duration_ns, options={"probes": {"sigrok": options}})
    local = tmp_path / "local"
    local.mkdir()
    return RunContext(target, run_settings, cell, 0, str(tmp_path / "s"), local, "/b", Placement(None, None),
                      True, controller=target)


def _program(period_ns: int, n: int, start_ns: int = 0) -> SelfLog:
    t = start_ns + np.arange(n, dtype=np.int64) * (period_ns // 2)
    return SelfLog(t, (np.arange(n) % 2 == 0).astype(np.uint8), "monotonic", "test", 0)


@needs_sigrok
@pytest.mark.parametrize("channel,period_ns", [("D7", 1_280_000), ("D5", 320_000)])
def test_the_demo_devices_wave_is_decoded_to_its_exact_period(tmp_path, channel, period_ns):
    ctx = _ctx(tmp_path, period_ns, 300_000_000, driver="demo", channel=channel, samplerate=200_000,
               margin=100_000_000)
    probe = SIGROK(ctx)
    try:
        probe.start(PinHandle("external", (OutsideSignal(),)))
        capture = probe.stop(_program(period_ns, 200))
    finally:
        probe.close()
    n_samples = 200_000 * 500_000_000 // 1_000_000_000  # rate x (margin + duration + margin)
    assert len(capture.t_ns) == (n_samples - 1) // (period_ns // 2 // 5_000)  # every edge, none at sample 0
    periods = capture.t_ns[2:] - capture.t_ns[:-2]
    assert set(periods.tolist()) == {period_ns}
    metrics = {m.name: m.value for m in capture.metrics}
    assert metrics["probe_resolution_ns"] == 5_000
    # the demo's own wave: every edge of a made-up program in step with it pairs, yet it is marked, and
    # no clock offset is stored for it
    assert metrics["program_pin_watched"] == 0 and metrics["align_matched_edges"] == 200
    assert "align_offset_ns" not in metrics and "self_lag_spread_max_ns" not in metrics
    assert any("not the program's wave" in w.message for w in capture.warnings)
    assert not (ctx.local_dir / "sigrok.bin").exists(), "the raw capture does not outlive the run"
    remove_records(ctx.target)  # what the end of a run does
    assert LocalTarget("x", ctx.target.workdir).run(["ls", f"{ctx.target.workdir}/live"]).stdout == ""


@needs_sigrok
def test_an_analyzer_that_is_not_there(tmp_path):
    ctx = _ctx(tmp_path, 1_000_000, 100_000_000, driver="fx2lafw", conn="9.99", samplerate=1_000_000)
    probe = SIGROK(ctx)
    with pytest.raises(RunFailed, match=r"^no fx2lafw:conn=9.99 device found: plug the analyzer in"):
        probe.start(PinHandle("gpiod", ()))
    probe.close()


def _fake_sigrok(tmp_path: Path, monkeypatch, body: str) -> None:
    """A sigrok-cli on PATH that scans like the demo device and captures as `body` says."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "sigrok-cli"
    script.write_text(f"""#!/bin/sh
case "$*" in *--scan*) echo "fx2lafw - Fake with 8 channels: D0 D1 D2 D3 D4 D5 D6 D7"; exit 0;; esac
for last; do :; done
{body}
""")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{Path('/usr/bin')}:{Path('/bin')}")


def test_a_capture_that_ended_early_fails_the_run_with_the_cause(tmp_path, monkeypatch):
    # 500 of the 1200 samples asked, then the device gave up
    _fake_sigrok(tmp_path, monkeypatch, 'head -c 500 /dev/zero > "$last"; '
                 'echo "sr: fx2lafw: Device only sent 500 samples." >&2; exit 0')
    ctx = _ctx(tmp_path, 1_000_000, 100_000_000, samplerate=4_000, margin=100_000_000)
    probe = SIGROK(ctx)
    try:
        probe.start(PinHandle("gpiod", ()))
        with pytest.raises(RunFailed, match=r"sigrok.bin: ended early: 500 of 1200 samples \(sigrok-cli "
                           r"said: sr: fx2lafw: Device only sent 500 samples.; a lower "
                           r"probes.sigrok.samplerate"):
            probe.stop(_program(1_000_000, 20))
    finally:
        probe.close()


def test_a_capture_of_a_quiet_line_is_unmeasurable(tmp_path, monkeypatch):
    _fake_sigrok(tmp_path, monkeypatch, 'head -c 1200 /dev/zero > "$last"')
    ctx = _ctx(tmp_path, 1_000_000, 100_000_000, samplerate=4_000, margin=100_000_000)
    probe = SIGROK(ctx)
    try:
        probe.start(PinHandle("gpiod", ()))
        with pytest.raises(RunFailed, match=r"the analyzer saw no edge on D0 \(level stayed 0\); check the "
                           r"wiring \(pin to D0, ground to GND\)") as caught:
            probe.stop(_program(1_000_000, 20))
        assert caught.value.status == "unmeasurable"
    finally:
        probe.close()


def test_sigrok_cli_missing_on_the_controller(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    probe = SIGROK(_ctx(tmp_path, 1_000_000, 100_000_000))
    with pytest.raises(RunFailed, match="sigrok-cli is missing on the controller") as caught:
        probe.start(PinHandle("gpiod", ()))
    assert caught.value.status == "unavailable"


CAMPAIGN = """
[campaign]
name = "sg"
duration = "1s"
warmup = "50ms"
[[target]]
name = "local"
kind = "local"
workdir = "{workdir}"
[matrix]
benchmark = "squarewave"
impl = "python"
period = "1280us"
probe = "sigrok"
pin = "external"
[probes.sigrok]
driver = "demo"
channel = "D7"
samplerate = {rate}
margin = "200ms"
"""


@needs_sigrok
@pytest.mark.slow
def test_a_campaign_with_the_demo_device_stores_its_exact_figures_beside_the_programs(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(CAMPAIGN.format(workdir=tmp_path / "w", rate='"200kHz"'))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 0
    db = sqlite3.connect(tmp_path / "r" / "results.sqlite")
    rows = db.execute("SELECT probe, name, value FROM metrics")
    metrics = {(probe, name): value for probe, name, value in rows}
    assert metrics[("sigrok", "mean_period_ns")] == 1_280_000
    assert metrics[("sigrok", "max_rel_period_error")] == 0 and metrics[("sigrok", "std_period_ns")] == 0
    assert metrics[("sigrok", "probe_resolution_ns")] == 5_000
    assert metrics[("sigrok", "program_pin_watched")] == 0, "the demo's wave is not the program's"
    assert ("self", "max_rel_period_error") in metrics, "the program's own view is stored beside"
    warnings = json.dumps(db.execute("SELECT * FROM warnings").fetchall())
    assert "the sigrok figures describe the signal on D7 (the demo pattern)" in warnings


def _wave_file(path: Path, rises_s: np.ndarray, rate_hz: int, n_samples: int) -> None:
    """A raw one-byte-per-sample capture whose bit 0 is high from each rise for half a period."""
    samples = np.zeros(n_samples, dtype=np.uint8)
    for rise, fall in rises_s:
        samples[int(rise * rate_hz) : int(fall * rate_hz)] = 1
    samples.tofile(path)


@pytest.mark.parametrize("watched", [True, False])
def test_a_real_pins_capture_is_the_programs_only_when_it_aligns(tmp_path, monkeypatch, watched):
    # 40 kHz, 100 ms margins around a 100 ms run: 12000 samples; the program's 1 ms wave runs from
    # 100 ms to 200 ms of the capture; another signal of the same period runs through all of it
    rate, period_s = 40_000, 0.001
    first_s = 0.1 if watched else 0.00037
    n_periods = 50 if watched else 299
    rises = np.array([(first_s + k * period_s, first_s + (k + 0.5) * period_s) for k in range(n_periods)])
    _wave_file(tmp_path / "capture.bin", rises, rate, 12_000)
    _fake_sigrok(tmp_path, monkeypatch, f'cp {tmp_path / "capture.bin"} "$last"')
    ctx = _ctx(tmp_path, 1_000_000, 100_000_000, samplerate=rate, margin=100_000_000)
    program = _program(1_000_000, 100, start_ns=7_100_000_000 + 3_000)  # its clock, 3 µs of lag
    probe = SIGROK(ctx)
    try:
        probe.start(PinHandle("gpiod", ()))
        capture = probe.stop(program)
    finally:
        probe.close()
    metrics = {m.name: m.value for m in capture.metrics}
    messages = " ".join(w.message for w in capture.warnings)
    assert metrics["program_pin_watched"] == (1 if watched else 0)
    assert all(m.subject == "sigrok" and m.direction == "none" for m in capture.metrics
               if m.name == "program_pin_watched")
    if watched:
        assert metrics["align_offset_ns"] == 7_000_000_000 + 3_000 and not capture.warnings
        # on the program's clock, its median lag included
        assert capture.t_ns[0] == program.t_ns[0] and metrics["self_lag_spread_max_ns"] == 0
    else:
        assert "align_offset_ns" not in metrics, "no clock offset is stored for another signal"
        assert "the sigrok edges on D0 are not the program's pin's: " in messages
        assert "before or after the program's run, when its pin is quiet" in messages
        assert any("not the program's pin" in w.remedy for w in capture.warnings)
