"""What a benchmark's runs are, for whoever reads them back (the report, compare, the envelope): a
benchmark declares its traits, and nothing that reads stored runs tests a benchmark's name.

- `headline`: the metrics a reader watches, most important first: the columns of its tables, and
  the family every comparison tests (`summary`, `compare`, `report` and `run --until-decided` alike;
  analysis.family). A benchmark without a declaration watches every graded metric it has.
- `period_ns`: for a periodic benchmark (`periodic`), whose runs make a signal held to a period (probes
  watching edges), how a cell's nominal period in ns is read from the benchmark's typed record of it:
  the operational envelope, the "what holds" table and the paper's figure are made of those runs.
- `samples`: what its raw series hold within a run, for tails compared as tails: PERIOD_ERRORS (the
  |relative period error| of every period, per probe) or LATENCIES (every latency of the run, one
  distribution for the run-wide metrics); "" for none.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitterlab.model.records import Cell

PERIOD_ERRORS, LATENCIES = "period errors", "latencies"


@dataclass(frozen=True)
class BenchmarkTraits:
    headline: tuple[str, ...] = ()
    period_ns: Callable[[Cell], int] | None = None
    samples: str = ""

    @property
    def periodic(self) -> bool:
        return self.period_ns is not None


UNKNOWN = BenchmarkTraits()  # a benchmark no longer registered (an old store): nothing declared
