"""Results in the formats of the engines labs run boards through: JUnit XML (validated with xmllint
against junit-10.xsd, the schema Jenkins' JUnit plugin publishes, from pytest's sources: `make
setup` puts it in the venv, and read back with junitparser), KCIDB v5.3 (validated by kcidb-io,
KernelCI's own package) and LAVA's test-case lines; each cell, each headline figure and each run
judged by the campaign's envelope rule, exactly, on synthetic runs: a passing cell and a failing one
read back from every format, the failure naming its worst run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.analysis.compare import Selector, compare
from jitterlab.campaign.cells import names
from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import export as ex
from jitterlab.report.cell_checks import FAILED, PASSED, SKIPPED, cell_checks
from jitterlab.report.formats import junit, lava
from jitterlab.store.catalog import Store

JUNIT_XSD = Path(sys.prefix) / "share" / "jitterlab-tests" / "junit-10.xsd"


def valid_junit(text: str, tmp_path: Path) -> ET.Element:
    if shutil.which("xmllint") is None or not JUNIT_XSD.is_file():
        pytest.skip("needs xmllint (apt install libxml2-utils) and junit-10.xsd in the venv (make setup)")
    path = tmp_path / "junit.xml"
    path.write_text(text)
    done = subprocess.run(["xmllint", "--noout", "--schema", str(JUNIT_XSD), str(path)],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return ET.fromstring(text)


def small_store(root: Path) -> Store:
    """Three squarewave cells (held; broken by two runs, the second the worse, its p99 held all the same;
    unproven) and a cyclictest cell with a failed run."""
    store = Store(root)
    cid = store.new_campaign("gate", "fp", "c.toml", "", {})
    sid = store.add_sysinfo(cid, "board", SystemFacts.from_json({
        "hostname": "board", "kernel_release": "6.1.0-rt", "machine": "aarch64", "cpu_model": "Cortex-A53"}))

    def wave(impl, rep, value, *, bound=None, status="ok", error=None):
        metrics = [] if status != "ok" else [
            Metric("max_rel_period_error", value, "ratio", "vpin"),
            Metric("p99_rel_period_error", value / 2, "ratio", "vpin"),
            Metric("max_rel_period_error_upper_bound", value if bound is None else bound, "ratio", "vpin"),
            Metric("p99_rel_period_error_upper_bound", value / 2, "ratio", "vpin"),
            Metric("unobserved_periods", 0.0 if bound is None else 3.0, "count", "vpin")]
        store.commit_run(run_record(squarewave_cell(impl, 10_000_000), id=f"{impl}{rep}", campaign_id=cid,
                                    repetition=rep, sysinfo_id=sid, status=status, error=error,
                                    started_ns=1_800_000_000_000_000_000 + rep, metrics=metrics))

    for rep, value in enumerate((0.02, 0.05, 0.03)):
        wave("c-fifo", rep, value)  # every run under 10 %: passed
    wave("bash", 0, 0.04)
    wave("bash", 1, 0.12)  # over 10 %: failed, the first run over it
    wave("bash", 2, 0.18)  # over 10 % too, and the worst: the one a failure names (its p99 9 % holds)
    wave("python", 0, 0.03)
    wave("python", 1, 0.04, bound=0.5)  # blind: its bound is over 10 %: unproven
    latency = cell("cyclictest", {"policy": "fifo"})
    store.commit_run(run_record(latency, id="ct0", campaign_id=cid, sysinfo_id=sid, metrics=[
        Metric("latency_max_ns", 40_200.0, "ns"), Metric("latency_p99_ns", 9_000.0, "ns")]))
    store.commit_run(run_record(latency, id="ct1", campaign_id=cid, repetition=1, sysinfo_id=sid,
                                status="failed", error="cyclictest: \x1b[2Jno RT permission"))
    return store


@pytest.fixture
def store(tmp_path):
    s = small_store(tmp_path / "s")
    yield s
    s.close()


def test_each_cell_is_judged_by_the_campaign_envelope_rule(store):
    checks = {c.name: c for c in cell_checks(store.runs())}
    assert {n: c.outcome for n, c in checks.items()} == {
        "board c-fifo 10ms idle (vpin)": PASSED, "board bash 10ms idle (vpin)": FAILED,
        "board python 10ms idle (vpin)": SKIPPED, "board cyclictest idle": FAILED}
    broken = checks["board bash 10ms idle (vpin)"]
    assert broken.reason == (
        "max |period error| < 10 % in every run: the worst run bash2 reached 18 % (2 of 3 runs over it)")
    assert broken.worst_run == "bash2"
    assert checks["board c-fifo 10ms idle (vpin)"].held == {"max < 1 %": False, "max < 10 %": True,
                                                       "p99 < 1 %": False, "p99 < 10 %": True}
    # the worst run for a maximum, the median of runs for a percentile: each figure named by its rule
    assert [(h.name, h.value, h.worst_run) for h in checks["board c-fifo 10ms idle (vpin)"].headline] == [
        ("max_rel_period_error (worst run)", 0.05, "c-fifo1"),
        ("p99_rel_period_error (median of runs)", 0.015, "c-fifo1")]
    # per figure: the max rule fails the cell, its p99 (every run's under 10 %) holds
    assert [(h.metric, h.judged.outcome, h.worst_run) for h in broken.headline] == [
        ("max_rel_period_error", FAILED, "bash2"), ("p99_rel_period_error", PASSED, "bash2")]
    assert checks["board cyclictest idle"].reason.startswith("run ct1 failed: cyclictest:")


def test_junit_export_is_valid_for_a_ci_server_and_says_each_cell(store, tmp_path):
    junitparser = pytest.importorskip("junitparser", reason="pip install junitparser (in the dev extra)")
    text = ex.export(store, store.runs(), "junit", None)
    root = valid_junit(text, tmp_path)
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("4", "2", "1")
    # read back as a CI server's JUnit plugin reads it
    (tmp_path / "read.xml").write_text(text)
    [parsed] = list(junitparser.JUnitXml.fromfile(str(tmp_path / "read.xml")))
    cases = {c.name: c for c in parsed}
    assert (parsed.tests, parsed.failures, parsed.skipped) == (4, 2, 1)
    passed, failed = cases["board c-fifo 10ms idle (vpin)"], cases["board bash 10ms idle (vpin)"]
    assert passed.is_passed and not failed.is_passed and failed.is_failure
    [failure] = failed.result
    assert failure.message.endswith("the worst run bash2 reached 18 % (2 of 3 runs over it)")  # not bash1
    assert cases["board python 10ms idle (vpin)"].is_skipped
    assert ("max_rel_period_error (worst run) of vpin: 5 % over 3 run(s), the worst run c-fifo1: pass"
            in passed.system_out.splitlines())
    assert ("p99_rel_period_error (median of runs) of vpin: 6 % over 3 run(s), the worst run bash2: pass"
            in failed.system_out.splitlines())
    # the figure that fails the case says so; why is the case's message, not said twice
    assert ("max_rel_period_error (worst run) of vpin: 18 % over 3 run(s), the worst run bash2: fail"
            in failed.system_out.splitlines())
    # the control characters of a stored error cannot break the document
    assert "\x1b" not in cases["board cyclictest idle"].result[0].message


def test_kcidb_export_is_valid_kcidb_v5_3(store, tmp_path):
    kcidb_io = pytest.importorskip("kcidb_io", reason="pip install kcidb-io (in the dev extra)")
    out = tmp_path / "k"
    assert ex.writes_directory("kcidb")
    ex.export(store, store.runs(), "kcidb", out)
    doc = json.loads((out / "kcidb.json").read_text())
    kcidb_io.schema.V5_3.validate(doc)
    assert kcidb_io.schema.LATEST is kcidb_io.schema.V5_3 and doc["version"] == {"major": 5, "minor": 3}
    tests = {t["id"]: t for t in doc["tests"]}
    assert len(tests) == len(store.runs())
    # a run the envelope rule judges passes or fails by it; a measurement no rule judges is DONE
    assert {i.removeprefix("jitterlab:"): t["status"] for i, t in tests.items()} == {
        "c-fifo0": "PASS", "c-fifo1": "PASS", "c-fifo2": "PASS", "bash0": "PASS", "bash1": "FAIL",
        "bash2": "FAIL", "python0": "PASS", "python1": "DONE", "ct0": "DONE", "ct1": "ERROR"}
    assert tests["jitterlab:bash2"]["number"] == {"value": 0.18}
    assert tests["jitterlab:bash2"]["path"] == "jitterlab.squarewave.max_rel_period_error"
    assert tests["jitterlab:bash2"]["log_excerpt"] == (
        "max |period error| < 10 % in every run: the worst run bash2 reached 18 %")
    assert tests["jitterlab:bash0"]["number"] == {"value": 0.04}
    assert "log_excerpt" not in tests["jitterlab:bash0"]
    assert tests["jitterlab:ct0"]["number"] == {"value": pytest.approx(40.2e-6), "unit": "s",
                                                "prefix": "metric"}
    failed = tests["jitterlab:ct1"]
    assert failed["status"] == "ERROR" and "number" not in failed
    assert "no RT permission" in failed["log_excerpt"]
    assert tests["jitterlab:ct0"]["environment"]["misc"]["kernel_release"] == "6.1.0-rt"
    [build] = doc["builds"]
    assert build["architecture"] == "aarch64" and build["checkout_id"] == doc["checkouts"][0]["id"]
    for t in doc["tests"]:
        for f in t["output_files"]:
            assert Path(f["url"].removeprefix("file://")).is_file(), f
    with pytest.raises(Exception, match="--format kcidb: give -o DIR"):
        ex.export(store, store.runs(), "kcidb", None)


def test_lava_lines_are_a_set_per_cell_and_a_case_per_headline_metric(store):
    lines = ex.export(store, store.runs(), "lava", None).splitlines()
    at = lines.index("set\tboard_c-fifo_10ms_idle_vpin")
    assert lines[at:at + 4] == ["set\tboard_c-fifo_10ms_idle_vpin",
                                     "case\tmax_rel_period_error_worst_run.vpin\tpass\t0.05\tratio",
                                     "case\tp99_rel_period_error_median_of_runs.vpin\tpass\t0.015\tratio",
                                     "end\tboard_c-fifo_10ms_idle_vpin"]
    # each figure its own result: the failing cell's max fails, its p99 holds
    at = lines.index("set\tboard_bash_10ms_idle_vpin")
    assert [line.split("\t") for line in lines[at + 1:at + 3]] == [
        ["case", "max_rel_period_error_worst_run.vpin", "fail", "0.18", "ratio"],
        ["case", "p99_rel_period_error_median_of_runs.vpin", "pass", "0.06", "ratio"]]
    assert "case\tlatency_max_ns_worst_run\tfail\t40200\tns" in lines
    assert lines.count("end\tboard_python_10ms_idle_vpin") == 1
    assert len([x for x in lines if x.startswith("set\t")]) == 4


@pytest.fixture(scope="module")
def images_store(tmp_path_factory):
    from tests.report.conftest import build_store

    s = build_store(tmp_path_factory.mktemp("images") / "s")
    yield s
    s.close()


def test_a_comparison_as_junit_and_lava(images_store, tmp_path):
    result = compare(images_store.runs(), Selector("image", "1.10"), Selector("image", "1.11"),
                     metrics=["max_rel_period_error"], names=names(), traits=plugins.traits)
    root = valid_junit(junit.comparison_xml(result), tmp_path)
    cases = list(root.iter("testcase"))
    graded = [r for r in result.rows if r.verdict]
    assert len(cases) == len(graded) > 0
    worse = sum(r.verdict == "worse" for r in graded)
    assert worse > 0 and root.find("testsuite").get("failures") == str(worse)  # 1.11 doubles the jitter
    assert sum(c.find("failure") is not None for c in cases) == worse
    assert sum(c.find("skipped") is not None for c in cases) == sum(r.verdict == "undecided" for r in graded)
    lines = lava.comparison_lines(result).splitlines()
    assert sum(line.startswith("case\t") and "\tfail\t" in line for line in lines) == worse


def test_compare_and_export_take_the_formats_on_the_command_line(images_store, tmp_path, capsys):
    results = str(images_store.root)
    assert main(["compare", "--results", results, "--baseline", "image=1.10", "--candidate", "image=1.11",
                 "--metric", "max_rel_period_error", "--no-pooled", "--format", "junit"]) == 0
    valid_junit(capsys.readouterr().out, tmp_path)
    assert main(["export", "--results", results, "--format", "junit", "-o", str(tmp_path / "c.xml")]) == 0
    valid_junit((tmp_path / "c.xml").read_text(), tmp_path)
