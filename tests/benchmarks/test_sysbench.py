"""sysbench-cpu: its text report (real ones in tests/data/sysbench), keys, failures, a real run."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import sysbench
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "sysbench"


def report(name: str) -> str:
    return (DATA / name).read_text()


def test_reports():
    assert sysbench.parse_report(report("cpu-2-threads.txt")) == {
        "events_per_s": 7228.24, "total_time_s": 1.0001, "events": 7234, "min_ms": 0.08, "avg_ms": 0.28,
        "max_ms": 18.71, "p95_ms": 1.44, "threads": 2,
    }  # fmt: skip
    values = sysbench.parse_report(report("cpu-1-thread.txt"))
    assert {(m.name, m.value, m.unit, m.direction) for m in sysbench.report_metrics(values)} == {
        ("events_per_s", 8786.15, "events/s", "higher"),
        ("latency_avg_ns", 110_000, "ns", "lower"),
        ("latency_p95_ns", 160_000, "ns", "lower"),
        ("latency_max_ns", 5_880_000, "ns", "lower"),
        ("events", 8814, "count", "none"),
        ("total_time_s", 1.0024, "s", "none"),
    }


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda t: t[: t.index("Latency (ms):")], "sysbench printed no 'Latency (ms):' section"),
        (lambda t: t[: t.index("         max:")], "sysbench report has no line for max_ms"),
        (lambda t: t.replace("95th percentile", "99th percentile"), "sysbench report has no line for p95_ms"),
        (lambda t: t.replace("second:  7228.24", "second: n/a"), "no line for events_per_s"),
        (lambda t: t + "    total number of events:              1\n", "more than one line for events"),
        (lambda t: "", "sysbench printed no 'Latency (ms):' section"),
    ],
)
def test_cut_short_and_garbled_reports_fail_clearly(mangle, reason):
    with pytest.raises(RunFailed) as err:
        sysbench.parse_report(mangle(report("cpu-2-threads.txt")))
    assert reason in err.value.reason


def campaign_of(matrix: str, duration: str = "1s"):
    return campaign_from_toml("sysbench-cpu", matrix, duration=duration)


def test_keys():
    [cell] = campaign_of("").cells
    assert dict(cell.params) == {"threads": 1, "max_prime": 4096}
    assert sysbench.SysbenchCpu().label(cell) == "sysbench-cpu x1 prime<=4096 idle"
    with pytest.raises(UserError, match=r"^c.toml: matrix.threads: 0 is out of range"):
        campaign_of("threads = 0")


def run_fake(tmp_path: Path, behaviour: FakeBehaviour, matrix: str = "threads = 2", duration: str = "1s"):
    campaign = campaign_of(matrix, duration)
    target = FakeTarget()
    target.behave(["sh", "-c", LAUNCH], behaviour)
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(parents=True), local.mkdir(parents=True)
    placement = Placement((0, 1), None)
    ctx = RunContext(
        target, campaign.settings, campaign.cells[0], 0, str(scratch), local, "/b", placement, True)
    return sysbench.SysbenchCpu().execute(ctx), target


def test_argv_and_whole_seconds(tmp_path):
    measurement, target = run_fake(tmp_path, FakeBehaviour(duration_s=2, log=report("cpu-2-threads.txt")),
                                   duration="1500ms")
    [argv] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    assert list(argv[argv.index("taskset"):]) == [
        "taskset", "-c", "0,1", "sysbench", "cpu", "--threads=2", "--cpu-max-prime=4096", "--time=2",
        "--percentile=95", "run"]  # fmt: skip
    assert measurement.metrics[0].name == "events_per_s"
    [warning] = measurement.warnings
    assert warning.message == "sysbench runs whole seconds: it ran 2 s for a campaign.duration of 1.5 s"


def test_failures_carry_the_output(tmp_path):
    error = report("error-threads-0.txt")
    with pytest.raises(RunFailed) as err:
        run_fake(tmp_path / "a", FakeBehaviour(rc=1, duration_s=0.1, log=error))
    assert err.value.reason == "sysbench failed (exit status 1): FATAL: Invalid value for --threads: 0."
    assert err.value.attachments == {"sysbench.log": error.encode()}
    cut = report("cpu-2-threads.txt")[:300]
    with pytest.raises(RunFailed) as err:
        run_fake(tmp_path / "b", FakeBehaviour(duration_s=1, log=cut))
    assert "no 'Latency (ms):' section" in err.value.reason
    assert err.value.attachments == {"sysbench.log": cut.encode()}
    with pytest.raises(RunFailed, match="sysbench ran 2 threads, not the 3 asked for"):
        run_fake(tmp_path / "c", FakeBehaviour(duration_s=1, log=report("cpu-2-threads.txt")), "threads = 3")


@pytest.mark.slow
def test_real_run(tmp_path):
    rc, store = run_local_campaign(tmp_path, """
[matrix]
benchmark = "sysbench-cpu"
threads = 2
max_prime = 2000
""", name="sb", duration="1s")
    assert rc == 0
    [run] = store.runs()
    assert run.status == "ok", run.error
    assert units_and_directions(run) == {
        "events_per_s": ("events/s", "higher"),
        "latency_avg_ns": ("ns", "lower"),
        "latency_p95_ns": ("ns", "lower"),
        "latency_max_ns": ("ns", "lower"),
        "events": ("count", "none"),
        "total_time_s": ("s", "none"),
    }
    assert run.metric("events", "") > 0 and run.raw_path is None
