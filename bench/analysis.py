"""How fast are the squarewave metrics? Edges/s, and the ratio to one plain np.diff pass.

    python bench/analysis.py [--edges 1e7,1e8] [--repeat 3]

The ratio is taken in one process on the same array (best of --repeat rounds in which the
functions take turns), so a noisy shared machine shifts both numbers alike. Target: ratio <= 3.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.synthetic import square_wave

PERIOD_NS = 1_000_000


def best_s(fns: dict, repeat: int) -> dict:
    """Best time of each function over `repeat` rounds, the functions taking turns within a round:
    a slow moment of a shared machine then hits them alike rather than one of them."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            start = time.perf_counter()
            result = fn()
            best[name] = min(best[name], time.perf_counter() - start)
            del result
    return best


def measure(n_edges: int, repeat: int) -> None:
    t_ns, level = square_wave(
        PERIOD_NS, n_edges, jitter_ns=3_000, outlier_rate=1e-4, outlier_ns=100_000
    )
    # 1000 blind spans of 3 ms spread over the run: exercises the exclusion path
    starts = np.linspace(t_ns[n_edges // 10], t_ns[-n_edges // 10], 1000).astype(np.int64)
    blind = np.stack([starts, starts + 3 * PERIOD_NS], axis=1)
    best = best_s({
        "diff": lambda: np.diff(t_ns),
        **{case: lambda s=spans: squarewave_metrics(t_ns, level, PERIOD_NS, warmup_ns=0, blind=s)
           for case, spans in (("clean", None), ("blind", blind))},
    }, repeat)
    for case in ("clean", "blind"):
        print(
            f"{n_edges:>12.0e} {case:>8} {best['diff'] * 1e3:>9.1f} {best[case] * 1e3:>11.1f} "
            f"{n_edges / best[case]:>10.3g} {best[case] / best['diff']:>6.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="1e7,1e8", help="comma-separated edge counts")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    header = ("edges", 12), ("case", 8), ("diff ms", 9), ("metrics ms", 11), ("edges/s", 10)
    print(" ".join(f"{text:>{width}}" for text, width in header), f"{'ratio':>6}")
    for n_edges in (int(float(x)) for x in args.edges.split(",")):
        measure(n_edges, args.repeat)


if __name__ == "__main__":
    main()
