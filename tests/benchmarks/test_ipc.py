"""ipc-latency: rt-tests' --json outputs (real ones in tests/data/rt-tests-ipc), the metrics, keys,
argv, failures and real runs of each mechanism."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import ipc
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "rt-tests-ipc"


def data(name: str) -> bytes:
    return (DATA / name).read_bytes()


@pytest.mark.parametrize("tool", ["ptsematest", "sigwaittest", "pmqtest"])
def test_real_outputs_parse(tool):
    pairs = ipc.parse_json(data(f"{tool}-2-pairs-cpu1.json"), tool)
    assert len(pairs) == 2 and all(p.cpu == 1 and p.samples > 0 for p in pairs)
    summary = data(f"{tool}-2-pairs-cpu1.txt").decode()  # the same run's own summary lines
    for i, p in enumerate(pairs):
        line = next(x for x in summary.splitlines() if x.startswith(f"#{2 * i + 1} -> #{2 * i},"))
        assert f"Min {p.min_us:4d}" in line and f"Max {p.max_us:4d}" in line


def test_metrics_weight_the_mean_by_samples():
    pairs = ipc.parse_json(data("pmqtest-2-pairs-cpu1.json"), "pmqtest")
    assert [(p.samples, p.min_us, p.avg_us, p.max_us) for p in pairs] == [
        (500, 3, 5.69, 55), (491, 3, 5.66, 131)]
    metrics = {(m.subject, m.name): m for m in ipc.pair_metrics(pairs)}
    assert metrics[("", "latency_min_ns")].value == 3000 and metrics[("", "latency_max_ns")].value == 131_000
    assert metrics[("", "latency_mean_ns")].value == round((5.69 * 500 + 5.66 * 491) / 991 * 1000, 1)
    assert metrics[("", "latency_samples")].value == 991
    assert metrics[("pair1", "latency_max_ns")].value == 131_000
    graded = {(m.unit, m.direction) for k, m in metrics.items() if k[1] != "latency_samples"}
    assert graded == {("ns", "lower")}


def doc(**receiver) -> bytes:
    entry = {"sender": {"cpu": 0, "priority": 90, "samples": 10, "interval": 1000},
             "receiver": {"cpu": 0, "priority": 90, "min": 2, "avg": 3.5, "max": 9, **receiver}}
    return json.dumps({"return_code": 0, "num_threads": 1, "thread": {"0": entry}}).encode()


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"", "ptsematest --json output is not JSON"),
        (data("ptsematest-2-pairs-cpu1.json")[:300], "ptsematest --json output is not JSON"),
        (b'{"thread": {}}', 'ptsematest --json output has no "thread" results'),
        (b'{"return_code": 1, "thread": {"0": {}}}', "ptsematest reported return code 1"),
        (b'{"thread": {"1": {}}}', "pairs ['1'] are not numbered 0..0"),
        (doc(max=None), "pair 0: wants sender.samples and receiver min, avg, max and cpu"),
        (doc(avg=12.0), "pair 0: inconsistent (samples 10, min 2, avg 12.0, max 9)"),
        (doc(avg=None), "pair 0: inconsistent"),
    ],
)
def test_cut_short_and_garbled_outputs_fail_clearly(raw, reason):
    with pytest.raises(RunFailed) as info:
        ipc.parse_json(raw, "ptsematest")
    assert reason in info.value.reason


def test_nan_average_of_a_pair_without_samples():
    raw = doc().replace(b'"samples": 10', b'"samples": 0').replace(b'"avg": 3.5', b'"avg": -nan')
    [pair] = ipc.parse_json(raw, "ptsematest")
    assert pair.samples == 0 and pair.avg_us is None
    with pytest.raises(RunFailed) as info:
        ipc.pair_metrics([pair])
    assert info.value.status == "unmeasurable"


def test_failures_give_the_tools_own_reason():
    exc = ipc.failure("ptsematest", 1, data("error-no-such-cpu.txt"))
    assert exc.reason == "ptsematest failed (exit status 1): ERROR: CPU #7 not found, only 2 CPUs available"
    exc = ipc.failure("pmqtest", 1, data("error-no-rt.txt"))
    assert exc.reason == "pmqtest failed (exit status 1): Unable to change scheduling policy!"
    assert exc.attachments == {"ipc.log": data("error-no-rt.txt")}


def campaign_of(matrix: str = ""):
    return campaign_from_toml("ipc-latency", matrix, duration="1s")


def test_keys():
    [cell] = campaign_of().cells
    assert dict(cell.params) == {"mechanism": "mutex", "pairs": 1, "priority": 90, "interval": 1_000_000,
                                 "cpu": "auto"}
    bench = ipc.IpcLatency()
    assert bench.tools(cell) == {"ptsematest": "rt-tests"}
    assert [bench.tools(c) for c in campaign_of('mechanism = ["signal", "mqueue"]').cells] == [
        {"sigwaittest": "rt-tests"}, {"pmqtest": "rt-tests"}]
    assert bench.label(cell) == "ipc-latency mutex x1 fifo:90 every 1ms cpu auto idle"
    for matrix, message in (('mechanism = "pipe"', "matrix.mechanism: unknown value 'pipe'"),
                            ('interval = "10500ns"', "matrix.interval: the rt-tests take whole microseconds"),
                            ("pairs = 5\npriority = 4", "matrix.pairs: 5 pairs from priority 4 go below")):
        with pytest.raises(UserError, match=message):
            campaign_of(matrix)


def run_fake(tmp_path: Path, matrix: str = "", *, rt: bool = True, result: bytes | None = None, rc: int = 0):
    [cell] = campaign_of(matrix).cells
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(parents=True), local.mkdir(parents=True)
    target = FakeTarget()
    target.respond(["cat", "/sys/devices/system/cpu/online"], "0-1\n")
    raw = result if result is not None else data("sigwaittest-2-pairs-cpu1.json")
    target.behave(["sh", "-c", LAUNCH],
                  FakeBehaviour(rc=rc, duration_s=1, files={f"{scratch}/ipc.json": raw.decode()}))
    ctx = RunContext(target, campaign_of(matrix).settings, cell, 0, str(scratch), local, "/b",
                     Placement(None, None), rt)
    return ipc.IpcLatency().execute(ctx), target


def test_argv_and_short_pairs(tmp_path):
    measurement, target = run_fake(tmp_path, 'mechanism = "signal"\npairs = 2\ninterval = "500us"')
    [call] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    assert list(call[call.index("sigwaittest"):]) == [
        "sigwaittest", "-q", "--prio=90", "--interval=500", "--loops=2000", "--distance=0", "--threads=2",
        "--affinity=1", f"--json={tmp_path}/s/ipc.json"]  # fmt: skip
    assert [w.message.split(" of ")[0] for w in measurement.warnings] == ["pair(s) 0, 1"]  # 500 < 2000 loops


def test_no_rt_makes_the_cell_unavailable(tmp_path):
    with pytest.raises(RunFailed) as info:
        run_fake(tmp_path, rt=False)
    assert info.value.status == "unavailable" and "always runs SCHED_FIFO" in info.value.reason


def test_unparsable_output_is_attached(tmp_path):
    with pytest.raises(RunFailed) as info:
        run_fake(tmp_path, result=b"{")
    assert set(info.value.attachments) == {"ipc.json", "ipc.log"}


@pytest.mark.slow
def test_real_runs(tmp_path):
    rc, store = run_local_campaign(tmp_path, """
[matrix]
benchmark = "ipc-latency"
mechanism = ["mutex", "signal", "mqueue"]
pairs = 2
interval = "1ms"
""", name="ipc", duration="300ms")
    assert rc == 0
    runs = store.runs()
    assert sorted(r.param("mechanism") for r in runs) == ["mqueue", "mutex", "signal"]
    for run in runs:
        assert run.status == "ok", run.error
        assert units_and_directions(run, "latency_max_ns", "latency_mean_ns", "latency_samples") == {
            "latency_max_ns": ("ns", "lower"), "latency_mean_ns": ("ns", "lower"),
            "latency_samples": ("count", "none")}
        assert run.metric("latency_samples", "pair0") == 300
