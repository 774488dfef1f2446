"""Everything a person reads from a fixed store — `show`, `show RUN_ID`, `list`, the run's summary
and envelope, `compare`, and the HTML report — scanned for what the unit formatter and the table
titles exist to prevent: Python's dicts and lists, scientific notation, and metric names where
words are meant (a table header, a title, the headline of a run)."""

from __future__ import annotations

import io
import re
from html.parser import HTMLParser

import pytest
from rich.table import Table

from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.report.terminal import console, run_detail, runs_table, summary_tables
from jitterlab.report.warning_list import WarningList

RAW = re.compile(r"\{'|\[\{['\"]|\{\"\w+\": |\[\('")  # a dict or list as Python (or JSON) prints it
SCIENTIFIC = re.compile(r"(?<![\w.])[-+]?\d+(?:\.\d+)?e[-+]?\d+(?!\w)", re.IGNORECASE)

# a target's sysinfo with what its snapshot holds as nested data (tuning.parse)
TUNED_SYSINFO = {
    "hostname": "board", "kernel_release": "6.1.0-rt", "n_cpus": 4, "cpus_online": [0, 1, 2, 3],
    "isolcpus": [2, 3], "cpus": [{"cpu": 0, "governor": "performance", "cur_mhz": 1500.0}],
    "cpuidle_states": [{"name": "POLL", "latency_us": 0, "disabled": False},
                       {"name": "C6", "latency_us": 170, "disabled": True}],
    "thread_siblings": {"0": [0, 2], "1": [1, 3], "2": [0, 2], "3": [1, 3]},
    "irqs": [{"irq": 24, "cpus": [0], "actions": "eth0"}, {"irq": 25, "cpus": [0, 1], "actions": "mmc0"},
             {"irq": 26, "cpus": None, "actions": "timer"}],
    "bogomips": [108.0, 108.0, 108.0, 108.0], "mem_total_kb": 3_900_000, "uptime_s": 1.5e-05,
    "cpu_dma_latency_us": 2_000_000_000, "loadavg": [0.01, 0.05, 0.0],
    "runtimes": {"python3": {"path": "/usr/bin/python3", "version": "Python 3.11.2"}},
}


def metric_names(*stores) -> set[str]:
    return {name for store in stores for r in store.runs() for (_, name) in r.metrics}


def problems(text: str, where: str) -> list[str]:
    """Each raw dict/list and number in scientific notation in `text`, with its line."""
    found = []
    for line in text.splitlines():
        for pattern, what in ((RAW, "raw dict/list"), (SCIENTIFIC, "scientific notation")):
            if m := pattern.search(line):
                found.append(f"{where}: {what} {m.group()!r} in {line.strip()[:160]!r}")
    return found


def named_by_metric(text: str, names: set[str]) -> list[str]:
    return sorted(n for n in names if re.search(rf"(?<![\w.]){re.escape(n)}(?![\w])", text))


def piped(*renderables) -> str:
    out = console(file=io.StringIO())
    for r in renderables:
        out.print(r)
    return out.file.getvalue()


def in_terminal(*renderables, width: int = 100) -> str:
    out = console(file=io.StringIO(), force_terminal=True, width=width, color_system=None)
    for r in renderables:
        out.print(r)
    return out.file.getvalue()


def headers(renderables) -> list[str]:
    """The titles and column headers of the tables among `renderables`."""
    out = []
    for r in renderables:
        table = r.table() if isinstance(r, WarningList) else r
        if isinstance(table, Table):
            out += [str(table.title or "")] + [str(c.header) for c in table.columns]
    return out


class _Visible(HTMLParser):
    """The text of an HTML page a browser shows (figures' <text> included), and its headings and
    table headers apart."""

    def __init__(self) -> None:
        super().__init__()
        self.text: list[str] = []
        self.heads: list[str] = []
        self._stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        self._stack.append(tag)

    def handle_endtag(self, tag):
        while self._stack and self._stack.pop() != tag:
            pass

    def handle_data(self, data):
        if any(t in ("style", "script") for t in self._stack):
            return
        self.text.append(data)
        if any(t in ("th", "h1", "h2", "h3", "h4", "caption", "title") for t in self._stack):
            self.heads.append(data)


