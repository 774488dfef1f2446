"""When the vpin observer saw (almost) none of the edges the program wrote, the run says exactly why,
from the observer's stats and blind spans and the program's own timeline (synthetic, exact)."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.measure.squarewave.probes.logs import ObserverCapture, SelfLog
from jitterlab.measure.squarewave.probes.vpin import why_unseen

MS = 1_000_000
# the program: 200 edges, 5 ms apart, from t = 1000 ms to 1995 ms
OWN = SelfLog(np.arange(1000, 2000, 5, dtype=np.int64) * MS, np.tile(np.array([1, 0], np.uint8), 100),
              "monotonic", "c-mmap", 0)


def capture(start_ms: int, end_ms: int, blind_ms: list[tuple[int, int]],
            polls: int = 10**6) -> ObserverCapture:
    blind = np.array(blind_ms, dtype=np.int64).reshape(-1, 2) * MS
    gaps = blind[:, 1] - blind[:, 0]
    stats = {"start_ns": start_ms * MS, "end_ns": end_ms * MS, "polls": polls, "blind_ns": int(gaps.sum()),
             "poll_ns_max": int(gaps.max()) if len(gaps) else 900}
    return ObserverCapture(np.empty(0, np.int64), np.empty(0, np.uint8), blind, stats)


@pytest.mark.parametrize(("seen", "own", "expected"), [
    (capture(900, 3200, [(950, 3100)]), OWN,
     "one gap of 2.15s between two of its polls covered the program's whole run of 995ms: CPU 1 was taken "
     "from it (another real-time task at its priority on that CPU, or the hypervisor descheduling the VM's "
     "CPU); give the probe a CPU of its own (isolcpus=)"),
    (capture(100, 700, []), OWN,
     "it stopped polling 300ms before the program's first edge, at the end of its allowance (duration + "
     "run_timeout): the program started that late"),
    (capture(2500, 2600, []), OWN, "it started polling 505ms after the program's last edge"),
    (capture(900, 2100, [(990, 1400), (1402, 1800), (1801, 1999)]), OWN,
     "it was blind 992ms of the program's 995ms run (longest gap 410ms): CPU 1 was taken from it"),
    (capture(900, 2100, [(1200, 1210)], polls=123456), OWN,
     "it polled 123456 times in 1.2s and the pin's level never changed: the program wrote another file"),
    (capture(900, 2100, [(900, 2000)]), SelfLog(OWN.t_ns + 10**18, OWN.level, "realtime", "bash", 0),
     "it was blind 1.1s of its 1.2s of polling (longest gap 1.1s): CPU 1 was taken from it"),
])
def test_why_the_observer_saw_no_edges(seen, own, expected):
    assert why_unseen(seen, own, cpu=1).startswith(expected)
