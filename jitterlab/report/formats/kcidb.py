"""KCIDB (KernelCI's common results database), schema v5.3: a directory with kcidb.json, the
report (report.html) and the runs' raw series (raw/<run>.parquet).

Each run is a test: its headline metric as `number` {value, unit, prefix} (nanoseconds as seconds
with the metric prefix, so KCIDB shows "160 ns"); its status PASS or FAIL where an envelope rule of
the campaign holds that metric (report/cell_checks.py: max |period error| < 10 % ..., the reason of
a FAIL as the log excerpt), DONE for a measurement no rule judges (or one the probe's blindness left
unproven), ERROR for a run that failed (its error as the log excerpt), SKIP for one that never ran;
the environment it ran in from its
sysinfo snapshot, its cell, labels and every metric in `misc`, and the raw series and the report
as `output_files`. A test belongs to a build: the kernel release and the image a board ran
(label and sha256, as an image campaign records them); a build to a checkout: the kernel release.
IDs are "jitterlab:..." (KCIDB's origin); the files' URLs are file:// URLs in the directory,
to be rewritten to where a lab publishes it before submitting (kcidb-submit wants URLs it can
fetch). The document is plain JSON: kcidb-io validates it in the tests, not at run time.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import shutil
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import RunRecord
from jitterlab.report.cell_checks import FAILED, PASSED, envelope_judged, rule_judging
from jitterlab.report.formats.base import EXPORTERS, no_trend
from jitterlab.report.formats.rows import SYSINFO_SUMMARY, ExportData

ORIGIN = "jitterlab"
VERSION = {"major": 5, "minor": 3}
STATUS = {"ok": "DONE", "unavailable": "SKIP"}  # any other status (failed, timeout): ERROR
VERDICT = {PASSED: "PASS", FAILED: "FAIL"}  # a run an envelope rule judges; unproven stays DONE
_PATH_WORD = re.compile(r"[^a-zA-Z0-9_-]+")
_IMAGE_INFO = ("image", "image_sha256", "console_boot_s", "vm_machine", "vm_root")


def number(value: float, unit: str) -> dict:
    """A metric as KCIDB's number: ns as s with the metric prefix, bytes with the binary one, a
    ratio dimensionless."""
    if unit == "ns":
        return {"value": value * 1e-9, "unit": "s", "prefix": "metric"}
    if unit in ("B", "bytes"):
        return {"value": value, "unit": "B", "prefix": "binary"}
    if unit in ("", "ratio", "count"):
        return {"value": value}
    return {"value": value, "unit": unit}


def _id(*parts: object) -> str:
    return f"{ORIGIN}:" + hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()[:16]


def _path_word(text: str) -> str:
    return _PATH_WORD.sub("_", text).strip("_") or "x"


def _time(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9, dt.UTC).isoformat(timespec="milliseconds")


def document(data: ExportData, out: Path) -> dict:
    """The KCIDB document for the runs, with file:// URLs of files in `out`."""
    from jitterlab.report.traits import headline_metrics

    infos: dict[int, SystemFacts | None] = {}
    checkouts: dict[str, dict] = {}
    builds: dict[str, dict] = {}
    tests = []
    for r in data.runs:
        if r.sysinfo_id is not None and r.sysinfo_id not in infos:
            infos[r.sysinfo_id] = data.store.sysinfo(r.sysinfo_id)
        info = (infos.get(r.sysinfo_id) if r.sysinfo_id is not None else None) or SystemFacts.given()
        release = str(info.kernel_release or "unknown")
        checkout_id = _id("checkout", release)
        checkouts.setdefault(checkout_id, {
            "id": checkout_id, "origin": ORIGIN, "comment": f"Linux {release}",
            "misc": {"kernel_release": release, "kernel_version": info.kernel_version}})
        stored = info.as_json()
        image = {k: stored[k] for k in _IMAGE_INFO if stored.get(k) is not None}
        build_id = _id("build", release, info.machine, info.image.sha256 if info.image else None, r.labels)
        build = {"id": build_id, "checkout_id": checkout_id, "origin": ORIGIN,
                 "comment": " ".join(filter(None, [f"Linux {release}", _labels(r)])),
                 "misc": {"labels": r.labels, **image}}
        if info.machine:
            build["architecture"] = str(info.machine)
        builds.setdefault(build_id, build)
        tests.append(_test(r, info, build_id, headline_metrics([r]), out))
    return {"version": VERSION, "checkouts": list(checkouts.values()), "builds": list(builds.values()),
            "tests": tests}


