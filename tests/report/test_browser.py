"""The HTML report in headless Chromium: loads without console errors, every figure non-blank."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from matplotlib.image import imread

from jitterlab.report.html import render

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--proxy-server=127.0.0.1:9"]  # any network use fails fast


def chromium(tmp_path, *args):
    if CHROMIUM is None:
        print("SKIP reason: chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium)")
    done = subprocess.run([CHROMIUM, *FLAGS, f"--user-data-dir={tmp_path / 'profile'}", *args],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    return done


@pytest.fixture(scope="module")
def report(report_store, tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "report.html"
    render(report_store, out, campaigns=["board-1.10", "board-1.11"], max_run_figures=2,
           figure_files=False)
    return out


def test_loads_without_console_errors_and_has_every_figure(report, tmp_path):
    done = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", report.as_uri())
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line]
    assert console == []
    dom = done.stdout
    assert dom.count('data-figure="paper"') == 1
    assert dom.count('data-figure="histogram"') == dom.count('data-figure="timeline"') == 2
    assert dom.count('data-figure="compare"') == 1
    assert dom.count("<svg") == 6


def test_screenshot_is_not_blank(report, tmp_path):
    shot = tmp_path / "shot.png"
    chromium(tmp_path, f"--screenshot={shot}", "--window-size=1400,5000", "--hide-scrollbars",
             report.as_uri())
    pixels = imread(shot)[..., :3]
    ink = (pixels < 0.9).any(axis=-1)
    assert ink.mean() > 0.02  # text, tables and plots, not a blank page
    # the figures are drawn: coloured (non-grey) pixels exist, the plot lines of C0..C3
    colour = pixels.max(axis=-1) - pixels.min(axis=-1) > 0.3
    assert colour.sum() > 2000
