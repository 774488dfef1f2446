"""The HTML report in headless Chromium: loads without console errors, every figure non-blank,
the paper figure's axis in %, every figure titled with its run, cell or target."""

from __future__ import annotations

import html
import re
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


def _figures(dom: str) -> list[tuple[dict, list[str]]]:
    """(the figure div's data-* attributes, the texts of its SVG) for every figure of the page."""
    out = []
    for m in re.finditer(r'<div class="figure[^"]*"([^>]*)>(.*?)</svg>', dom, re.S):
        attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', m.group(1)))
        texts = [html.unescape(t) for t in re.findall(r"<text[^>]*>([^<]*)</text>", m.group(2))]
        out.append((attrs, texts))
    return out


def test_paper_axis_in_percent_and_every_figure_titled(report, tmp_path):
    dom = chromium(tmp_path, "--dump-dom", report.as_uri()).stdout
    figures = _figures(dom)
    assert len(figures) == 6
    for attrs, texts in figures:
        kind = attrs["figure"]
        if kind == "paper":
            ticks = [t for t in texts if re.fullmatch(r"[\d,.]+ %", t)]
            assert {"1 %", "10 %", "100 %"} <= set(ticks), texts
            assert "board: maximum relative period error vs period" in texts
            assert {"load idle", "load cpu"} <= set(texts)  # the target once, in the figure's title
            assert not any(t.startswith("board — ") for t in texts)
            assert "caret above a point: ≥, a lower bound (periods the probe did not observe)" in texts
            assert any(t.endswith("µs") or t.endswith("ms") for t in texts)  # periods as durations
            # the failed run's × sits in the strip under the panels, named by its impl row
            assert {"failed", "× (strip below): repetitions without a value, with why"} <= set(texts)
            assert any(t.startswith("bash [image=") for t in texts), texts
        elif kind in ("histogram", "timeline"):  # named with the label that tells the groups apart
            named = rf"run {attrs['run']}: board \S+ \[image=1\.1[01]\] "
            assert any(re.match(named, t) for t in texts), texts
            if kind == "histogram":  # log-spaced bins over |error|, percentiles marked with values
                assert "|relative period error| [%, log-spaced bins]" in texts
                assert any(re.fullmatch(r"p99 [\d,.]+ %", t) for t in texts), texts
        elif kind == "compare":
            assert any(t.startswith("image=1.11 vs image=1.10") for t in texts), texts
            assert any(t.startswith("cpu impl=c-fifo period=1ms") for t in texts)  # rows name their cell
            # the legend names all four verdicts; the log axis carries factors (×0.8, ×1, ×2), not only ×1
            assert {"worse", "better"} <= set(texts) and any(t.startswith("undecided") for t in texts)
            assert any(t.startswith("same") for t in texts)
            assert len({t for t in texts if re.fullmatch(r"×[\d,.]+", t)}) >= 3 and "×1" in texts, texts
        else:
            raise AssertionError(f"untested figure kind {kind}")


def test_standard_section_figures_name_their_cells_and_runs(latency_store, tmp_path):
    """Bars and latency CCDFs of a latency benchmark render, each naming its runs."""
    out = tmp_path / "std.html"
    render(latency_store, out, figure_files=False)
    dom = chromium(tmp_path, "--dump-dom", out.as_uri()).stdout
    kinds = {attrs["figure"]: texts for attrs, texts in _figures(dom)}
    assert set(kinds) == {"bars", "distribution"}
    assert any(t.startswith("cyclictest: maximum latency (worst run) per cell") for t in kinds["bars"])
    # axis titles in words with their units, never a raw metric name
    assert "maximum latency [µs … ms] (log axis)" in kinds["bars"]
    assert "latency [µs … ms]" in kinds["distribution"]
    assert not any("_ns" in t for t in kinds["bars"] + kinds["distribution"])
    assert {"priority=95 idle (2 runs)", "priority=50 idle (2 runs)"} <= set(kinds["bars"])
    assert "40 ms" in kinds["bars"] or "10 ms" in kinds["bars"]  # log axis over the decades, in ms
    curves = [t for t in kinds["distribution"] if t.startswith("run ")]
    assert len(curves) == 2 and all("beyond the histogram" in t for t in curves)


WIDTHS = ("<script>document.body.dataset.widest = Math.max(...[...document.querySelectorAll('table')]"
          ".map(t => Math.ceil(t.getBoundingClientRect().right))); document.body.dataset.scroll = "
          "document.documentElement.scrollWidth;</script></body>")


def test_the_tables_fit_a_1400_px_window_and_runs_are_named_by_their_group(report, tmp_path):
    page = tmp_path / "measured.html"  # the report, with a script that measures it once laid out
    page.write_text(report.read_text().replace("</body>", WIDTHS))
    dom = chromium(tmp_path, "--window-size=1400,1000", "--dump-dom", page.as_uri()).stdout
    widest = int(re.search(r'data-widest="(\d+)"', dom).group(1))
    scroll = int(re.search(r'data-scroll="(\d+)"', dom).group(1))
    assert widest <= 1400 and scroll <= 1400, (widest, scroll)  # no column cut, no sideways scrolling
    cells = dom[dom.index('id="cells"'):dom.index('id="runs"')]
    assert '<span class="interval">[' in cells  # an interval under its value, not beside it
    headings = re.findall(r'<h3 id="run-[^"]+">([^<]+)</h3>', dom)
    assert headings and all(re.match(r"run \S+: board \S+ \[image=1\.1[01]\] ", h) for h in headings)
