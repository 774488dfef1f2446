"""How fast a 24 MHz logic-analyzer capture becomes edges, and how much memory that takes.

Writes a raw capture like sigrok's binary output (one byte per sample, the wave on bit 0, the other
bits changing at random), decodes it with analysis/logic.py and prints, from one run: samples and
edges decoded per second, capture seconds decoded per wall second, and the peak memory numpy
allocated per second of capture (tracemalloc sees numpy's buffers). Two waves: a 1 kHz square wave
(a typical period) and a 1 MHz one (many edges).

    python bench/sigrok_decode.py [--seconds 4] [--rate 24000000]
"""

from __future__ import annotations

import argparse
import tempfile
import time
import tracemalloc
from pathlib import Path

import numpy as np

from jitterlab.analysis.logic import decode_binary


def write_capture(path: Path, seconds: float, rate_hz: int, wave_hz: int) -> int:
    """A capture with a jittered square wave on bit 0; returns how many edges it holds."""
    rng = np.random.default_rng(1)
    n = int(seconds * rate_hz)
    half = rate_hz // (2 * wave_hz)
    edges = np.arange(half, n, half, dtype=np.int64) + rng.integers(-2, 3, size=len(range(half, n, half)))
    block = 1 << 24
    with open(path, "wb") as f:
        for start in range(0, n, block):
            stop = min(start + block, n)
            k = np.arange(start, stop, dtype=np.int64)
            level = (np.searchsorted(edges, k, side="right") % 2).astype(np.uint8)
            noise = rng.integers(0, 256, size=stop - start, dtype=np.uint8) & 0xFE
            (noise | level).tofile(f)
    return len(edges)


def measure(path: Path, n_samples: int) -> tuple[float, int, int]:
    tracemalloc.start()
    t0 = time.perf_counter()
    edges = decode_binary(path, unitsize=1, bit=0, expected_samples=n_samples)
    elapsed = time.perf_counter() - t0
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return elapsed, len(edges.index), peak


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=4.0, help="capture length (s)")
    parser.add_argument("--rate", type=int, default=24_000_000, help="samples per second")
    args = parser.parse_args()
    n = int(args.seconds * args.rate)
    print(f"capture: {args.seconds:g} s at {args.rate / 1e6:g} MHz = {n / 1e6:.0f} M samples "
          f"({n / 2**20:.0f} MiB raw)")
    with tempfile.TemporaryDirectory() as tmp:
        for wave_hz in (1_000, 1_000_000):
            path = Path(tmp) / f"capture-{wave_hz}.bin"
            made = write_capture(path, args.seconds, args.rate, wave_hz)
            elapsed, found, peak = measure(path, n)
            assert found == made, f"decoded {found} edges, the capture holds {made}"
            print(f"{wave_hz / 1e3:g} kHz wave: {found} edges in {elapsed:.3f} s -> "
                  f"{found / elapsed / 1e6:.2f} M edges/s, {n / elapsed / 1e6:.0f} M samples/s, "
                  f"{args.seconds / elapsed:.1f} s of capture per s; peak memory "
                  f"{peak / 2**20 / args.seconds:.1f} MiB per s of capture ({peak / 2**20:.0f} MiB in all)")
            path.unlink()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