def _labels(r: RunRecord) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(r.labels.items()))


def _test(r: RunRecord, info: SystemFacts, build_id: str, headline: list[str], out: Path) -> dict:
    from jitterlab.campaign import cells
    from jitterlab.report.traits import own_metric

    status = STATUS.get(r.status, "ERROR")
    name = next((m for m in headline if own_metric(r, m) is not None), None)
    rule = rule_judging(r, name) if name is not None and status == "DONE" else None
    judged = envelope_judged([r], rule) if rule is not None else None
    if judged is not None:
        status = VERDICT.get(judged.outcome, status)
    path = ".".join(_path_word(p) for p in ("jitterlab", r.benchmark, *([name] if name else [])))
    test: dict = {
        "id": f"{ORIGIN}:{r.id}", "build_id": build_id, "origin": ORIGIN, "path": path,
        "comment": f"{r.target} {cells.label(r.cell)}" + (f" [{_labels(r)}]" if r.labels else ""),
        "status": status, "start_time": _time(r.started_ns), "duration": float(r.wall_s),
        "environment": _environment(info),
        "misc": {"run_id": r.id, "repetition": r.repetition + 1, "target": r.target,
                 "cell": dict(r.cell.params), "labels": r.labels,
                 "metrics": {(f"{m.subject}.{m.name}" if m.subject else m.name):
                             {"value": m.value, "unit": m.unit} for m in r.metrics.values()}},
    }
    if name is not None and r.status == "ok":
        metric = own_metric(r, name)
        test["number"] = number(metric.value, metric.unit)  # type: ignore[union-attr]
    if status == "ERROR" and r.error:
        test["log_excerpt"] = r.error[-16384:]
    elif status == "FAIL" and judged is not None:
        test["log_excerpt"] = judged.reason
    files = [{"name": "report.html", "url": (out / "report.html").resolve().as_uri()}]
    if r.raw_path:
        raw = (out / "raw" / f"{r.id}.parquet").resolve()
        files.insert(0, {"name": f"{r.id}.parquet", "url": raw.as_uri()})
    test["output_files"] = files
    return test


def _environment(info: SystemFacts) -> dict:
    stored = info.as_json()  # the facts under the names every export gives them
    summary = {k: stored[k] for k in SYSINFO_SUMMARY if stored.get(k) is not None}
    words = [str(v) for v in (info.hostname, info.kernel_release, info.cpu_model) if v]
    environment: dict = {"comment": ", ".join(words) or "unknown", "misc": summary}
    compatible = str(stored.get("dt_compatible") or "").split()  # a device tree's, where it was kept
    if compatible:
        environment["compatible"] = compatible
    return environment


class KcidbExporter:
    directory = True
    tables = ("runs",)
    trend = False

    def write(self, data: ExportData, table: str, out: Path | None) -> str | None:
        from jitterlab.report.html import render

        if out is None:
            raise UserError("--format kcidb: give -o DIR (it writes kcidb.json, report.html and raw/)")
        out = Path(out)
        (out / "raw").mkdir(parents=True, exist_ok=True)
        for r in data.runs:
            if r.raw_path:
                shutil.copyfile(data.store.root / r.raw_path, out / "raw" / f"{r.id}.parquet")
        names = {c.id: c.name for c in data.store.campaigns()}
        render(data.store, out / "report.html", figure_files=False,
               campaigns=list(dict.fromkeys(names[r.campaign_id] for r in data.runs)))
        (out / "kcidb.json").write_text(json.dumps(document(data, out), indent=1) + "\n", encoding="utf-8")
        return None

    def write_trend(self, rows: list[dict], out: Path | None) -> str | None:
        raise no_trend()


EXPORTERS.add("kcidb", "a directory for KernelCI: kcidb.json (KCIDB v5.3, a test per run), report.html, "
              "raw/", KcidbExporter())
