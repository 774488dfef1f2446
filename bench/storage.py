"""Bytes per edge on disk for raw series: a 1 ms wave with realistic jitter, vs 8 bytes/edge int64.

    python bench/storage.py [--edges 1e6]

Jitter: normal per-edge jitter of the given sd plus 1 edge in 1000 delayed by 100 µs.
The entropy column is the floor for any lossless coder of i.i.d. normal edge jitter
(Shannon entropy of the rounded difference of two jitters, bits -> bytes).
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

from jitterlab.analysis.synthetic import square_wave
from jitterlab.model.series import EdgeSeries
from jitterlab.store.raw import read_raw, write_raw

PERIOD_NS = 1_000_000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="1e6")
    args = parser.parse_args()
    n_edges = int(float(args.edges))
    print(f"{n_edges:.0e} edges, period {PERIOD_NS} ns")
    print("reference: raw int64 t_ns + uint8 level = 9 B/edge, t_ns alone 8 B/edge")
    print(f"{'jitter sd':>10} {'B/edge':>7} {'floor B/edge':>13} {'write ms':>9} {'read ms':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "run.parquet"
        for jitter_ns in (0, 1_000, 2_000, 3_000, 5_000, 10_000):
            t_ns, level = square_wave(
                PERIOD_NS, n_edges, jitter_ns=jitter_ns, outlier_rate=1e-3, outlier_ns=100_000
            )
            start = time.perf_counter()
            write_raw(path, {"vpin": EdgeSeries(t_ns, level)})
            write_s = time.perf_counter() - start
            start = time.perf_counter()
            read_raw(path)
            read_s = time.perf_counter() - start
            per_edge = os.path.getsize(path) / n_edges
            floor = (
                math.log2(math.sqrt(2) * jitter_ns * math.sqrt(2 * math.pi * math.e)) / 8
                if jitter_ns
                else 0.0
            )
            print(
                f"{jitter_ns:>8}ns {per_edge:>7.3f} {floor:>13.3f} "
                f"{write_s * 1e3:>9.0f} {read_s * 1e3:>8.0f}"
            )


if __name__ == "__main__":
    main()
