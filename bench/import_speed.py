"""How fast and how lean is `jitterlab import`? Edges/s and peak memory, CSV and VCD.

    python bench/import_speed.py [--edges 1e7]

Each file is read by read_capture in a fresh subprocess (after a tiny warm-up read, so numba's
compile cache is loaded, not timed). Peak memory is what the read allocated at its peak:
tracemalloc's peak (Python and numpy) plus pyarrow's pool maximum. The file itself is read
through the page cache (a memory map for VCD) and is not counted. Files are written
once into a temporary directory: CSV with decimal seconds ("1.000500123,1"), CSV with integer
ns, and a 1 ns VCD as sigrok writes it.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv

from jitterlab.analysis.synthetic import square_wave

PERIOD_NS = 1_000_000
_CHILD = r"""
import json, sys, time, tracemalloc
from pathlib import Path
import pyarrow as pa
from jitterlab.importers import read_capture
read_capture(Path(sys.argv[2]))  # warm-up: loads the compiled scanners
tracemalloc.start()
start = time.perf_counter()
cap = read_capture(Path(sys.argv[1]))
wall = time.perf_counter() - start
_, heap = tracemalloc.get_traced_memory()
arrow = pa.default_memory_pool().max_memory()
print(json.dumps({"edges": len(cap.t_ticks), "s": wall, "peak": heap + arrow}))
"""


def write_csv_seconds(path: Path, t_ns: np.ndarray, level: np.ndarray) -> None:
    # decimal128(38, 9) whose integer is the time in ns: pyarrow writes it as exact seconds
    words = np.empty((len(t_ns), 2), dtype=np.int64)
    words[:, 0], words[:, 1] = t_ns, t_ns >> 63
    seconds = pa.Array.from_buffers(pa.decimal128(38, 9), len(t_ns),
                                    [None, pa.py_buffer(words.tobytes())])
    table = pa.table({"Time [s]": seconds, "D0": pa.array(level)})
    pacsv.write_csv(table, path, pacsv.WriteOptions(quoting_style="none"))


def write_csv_ns(path: Path, t_ns: np.ndarray, level: np.ndarray) -> None:
    pacsv.write_csv(pa.table({"time_ns": t_ns, "level": level}), path,
                    pacsv.WriteOptions(quoting_style="none"))


def write_vcd(path: Path, t_ns: np.ndarray, level: np.ndarray) -> None:
    with open(path, "w") as f:
        f.write("$timescale 1 ns $end\n$scope module libsigrok $end\n$var wire 1 ! D0 $end\n"
                "$upscope $end\n$enddefinitions $end\n#0 0!\n")
        for a in range(0, len(t_ns), 1 << 20):
            f.write("".join(f"#{t}\n{v}!\n" for t, v in zip(t_ns[a:a + (1 << 20)].tolist(),
                                                          level[a:a + (1 << 20)].tolist(),
                                                          strict=True)))


def measure(path: Path, tiny: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", _CHILD, str(path), str(tiny)], check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--edges", default="1e7", help="edges per file")
    args = parser.parse_args()
    n = int(float(args.edges))
    t_ns, level = square_wave(PERIOD_NS, n, jitter_ns=3_000)
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        files = {"csv (s)": (d / "s.csv", write_csv_seconds), "csv (ns)": (d / "ns.csv", write_csv_ns),
                 "vcd (1ns)": (d / "cap.vcd", write_vcd)}
        print(f"{'file':>10} {'edges':>10} {'MB':>8} {'s':>7} {'edges/s':>10} {'peak MB':>8} "
              f"{'B/edge':>7}")
        for name, (path, write) in files.items():
            write(path, t_ns, level)
            tiny = path.with_name("tiny" + path.suffix)
            write(tiny, t_ns[:100], level[:100])
            r = measure(path, tiny)
            extra = r["peak"]
            print(f"{name:>10} {r['edges']:>10} {path.stat().st_size / 1e6:>8.0f} {r['s']:>7.2f} "
                  f"{r['edges'] / r['s']:>10.3g} {extra / 1e6:>8.0f} {extra / r['edges']:>7.1f}")


if __name__ == "__main__":
    main()
