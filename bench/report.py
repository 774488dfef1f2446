"""Report generation time per run and HTML size per run, for a store of 500 runs.

    python bench/report.py [--runs 500] [--edges 2000]

The store: impls x loads x periods x 5 repetitions of synthetic waves, vpin and self series.
Prints the time of `render` with the default figure budget (12 runs drawn), with and without
PNG/SVG files beside the HTML, per run and in total, and the HTML size per run.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.synthetic import square_wave
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.model.series import EdgeSeries
from jitterlab.report.html import render
from jitterlab.store.catalog import Store
from jitterlab.store.raw import write_raw

IMPLS = {"c-fifo": 2_000, "c-mmap": 1_000, "c-file": 5_000, "python": 20_000, "bash": 60_000}
LOADS = ("idle", "cpu")
REPS = 5


def build(root: Path, n_runs: int, n_edges: int) -> Store:
    store = Store(root)
    cid = store.new_campaign("bench", "fp", "bench.toml", "", {})
    n_periods = max(1, n_runs // (len(IMPLS) * len(LOADS) * REPS))
    periods = [200_000 * 2**k for k in range(n_periods)]
    k = 0
    for impl, jitter in IMPLS.items():
        for load in LOADS:
            for period_ns in periods:
                for rep in range(REPS):
                    k += 1
                    j = min(jitter, period_ns // 12)
                    t, lev = square_wave(period_ns, n_edges, jitter_ns=j, seed=k)
                    st, sl = square_wave(period_ns, n_edges, jitter_ns=j / 2, seed=k + 10**6)
                    ms: list[Metric] = [*squarewave_metrics(t, lev, period_ns, warmup_ns=0, probe="vpin"),
                                        *squarewave_metrics(st, sl, period_ns, warmup_ns=0, probe="self")]
                    raw = f"raw/r{k}.parquet"
                    sha = write_raw(root / raw, {"vpin": EdgeSeries(t, lev), "self": EdgeSeries(st, sl)})
                    store.commit_run(run_record(
                        squarewave_cell(impl, period_ns, target="bench", load=load), id=f"r{k}",
                        campaign_id=cid, cell_key=f"{impl}/{load}/{period_ns}", repetition=rep,
                        settings={"duration_ns": n_edges * period_ns // 2, "warmup_ns": 0},
                        started_ns=k, raw_path=raw, raw_sha256=sha, metrics=ms))
    return store


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--edges", type=int, default=2000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        t0 = time.perf_counter()
        store = build(root / "store", args.runs, args.edges)
        n = len(store.runs())
        print(f"store: {n} runs x {args.edges} edges built in {time.perf_counter() - t0:.1f} s")
        for files in (False, True):
            out = root / f"report_{files}.html"
            t0 = time.perf_counter()
            report = render(store, out, figure_files=files)
            dt = time.perf_counter() - t0
            size = out.stat().st_size
            print(f"figure files {'on ' if files else 'off'}: {dt:.2f} s total, "
                  f"{dt / n * 1e3:.1f} ms/run; HTML {size / 1e6:.2f} MB = {size / n / 1e3:.1f} kB/run; "
                  f"{len(report.figure_files)} figure files; skipped: {len(report.skipped)}")
        store.close()


if __name__ == "__main__":
    main()
