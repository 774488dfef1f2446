"""A squarewave cell's matrix keys as one typed record (model/options.py).

The benchmark (benchmarks/squarewave.py, whose Params these fields read) and its pins and probes
(which check the period against what they can make or see) all read a cell through it. It lives
here, not beside the Params, because the benchmark imports the pins and probes: they could not
import it back.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.model.options import Options, key
from jitterlab.model.records import Cell

TRACE_KEY = "trace"  # the cell key that asks for a kernel trace of each run (docs/tracing.md)
TRACE_OFF, TRACE_SCHED = "off", "sched"


def traced(cell: Cell) -> bool:
    """The cell's runs record a kernel trace and explain their late periods."""
    return cell.param(TRACE_KEY, TRACE_OFF) != TRACE_OFF


@dataclass(frozen=True)
class WaveCell(Options):
    impl: str
    period_ns: int = key("period")
    probe: str = key("probe")
    pin: str = key("pin")
