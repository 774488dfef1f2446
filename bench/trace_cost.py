"""What tracing costs a measurement, and how fast a traced run is explained.

    python bench/trace_cost.py [--repetitions 5] [--duration 3s]

Runs, in one campaign on this machine (root: tracing needs it), c-fifo at 1 ms with trace = "off"
and trace = "sched" (the same cell but for the key; repetitions interleaved, so drift and other
tenants spread over both) and prints, per cell, the median over the runs of p99 and of the max of
the relative period error (vpin probe), and the ratio traced / untraced: what recording the
scheduler, IRQ and timer events costs the program's timing. Then, for each traced run, parse +
attribution of the periods it explained (tracing/reader.py + analysis/attribution.py, in a fresh
process as bench/trace_read.py measures it): events per CPU second. The machine is shared and
noisy: the ratio of one run of this bench says more than any absolute figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from trace_read import child  # bench/ is no package

CAMPAIGN = """
[campaign]
name = "trace-cost"
duration = "{duration}"
repetitions = {repetitions}
[campaign.cpus]
program = "1"
probe = "0"
[[target]]
name = "local"
kind = "local"
[matrix]
benchmark = "squarewave"
impl = "c-fifo"
period = "1ms"
trace = ["off", "sched"]
"""
_EXPLAIN = r"""
import json, sys, time
from pathlib import Path
from jitterlab.analysis.attribution import LatePeriod, attribute
from jitterlab.model.explanation import Explanation
from jitterlab.tracing import reader
dat, kept = Path(sys.argv[1]), Explanation.from_json(json.loads(Path(sys.argv[2]).read_text()))
cpu = (kept.program_cpus or (0,))[0]
periods = [LatePeriod(p.due_ns, p.edge_ns, frozenset(kept.pids or ()), cpu) for p in kept.periods]
wall, t0 = time.perf_counter(), time.process_time()
events = reader.read(dat)
parsed = time.process_time()
out = attribute(events, periods, idle_exit_ns=None)
print(json.dumps({"events": len(events), "periods": len(out), "cpu": time.process_time() - t0,
                  "attribution_cpu": time.process_time() - parsed, "wall": time.perf_counter() - wall}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repetitions", type=int, default=5)
    parser.add_argument("--duration", default="3s")
    args = parser.parse_args()
    from jitterlab.cli.main import main as jitterlab
    from jitterlab.model.explanation import ATTACHMENT, TRACE_FILE
    from jitterlab.store.catalog import Store
    from jitterlab.tracing import reader

    reader.helper()  # built once, outside the timings
    with tempfile.TemporaryDirectory() as tmp:
        path, results = Path(tmp) / "cost.toml", Path(tmp) / "results"
        path.write_text(CAMPAIGN.format(duration=args.duration, repetitions=args.repetitions))
        jitterlab(["run", str(path), "--results", str(results)])
        store = Store(results, create=False)
        runs = [r for r in store.runs() if r.status == "ok"]
        by_trace: dict[str, list] = {}
        for r in runs:
            by_trace.setdefault(str(r.cell.param("trace", "off")), []).append(r)
        if set(by_trace) != {"off", "sched"}:
            print(f"no ok runs of both cells ({', '.join(sorted(by_trace)) or 'none'}): see "
                  f"jitterlab show --runs --results {results}")
            return 1
        print(f"c-fifo 1 ms, {args.duration} per run, vpin probe: median over the ok runs")
        print(f"{'metric':<22} {'untraced':>10} {'traced':>10} {'traced/untraced':>16}")
        for name in ("p99_rel_period_error", "max_rel_period_error"):
            off, on = (statistics.median(v for r in by_trace[t] if (v := r.metric(name, "vpin")) is not None)
                       for t in ("off", "sched"))
            print(f"{name:<22} {off:>10.4f} {on:>10.4f} {on / off if off else float('nan'):>16.2f}")
        print(f"runs: {len(by_trace['off'])} untraced, {len(by_trace['sched'])} traced")
        events = cpu = 0.0
        for r in by_trace["sched"]:
            if TRACE_FILE not in r.attachments or ATTACHMENT not in r.attachments:
                continue
            got = child(_EXPLAIN, str(store.root / r.attachments[TRACE_FILE]),
                        str(store.root / r.attachments[ATTACHMENT]))
            events, cpu = events + got["events"], cpu + got["cpu"]
            print(f"  run {r.id[:12]}: {got['events']} events, {got['periods']} periods explained in "
                  f"{got['cpu']:.3f} CPU s (the attribution {got['attribution_cpu']:.3f})")
        if cpu:
            print(f"parse + attribution: {events:.0f} events in {cpu:.2f} CPU s = {events / cpu:,.0f} "
                  "events/s")
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
