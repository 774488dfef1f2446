"""A standard benchmark made inside this test, as a contributor would add one: one class and one
registration (in the package: measure/benchmarks/<x>.py and an import line in plugins.py; and a
case in tests/benchmarks/test_declared_metrics.py, which fails without one). Nothing else names
it, yet the campaign reads its matrix key and refuses a bad value in one line, `list` and `run
--dry-run` show it, `run --until-decided --watch` is checked against the names it declares, a run
on this machine stores what it measured, and `summary`, `compare` and `export` read its runs by
what its metrics declare. This is the "a standard benchmark" row of docs/architecture.md's change
costs."""

from __future__ import annotations

import csv
import io
import json
import statistics
import time
from dataclasses import dataclass

import pytest

from jitterlab import plugins
from jitterlab.cli.main import main
from jitterlab.measure.benchmarks.base import BenchmarkBase, Measurement, RunContext
from jitterlab.model.options import Options
from jitterlab.model.params import Param, integer
from jitterlab.model.records import Metric
from jitterlab.model.registry import Entry
from tests.support import local_campaign


@dataclass(frozen=True)
class RoundTripCell(Options):
    count: int


class RoundTrip(BenchmarkBase):
    """How long one command takes to come back from the target: `true`, `count` times a run."""

    params = (Param("count", "commands per run", integer(1, 1000), "[5, 10]", default=5),)
    record = RoundTripCell
    headline = ("round_trip_max_ns",)
    metrics = ("round_trip_median_ns",)

    def execute(self, ctx: RunContext) -> Measurement:
        taken = []
        for _ in range(RoundTripCell.of_cell(ctx.cell).count):
            start = time.monotonic_ns()
            ctx.target.run(["true"])
            taken.append(time.monotonic_ns() - start)
        return Measurement([
            Metric("round_trip_max_ns", max(taken), "ns", direction="lower", summary="worst", stat="max"),
            Metric("round_trip_median_ns", statistics.median(taken), "ns", direction="lower", stat="p50")])


@pytest.fixture
def round_trip(monkeypatch):
    monkeypatch.setitem(plugins.BENCHMARKS._entries, "round-trip",
                        Entry("round-trip", "how long a command takes to come back", RoundTrip()))


MATRIX = '[matrix]\nbenchmark = "round-trip"\ncount = {count}\n'


def test_the_campaign_reads_its_key_and_list_and_dry_run_show_it(round_trip, tmp_path, capsys):
    path = local_campaign(tmp_path, MATRIX.format(count="[5, 10]"), name="rt", duration="1s")
    assert main(["run", str(path), "--dry-run"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "round-trip count=5 idle" in out and "round-trip count=10 idle" in out
    assert main(["list"]) == 0
    assert "round-trip how long a command takes to come back" in [
        " ".join(line.split()) for line in capsys.readouterr().out.splitlines()]
    bad = local_campaign(tmp_path, MATRIX.format(count="0"), name="rt", duration="1s")
    assert main(["run", str(bad), "--dry-run"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {bad}: matrix.count: ") and err.count("\n") == 1


def test_until_decided_watches_only_what_it_declares(round_trip, tmp_path, capsys):
    path = local_campaign(tmp_path, MATRIX.format(count="[5, 10]"), name="rt", duration="1s")
    watch = ["--until-decided", "count=5..count=10", "--watch", "round_trip_p99_ns"]
    assert main(["run", str(path), *watch]) == 2
    err = capsys.readouterr().err
    assert "round_trip_max_ns, round_trip_median_ns" in err and err.count("\n") == 1


def test_its_runs_are_stored_and_read_by_every_view(round_trip, tmp_path, capsys):
    results = str(tmp_path / "results")
    for image in ("A", "B"):
        path = local_campaign(tmp_path, MATRIX.format(count="5"), name="rt", duration="1s", repetitions=2)
        assert main(["run", str(path), "--results", results, "--label", f"image={image}"]) == 0
    capsys.readouterr()
    assert main(["summary", "--results", results]) == 0
    summary = " ".join(capsys.readouterr().out.split())
    assert "round-trip: round_trip_max_ns (worst run)" in summary
    assert main(["compare", "--results", results, "--baseline", "image=A", "--candidate", "image=B",
                 "--format", "json"]) in (0, 1)
    rows = json.loads(capsys.readouterr().out)["rows"]
    tested = {r["metric"] for r in rows if r["tested"]}
    assert tested == {"round_trip_max_ns"}, "its headline is what a comparison tests"
    assert main(["export", "--results", results, "--format", "csv"]) == 0
    table = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert len(table) == 4 and all(float(row["round_trip_max_ns"]) > 0 for row in table)
