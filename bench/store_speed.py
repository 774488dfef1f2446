"""Runs committed per second into SQLite and into PostgreSQL, and `report` time over many runs.

    python bench/store_speed.py [--runs 10000] [--report-runs 10000]

Each run carries 20 metrics and a small raw series (as a squarewave run does); PostgreSQL is a
throwaway local server on a Unix socket (jitterlab/store/pgserver.py). Printed: commits/s of each
store and their ratio, and the wall time of reading every run and rendering the report (figure
files off) from each store.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import Metric, RunRecord, StoredSettings
from jitterlab.model.series import EdgeSeries
from jitterlab.report.html import render
from jitterlab.store import pgserver
from jitterlab.store.catalog import Store

IMPLS = ("bash", "python", "node", "c-file", "c-mmap", "c-fifo")


def fill(store: Store, n: int, first: int = 0) -> float:
    """Commit n runs (ids from `first`) into the campaign "speed"; seconds it took."""
    found = store.latest_campaign("speed")
    cid = found.id if found else store.new_campaign("speed", "fp", "speed.toml", "", {})
    t = np.cumsum(np.full(200, 500_000, dtype=np.int64))
    level = np.arange(200) % 2
    t0 = time.perf_counter()
    for i in range(first, first + n):  # 12 distinct cells (6 impls x 4 periods, lcm 12), a repetition each
        run_id = f"r{i:08d}"
        raw, sha = store.write_series(run_id, {"self": EdgeSeries(t + i, level)})
        metrics = {("self", f"m{k}"): Metric(f"m{k}", float(i + k), "ratio", "self") for k in range(19)}
        headline = Metric("max_rel_period_error", 0.01 * (i % 7), "ratio", "self")
        metrics[("self", "max_rel_period_error")] = headline
        store.commit_run(RunRecord(
            id=run_id, campaign_id=cid, cell=squarewave_cell(IMPLS[i % 6], 10_000_000 // (1 + i % 4),
                                                             probe="self"),
            repetition=i // 12, settings=StoredSettings(duration_ns=10**8, warmup_ns=0), labels={},
            status="ok",
            error=None, started_ns=i, wall_s=1.0, raw_path=raw, raw_sha256=sha, sysinfo_id=None,
            metrics=metrics))
    return time.perf_counter() - t0


def report_s(store: Store, out: Path) -> float:
    t0 = time.perf_counter()
    render(store, out, max_run_figures=4, figure_files=False)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--report-runs", type=int, default=10_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="jitterlab-store-speed-") as tmp, \
            pgserver.throwaway_server("speed") as url:
        results = {}
        for kind, where in (("sqlite", Path(tmp) / "sqlite"), ("postgresql", f"{url}&raw_dir={tmp}/pg")):
            store = Store(where)
            seconds = fill(store, args.runs)
            results[kind] = args.runs / seconds
            print(f"{kind:10s} {results[kind]:8.0f} commits/s ({args.runs} runs)")
            extra = args.report_runs - args.runs
            if extra > 0:
                fill(store, extra, first=args.runs)
            seconds = report_s(store, Path(tmp) / f"{kind}.html")
            print(f"{kind:10s} report over {args.report_runs} runs: {seconds:.1f} s")
            store.close()
        print(f"commit rate postgresql / sqlite: {results['postgresql'] / results['sqlite']:.2f}")


if __name__ == "__main__":
    main()
