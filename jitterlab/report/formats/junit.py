"""JUnit XML, as CI servers read test results (Jenkins, GitLab, GitHub's reporters): one test case
per cell, passed when it holds the campaign's envelope rule (report/cell_checks.py), failed when a
run breaks it or fails (the message names the worst run), skipped when unproven or never run; its
headline figures in the case's output, each named by the rule that summarized it, with its worst
run and its own verdict. A comparison (`jitterlab compare --format junit`): one test case per
graded row, failed when the candidate is worse, skipped when undecided, passed when better or the
same.

The document follows the schema Jenkins' JUnit plugin publishes (junit-10.xsd): properties only on
the suite, times in seconds with three decimals, text without the control characters XML forbids.
"""

from __future__ import annotations

import datetime as dt
import math
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from jitterlab.report.cell_checks import FAILED, PASSED, SKIPPED, CellCheck, Headline, cell_checks
from jitterlab.report.format import format_value
from jitterlab.report.formats.base import EXPORTERS, no_trend, write_text
from jitterlab.report.formats.rows import ExportData

_XML_FORBIDDEN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: object) -> str:
    return _XML_FORBIDDEN.sub("\ufffd", str(text))


def _element(parent: ET.Element | None, tag: str, **attrs: object) -> ET.Element:
    clean = {k: _clean(v) for k, v in attrs.items()}
    return ET.Element(tag, clean) if parent is None else ET.SubElement(parent, tag, clean)


def _seconds(value_s: float) -> str:
    return f"{max(value_s, 0.0):.3f}"


def _suite(root: ET.Element, name: str, counts: dict[str, int], time_s: float,
           properties: dict[str, str]) -> ET.Element:
    suite = _element(root, "testsuite", name=name, tests=sum(counts.values()), failures=counts[FAILED],
                     errors=0, skipped=counts[SKIPPED], time=_seconds(time_s),
                     timestamp=dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S"))
    props = _element(suite, "properties")
    for k, v in properties.items():
        _element(props, "property", name=k, value=v)
    return suite


def _case(suite: ET.Element, classname: str, name: str, time_s: float, outcome: str, message: str,
          out: list[str]) -> None:
    case = _element(suite, "testcase", classname=classname, name=name, time=_seconds(time_s))
    if outcome == FAILED:
        _element(case, "failure", type="jitterlab", message=message).text = _clean(message)
    elif outcome == SKIPPED:
        _element(case, "skipped", message=message)
    _element(case, "system-out").text = _clean("\n".join([message, *out]) + "\n")


def _document(root: ET.Element, counts: dict[str, int]) -> str:
    root.set("tests", str(sum(counts.values())))
    root.set("failures", str(counts[FAILED]))
    root.set("errors", "0")
    ET.indent(root, space=" ")
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def cells_xml(checks: list[CellCheck], suite_name: str) -> str:
    """The cells' checks as one JUnit suite."""
    counts = {"pass": 0, FAILED: 0, SKIPPED: 0}
    for c in checks:
        counts[c.outcome] += 1
    total_s = sum(r.wall_s for c in checks for r in c.runs)
    root = _element(None, "testsuites", name="jitterlab", time=_seconds(total_s))
    suite = _suite(root, suite_name, counts, total_s, {"rule": "squarewave: the campaign's first envelope "
                   "rule at 10 %; other benchmarks: every run ends ok"})
    for c in checks:
        lines = [_figure_line(h, c.reason) for h in c.headline]
        lines += [f"{rule}: {'held' if ok else 'not held'}" for rule, ok in c.held.items()]
        _case(suite, f"jitterlab.{c.target}.{c.benchmark}", c.name, sum(r.wall_s for r in c.runs),
              c.outcome, c.reason, lines)
    return _document(root, counts)


def _figure_line(h: Headline, said: str) -> str:
    """"p99_rel_period_error (median of runs) of vpin: 6 % over 3 run(s), the worst run bash2: fail
    (why)"; why only when the case's message (`said`) does not already say it."""
    of = f" of {h.subject}" if h.subject else ""
    why = f" ({h.judged.reason})" if h.judged.outcome != PASSED and h.judged.reason != said else ""
    return (f"{h.name}{of}: {format_value(h.value, h.unit)} over {h.runs} run(s), the worst run "
            f"{h.worst_run}: {h.judged.outcome}{why}")


def comparison_xml(result) -> str:
    """A comparison (analysis.compare) as one JUnit suite: one case per graded row."""
    from jitterlab.analysis.compare import cell_text
    from jitterlab.report.format import change

    graded = [r for r in result.rows if r.verdict]
    outcomes = [FAILED if r.verdict == "worse" else SKIPPED if r.verdict == "undecided" else "pass"
                for r in graded]
    counts = {k: outcomes.count(k) for k in ("pass", FAILED, SKIPPED)}
    root = _element(None, "testsuites", name="jitterlab compare", time=_seconds(0))
    suite = _suite(root, f"{result.candidate} vs {result.baseline}", counts, 0.0, {
        "baseline": str(result.baseline), "candidate": str(result.candidate),
        "rule": "failed when worse, skipped when undecided, passed when better or the same",
        "not_graded": str(len(result.rows) - len(graded))})
    for r, outcome in zip(graded, outcomes, strict=True):
        name = " ".join(v for v in (cell_text(result, r), r.metric, f"({r.probe})" if r.probe else "",
                                    f"[{r.view}]") if v)
        ci = f" [{change(r.ci_low)} - {change(r.ci_high)}]" if math.isfinite(r.ci_low) else ""
        p = f", p (Holm) {r.p_adjusted:.2g}" if math.isfinite(r.p_adjusted) else ""
        message = (f"{r.verdict}: {change(r.ratio)}{ci} ({r.rule} {format_value(r.baseline, r.unit)} -> "
                   f"{format_value(r.candidate, r.unit)}, runs {r.n_baseline}/{r.n_candidate}, {r.test}{p})")
        _case(suite, "jitterlab.compare", name, 0.0, outcome, message, [])
    return _document(root, counts)


class JunitExporter:
    directory = False
    tables = ("runs",)
    trend = False

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        names = {c.id: c.name for c in data.store.campaigns()}
        campaigns = ", ".join(dict.fromkeys(str(names.get(r.campaign_id)) for r in data.runs))
        return write_text(cells_xml(cell_checks(data.runs), campaigns), out)

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        raise no_trend()


EXPORTERS.add("junit", "JUnit XML for CI servers: one test case per cell, passed when it holds the "
              "envelope rule", JunitExporter())
