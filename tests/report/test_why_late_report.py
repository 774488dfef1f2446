"""The HTML report's section on why periods were late, read back from a store of traced runs with
exact answers (tests/support.py explained_store): the cells' shares and fixes in words, the
stacked bar's segments 70 : 20 : 10, the worst period's timeline with the probe's edges and its
spans 700 : 200 : 100 µs; in headless Chromium without console errors."""

from __future__ import annotations

import re

import pytest

from jitterlab.report.html import render
from jitterlab.store.catalog import Store
from tests.report.test_browser import chromium
from tests.support import explained_store


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("whyhtml")
    store = Store(explained_store(root), create=False)
    out = root / "report.html"
    render(store, out, figure_files=False)
    store.close()
    return out


def widths(svg: str, gid: str) -> list[float]:
    """The widths (in the SVG's units) of the patches drawn with this gid."""
    found = []
    for body in re.findall(rf'<g id="{gid}">\s*(?:<defs>\s*)?<path (?:id="[^"]*" )?d="([^"]+)"', svg):
        xs = [float(x) for x in re.findall(r"[ML] ([-\d.]+) [-\d.]+", body)]
        found.append(max(xs) - min(xs))
    return found


def figure(html: str, name: str) -> str:
    at = html.index(f'data-figure="{name}"')
    return html[at:html.index("</svg>", at)]


def ratio(a: float, b: float) -> float:
    return round(a / b, 2)


def test_the_section_says_each_traced_cell_with_its_fixes(page):
    html = page.read_text()
    at = html.index('<section id="why-late">')
    section = html[at:html.index("</section>", at)]
    assert '<a href="#why-late">Why late</a>' in html
    assert ("c-mmap 1ms cpu (vpin)</td><td>70 % preempted by stress-ng-cpu [SCHED_OTHER], 20 % IRQ 11 "
            "virtio0, 10 % not covered by the trace (2 runs, 3 periods, 2.5 ms late in all)") in section
    assert "(tuning isolated)" in section and "IRQ 11&#39;s affinity away" in section
    assert "idle (vpin)" not in section  # the untraced cell has no line
    assert "traced (12,345 events)" in section and "trace-cmd report " in section
    assert "run aaa111: board c-mmap 1ms cpu (vpin), repetition 1 (traced)" in html  # its own figures
    assert ("Traced, nothing explained: run ddd444 (board c-fifo 1ms cpu (vpin)): no mapping between the "
            "probe&#39;s edges and the trace (no program log)") in section


def test_the_stacked_bar_splits_the_cell_70_20_10(page):
    svg = figure(page.read_text(), "why-late-shares")
    [wakeup], [irq], [uncovered] = (widths(svg, f"share-{c}") for c in ("wakeup", "irq", "uncovered"))
    assert (ratio(wakeup, uncovered), ratio(irq, uncovered)) == (7.0, 2.0)


def test_the_timeline_draws_the_edges_and_the_cpus_spans(page):
    svg = figure(page.read_text(), "why-late-timeline")
    assert "aaa111 period 280, 1 ms late" in svg
    assert 'id="probe-wave"' in svg and svg.count('id="due"') == svg.count('id="edge"') == 2
    [wakeup], [irq], [uncovered] = (widths(svg, f"span-{c}") for c in ("wakeup", "irq", "uncovered"))
    assert (ratio(wakeup, uncovered), ratio(irq, uncovered)) == (7.0, 2.0)
    assert "CPU 1" in svg and "another task ran instead" in svg


def test_an_emulated_explanation_is_marked_in_the_report(tmp_path):
    store = Store(explained_store(tmp_path, emulated=True), create=False)
    render(store, tmp_path / "r.html", figure_files=False)
    store.close()
    html = (tmp_path / "r.html").read_text()
    assert "functional evidence only (emulated CPU)" in html
    assert "1 ms late — functional evidence only" in figure(html, "why-late-timeline")


def test_the_report_loads_in_chromium_without_console_errors(page, tmp_path):
    done = chromium(tmp_path, "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri())
    assert [line for line in done.stderr.splitlines() if "CONSOLE" in line] == []
    assert done.stdout.count('data-figure="why-late-shares"') == 1
    assert done.stdout.count('data-figure="why-late-timeline"') == 1
