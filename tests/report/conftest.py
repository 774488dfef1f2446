"""Small stores with known answers: two images of one board (synthetic edges), and cyclictest
runs whose maxima and overflow counts a summary must not average."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.latency import histogram_metrics
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.synthetic import square_wave
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import cell, run_record, squarewave_cell
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import EdgeSeries, Samples, blind_series
from jitterlab.store.catalog import Store
from jitterlab.store.raw import write_raw

MS = 1_000_000
IMPLS = {"c-fifo": 2_000, "bash": 30_000}  # jitter sd in ns
LOADS = ("idle", "cpu")
PERIODS = (10 * MS, 1 * MS)
REPS = 4
N_EDGES = 400
SYSINFO = {"hostname": "board", "kernel_release": "6.1.0-rt", "preemption": "PREEMPT_RT",
           "cpu_model": "Cortex-A72", "n_cpus": 4, "cpus": [{"cpu": 0, "governor": "ondemand"}],
           "clocksource": "arch_sys_counter", "rt_permission": True}


def build_store(root, *, images=("1.10", "1.11"), failed=True) -> Store:
    store = Store(root)
    for k, image in enumerate(images):
        cid = store.new_campaign(f"board-{image}", "fp", "c.toml", "", {"image": image})
        sid = store.add_sysinfo(cid, "board", SystemFacts.from_json(SYSINFO))
        store.add_warnings(cid, [Warning_("governor is ondemand on CPU 0",
                                          "cpupower frequency-set -g performance")], target="board")
        seed = 0
        for impl, jitter_ns in IMPLS.items():
            for load in LOADS:
                for period_ns in PERIODS:
                    for rep in range(REPS):
                        seed += 1
                        run_id = f"{image.replace('.', '')}{impl[:2]}{load[:2]}{period_ns // MS}{rep}"
                        if failed and impl == "bash" and load == "cpu" and period_ns == MS and rep == 3:
                            store.commit_run(_record(cid, sid, run_id, impl, load, period_ns, rep,
                                                     image, "failed", {}, None, None,
                                                     "bash: fork failed"))
                            continue
                        # image 1.11 doubles the jitter: a known, large difference
                        j = jitter_ns * (1 + k)
                        t, lev = square_wave(period_ns, N_EDGES, jitter_ns=j, seed=seed + 100 * k)
                        self_t, self_l = square_wave(period_ns, N_EDGES, jitter_ns=j / 2, seed=seed + 7)
                        blind = [(int(t[200]) - 10, int(t[200]) + 10)] if rep == 1 else []
                        series = {"vpin": EdgeSeries(t, lev), "self": EdgeSeries(self_t, self_l),
                                  "vpin.blind": blind_series(blind)}
                        metrics = [*squarewave_metrics(t, lev, period_ns, warmup_ns=0,
                                                       blind=blind or None, probe="vpin"),
                                   *squarewave_metrics(self_t, self_l, period_ns, warmup_ns=0,
                                                       probe="self")]
                        if load == "cpu":
                            metrics.append(Metric("load_bogo_ops_per_s", 1000.0 * (1 + k), "bogo-ops/s"))
                        raw = f"raw/{run_id}.parquet"
                        sha = write_raw(store.root / raw, series)
                        store.commit_run(_record(cid, sid, run_id, impl, load, period_ns, rep, image,
                                                 "ok", {(m.subject, m.name): m for m in metrics},
                                                 raw, sha, None))
    return store


def _record(cid, sid, run_id, impl, load, period_ns, rep, image, status, metrics, raw, sha, error):
    return run_record(
        squarewave_cell(impl, period_ns, load=load), id=run_id, campaign_id=cid,
        cell_key=f"board/{impl}/{load}/{period_ns}", repetition=rep,
        settings={"duration_ns": N_EDGES // 2 * period_ns, "warmup_ns": 0},
        labels={"image": image}, status=status, error=error, started_ns=rep,
        raw_path=raw, raw_sha256=sha, sysinfo_id=sid, metrics=metrics.values())


@pytest.fixture(scope="session")
def report_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("store")
    store = build_store(root)
    yield store
    store.close()


PARAMS = {"interval": MS, "priority": 95, "threads": 1, "policy": "fifo", "affinity": "", "mlock": True,
          "histogram": 2000, "breaktrace": 0}
LATENCY_SYSINFO = {"hostname": "vm1", "kernel_release": "6.1.0-18-amd64", "preemption": "PREEMPT_DYNAMIC",
           "cpu_model": "AMD EPYC", "n_cpus": 2, "clocksource": "kvm-clock", "virtualization": "kvm",
           "cpus": [{"cpu": 0, "governor": None, "cur_mhz": 2400}], "cmdline": "quiet",
           "runtimes": {"python3": {"path": "/root/.pyenv/shims/python3", "version": "Python 3.11.7"}}}


def build_latency_store(root) -> Store:
    """cyclictest at priority 95 and 50, 2 runs each: maxima 40.2 ms and 184 µs, overflow 4 and 5."""
    store = Store(root)
    cid = store.new_campaign("rt-latency", "fp", "c.toml", "", {})
    sid = store.add_sysinfo(cid, "local", SystemFacts.from_json(LATENCY_SYSINFO))
    store.add_warnings(cid, [Warning_("the target is virtualized (kvm)", "measure on bare metal")],
                       target="local")
    for priority in (95, 50):
        for rep, (max_ns, overflow, p99_us) in enumerate(((40_200_000, 4, 120), (184_000, 5, 130))):
            counts = np.zeros(2000, dtype=np.int64)
            counts[50] = 9000
            counts[p99_us] = 1000 - overflow
            metrics = histogram_metrics(counts, overflow=overflow, max_ns=max_ns)
            run_id = f"p{priority}r{rep}"
            raw = f"raw/{run_id}.parquet"
            sha = write_raw(store.root / raw, {"t0.histogram_1us": Samples(counts, "count per 1us bucket")})
            store.commit_run(run_record(
                cell("cyclictest", {**PARAMS, "priority": priority}, target="local"), id=run_id,
                campaign_id=cid, repetition=rep, started_ns=rep, raw_path=raw, raw_sha256=sha,
                sysinfo_id=sid, cell_key=f"p{priority}", metrics=metrics),
                [Warning_(f"{overflow} wake-up(s) were later than the histogram's 2000 µs",
                          "raise histogram")])
    return store


@pytest.fixture
def latency_store(tmp_path):
    store = build_latency_store(tmp_path / "latency")
    yield store
    store.close()
