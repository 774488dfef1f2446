"""What a benchmark's runs are, for whoever reads them back (the report, compare, the envelope): a
benchmark declares its traits, and nothing that reads stored runs tests a benchmark's name.

- `headline`: the metrics a reader watches, most important first: the columns of its tables, and
  the family every comparison tests (`summary`, `compare`, `report` and `run --until-decided` alike;
  analysis.family). A benchmark without a declaration watches every graded metric it has.
- `periodic`: its runs make a periodic signal held to a period (`period`, probes watching edges): the
  operational envelope, the "what holds" table and the paper's figure are made of them.
- `samples`: what its raw series hold within a run, for tails compared as tails: PERIOD_ERRORS (the
  |relative period error| of every period, per probe) or LATENCIES (every latency of the run, one
  distribution for the run-wide metrics); "" for none.
"""

from __future__ import annotations

from dataclasses import dataclass

PERIOD_ERRORS, LATENCIES = "period errors", "latencies"


@dataclass(frozen=True)
class BenchmarkTraits:
    headline: tuple[str, ...] = ()
    periodic: bool = False
    samples: str = ""


UNKNOWN = BenchmarkTraits()  # a benchmark no longer registered (an old store): nothing declared