@pytest.fixture
def stores(report_store, latency_store):
    return report_store, latency_store


def test_terminal_output_has_no_raw_data_scientific_notation_or_metric_names_for_words(stores, capsys):
    report_store, latency_store = stores
    names = metric_names(report_store, latency_store)
    found: list[str] = []
    for store in stores:
        runs = store.runs()
        campaign = store.campaigns()[-1].name
        parts = [runs_table(runs), *summary_tables(runs, campaign)]
        for text, where in ((piped(*parts), "piped summary"), (in_terminal(*parts), "terminal summary")):
            found += problems(text, f"{store.root.name} {where}")
        for head in headers(parts):
            found += [f"{store.root.name}: header {head!r} names {n}" for n in named_by_metric(head, names)]
        headline = next(c for c in runs_table(runs).columns if c.header == "headline")
        for cell in headline.cells:
            text = cell.plain if hasattr(cell, "plain") else str(cell)
            found += [f"headline {text!r} names {n}" for n in named_by_metric(text, names)]
        one = runs[0]
        for info in (SystemFacts.from_json(TUNED_SYSINFO), store.sysinfo(one.sysinfo_id)):  # `show RUN_ID`
            detail = run_detail(one, store.warnings(one.campaign_id, one.id), info)
            found += problems(piped(*detail) + in_terminal(*detail), f"show {one.id}")
        assert main(["show", "--results", str(store.root)]) == 0
        found += problems(capsys.readouterr().out, f"jitterlab show ({store.root.name})")
    assert main(["list"]) == 0
    found += problems(capsys.readouterr().out, "jitterlab list")
    assert main(["compare", "--baseline", "image=1.10", "--candidate", "image=1.11", "--results",
                 str(report_store.root)]) in (0, 1)
    found += problems(capsys.readouterr().out, "jitterlab compare")
    assert found == [], "\n".join(found)


def test_show_run_prints_irqs_idle_states_and_siblings_in_words():
    text = piped(*run_detail(_one_run(), [], SystemFacts.from_json(TUNED_SYSINFO)))
    line = {key: next(ln for ln in text.splitlines() if f" {key} " in f" {ln} ")
            for key in ("irqs", "cpuidle_states", "thread_siblings", "bogomips", "mem_total")}
    assert "CPU 0: 24 eth0" in line["irqs"] and "CPU 0-1: 25 mmc0" in line["irqs"]
    assert "CPU ?: 26 timer" in line["irqs"]
    assert "POLL 0 ns, C6 170 µs (disabled)" in line["cpuidle_states"]
    assert line["thread_siblings"].endswith("threads of one core: 0,2; 1,3")
    assert line["bogomips"].endswith("108 on each of 4 CPUs")
    assert line["mem_total"].endswith("3.994 GB")  # in GB: the name no longer says kB
    assert "{" not in text and "[" not in text


def _one_run():
    from jitterlab.model.fakes import run_record, squarewave_cell

    return run_record(squarewave_cell())


def test_the_html_report_has_no_raw_data_scientific_notation_or_metric_names_in_headings(stores, tmp_path):
    report_store, latency_store = stores
    names = metric_names(report_store, latency_store)
    found: list[str] = []
    for store in stores:
        out = tmp_path / f"{store.root.name}.html"
        assert main(["report", "--results", str(store.root), "-o", str(out), "--no-figure-files",
                     "--max-run-figures", "2"]) == 0
        page = _Visible()
        page.feed(out.read_text())
        found += problems("\n".join(page.text), f"{out.name}")
        for head in page.heads:
            found += [f"{out.name}: heading {head.strip()!r} names {n}" for n in named_by_metric(head, names)]
    assert found == [], "\n".join(found)
