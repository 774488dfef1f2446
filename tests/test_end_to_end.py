"""The whole pipeline on this machine with the real programs: run, store, resume, cleanup.

Timing is never asserted: these machines are noisy. Structure, bookkeeping and cleanup are.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.cli.main import main
from jitterlab.measure.squarewave.bindings import pins_driven_by
from jitterlab.store.catalog import Store
from jitterlab.store.raw import read_raw
from jitterlab.targets.processes import RUNS_DIR, SHM_DIR, owner_tag
from tests.support import local_campaign, processes_mentioning, wait_gone

pytestmark = pytest.mark.slow

# every registered impl that drives the virtual pin (the others need a board or the VM lab)
IMPLS = [e.name for e in plugins.IMPLS if "vpin" in pins_driven_by(e.name)]


def campaign(
    tmp_path: Path,
    *,
    impls=("c-mmap",),
    load="idle",
    reps=1,
    duration="1s",
    period="10ms",
    probe='"vpin"',
    extra="",
) -> Path:
    workdir = tmp_path / "target"
    text = f"""
[campaign]
name = "e2e"
repetitions = {reps}
duration = "{duration}"
warmup = "20ms"
load_warmup = "100ms"
run_timeout = "5s"
{extra}
[campaign.labels]
image = "test"
[[target]]
name = "local"
kind = "local"
workdir = "{workdir}"
[matrix]
impl = {list(impls)!r}
period = ["{period}"]
load = ["{load}"]
probe = {probe}
""".replace("'", '"')
    path = tmp_path / "e2e.toml"
    path.write_text(text)
    return path


def test_every_impl_end_to_end(tmp_path):
    if not subprocess.run(["sh", "-c", "command -v node"], capture_output=True).stdout:
        pytest.skip("node is not installed (apt install nodejs); make test installs it")
    results = tmp_path / "results"
    rc = main(["run", str(campaign(tmp_path, impls=IMPLS, duration="1s")), "--results", str(results)])
    store = Store(results, create=False)
    runs = store.runs()
    assert sorted(r.param("impl") for r in runs) == sorted(IMPLS)
    for run in runs:
        # a loaded shared machine may stall a run beyond measure: then it must say precisely why
        if run.status != "ok":
            assert run.status in ("unmeasurable", "timeout") and run.error, (run.param("impl"), run.error)
            # the observer blind through the whole run (its CPU taken) says so, not just "no edges"
            assert run.error != "unmeasurable: the probe recorded no edges", run.param("impl")
            continue
        for probe in ("vpin", "self"):
            assert run.metric("max_rel_period_error", probe) is not None, (run.param("impl"), probe)
            assert run.metric("n_periods", probe) > 0
        series = read_raw(results / run.raw_path, expected_sha256=run.raw_sha256)
        assert {"vpin", "self"} <= set(series)
        assert run.sysinfo_id is not None and store.sysinfo(run.sysinfo_id).kernel_release
    assert rc == (0 if all(r.status == "ok" for r in runs) else 1)
    assert processes_mentioning(str(tmp_path)) == []
    # every run's directory and pin file removed (each with the next run's directory made, the last
    # as the target's runs ended), and this jitterlab's directory of runs with them
    assert list((tmp_path / "target" / RUNS_DIR).glob("*")) == []
    assert list(Path(SHM_DIR).glob(f"jitterlab-{owner_tag()}-*")) == []


def test_self_probe_runs_without_observer(tmp_path):
    results = tmp_path / "results"
    assert (
        main(["run", str(campaign(tmp_path, probe='"self"', duration="300ms")), "--results", str(results)])
        == 0
    )
    [run] = Store(results).runs()
    assert run.status == "ok"
    assert run.metric("max_rel_period_error", "vpin") is None
    assert set(read_raw(results / run.raw_path)) == {"self"}


def test_the_analysis_warms_before_the_first_run_and_its_failure_harms_nothing(tmp_path, monkeypatch):
    """The compiled analysis loads while the target is prepared, once, before any run starts; a
    warm-up that fails only leaves the first run to load it."""
    from jitterlab.measure.benchmarks.squarewave import Squarewave

    events: list[str] = []
    prepare = Squarewave.prepare

    def warm(self):
        events.append("warm")
        raise RuntimeError("no cache here")

    def measured(self, ctx):
        events.append("run")
        return prepare(self, ctx)

    monkeypatch.setattr(Squarewave, "warm", warm)
    monkeypatch.setattr(Squarewave, "prepare", measured)
    results = tmp_path / "results"
    path = campaign(tmp_path, probe='"self"', duration="300ms", reps=2)
    assert main(["run", str(path), "--results", str(results)]) == 0
    assert events == ["warm", "run", "run"]
    assert [r.status for r in Store(results).runs()] == ["ok", "ok"]


def test_the_squarewave_warm_up_loads_the_analysis():
    from jitterlab.analysis import squarewave_scan
    from jitterlab.measure.benchmarks.squarewave import Squarewave

    Squarewave().warm()
    assert squarewave_scan.scan.signatures  # compiled (or loaded from the cache) for int64 edges


def test_cpu_load_is_measured_and_stopped_before_the_analysis(tmp_path, monkeypatch):
    """The load runs through the measurement and is stopped before the edges are analysed, so the
    analysis does not compete with it for the CPU."""
    from jitterlab.execution.loads import TargetLoads
    from jitterlab.measure.benchmarks import squarewave

    events: list[str] = []
    down, measurement = TargetLoads.down, squarewave._measurement

    def stopping(self, keep):
        metrics = down(self, keep)
        events.append(f"down keep={keep}, left up: {self._running is not None}")
        return metrics

    def analysing(*args):
        events.append("analysis")
        return measurement(*args)

    monkeypatch.setattr(TargetLoads, "down", stopping)
    monkeypatch.setattr(squarewave, "_measurement", analysing)
    results = tmp_path / "results"
    assert (
        main(["run", str(campaign(tmp_path, load="cpu", duration="500ms")), "--results", str(results)]) == 0
    )
    [run] = Store(results).runs()
    assert run.status == "ok", run.error
    assert run.metric("load_bogo_ops_per_s", "") > 0
    assert events == ["down keep=False, left up: False", "analysis"]
    assert processes_mentioning(str(tmp_path)) == []


def test_a_run_past_its_timeout_fails_and_the_campaign_goes_on(tmp_path):
    path = campaign(tmp_path, impls=("python", "c-mmap"), duration="300ms", extra="").with_suffix(".toml")
    path.write_text(path.read_text().replace('run_timeout = "5s"', 'run_timeout = "1ns"'))
    results = tmp_path / "results"
    assert main(["run", str(path), "--results", str(results)]) == 1
    runs = Store(results).runs()
    assert len(runs) == 2
    assert {r.status for r in runs} == {"timeout"}
    assert all("killed" in r.error for r in runs)
    assert processes_mentioning(str(tmp_path)) == []


def _runner(path: Path, results: Path, *extra: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "jitterlab", "run", str(path), "--results", str(results), *extra],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )


def _committed(results: Path) -> int:
    try:
        db = sqlite3.connect(results / "results.sqlite")
        try:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
        finally:
            db.close()
    except sqlite3.Error:
        return 0


def _wait_for_commits(results: Path, n: int, proc: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while _committed(results) < n:
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, "no run committed in time"
        time.sleep(0.05)


def test_sigkill_mid_campaign_then_resume_loses_and_duplicates_nothing(tmp_path):
    path = campaign(tmp_path, reps=5, duration="300ms")
    results = tmp_path / "results"
    proc = _runner(path, results)
    _wait_for_commits(results, 2, proc)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert wait_gone(str(tmp_path)) == []  # the programs die with their parent
    before = _committed(results)
    assert 2 <= before < 5
    rc = main(["run", str(path), "--results", str(results), "--resume"])
    assert rc == 0
    runs = Store(results).runs()
    assert sorted(r.repetition for r in runs) == [0, 1, 2, 3, 4]
    assert len({r.raw_path for r in runs}) == 5
    for run in runs:
        assert (results / run.raw_path).exists()
    leftovers = {p.name for p in (results / "raw").iterdir()} - {Path(r.raw_path).name for r in runs}
    assert all(".tmp" not in name for name in leftovers)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_stops_everything_and_keeps_committed_runs(tmp_path, signum):
    path = campaign(tmp_path, reps=20, load="cpu", duration="400ms")
    results = tmp_path / "results"
    proc = _runner(path, results)
    _wait_for_commits(results, 1, proc)
    time.sleep(0.3)  # mid-run: load, observer and program are up
    proc.send_signal(signum)
    assert proc.wait(30) == 130, proc.stderr.read().decode()
    assert wait_gone(str(tmp_path), timeout_s=5) == []
    # the interrupted run's directory went with it (the files its observer and load wrote as they
    # were stopped included), not left for the next campaign's sweep
    assert [p.name for p in (tmp_path / "target" / RUNS_DIR).glob("*/*")] == []
    committed = _committed(results)
    assert 1 <= committed < 20
    # what is guaranteed: every committed run is whole (a loaded machine may fail one honestly, with
    # its reason), and the interrupted run is not among them
    runs = Store(results).runs()
    assert len(runs) == committed and sorted(r.repetition for r in runs) == list(range(committed))
    for run in runs:
        assert run.status in ("ok", "failed", "timeout", "unmeasurable"), run.status
        if run.status == "ok":
            assert run.metric("max_rel_period_error", "vpin") is not None
            assert run.metric("load_bogo_ops_per_s", "") > 0
            read_raw(results / run.raw_path, expected_sha256=run.raw_sha256)
        else:
            assert run.error and "interrupt" not in run.error.lower(), run.error


def test_a_matrix_table_of_its_own_duration_runs_that_long(tmp_path):
    """A [[matrix]] table's `duration` reaches its runs (stored, and the program stops at it) and
    the other table's runs keep campaign.duration."""
    path = local_campaign(tmp_path, '''
[[matrix]]
impl = "c-mmap"
period = "10ms"
probe = "self"
[[matrix]]
impl = "c-mmap"
period = "20ms"
probe = "self"
duration = "300ms"
''', name="tables", duration="600ms", warmup="20ms")
    results = tmp_path / "results"
    assert main(["run", str(path), "--results", str(results)]) in (0, 1)
    runs = {r.param("period"): r for r in Store(results, create=False).runs()}
    assert {p: r.settings.duration_ns for p, r in runs.items()} == {10_000_000: 600_000_000,
                                                                     20_000_000: 300_000_000}
    short = runs[20_000_000]
    if short.status == "ok":  # two edges a period at most until it stops (at 600 ms: about 60)
        assert 0 < len(read_raw(results / short.raw_path)["self"]) <= 2 * 300 // 20 + 2
