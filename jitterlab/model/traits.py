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
- `subject`: the cell key that names whom the run's own metrics are of (squarewave: "probe", the
  observer whose view is the run's figure); "" when they are of the run as a whole. A metric's
  subject (model.records.Metric.subject) is what it is of: "" the run, else an observer, a thread,
  a CPU or a pair of processes the benchmark measured apart.

What an observer of a square wave is (`ObserverTraits`: independent of the program or not, where it
runs) its probe declares; readers ask it by the observer's name (report.traits.observer), never
compare the name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from jitterlab.model.records import Cell

PERIOD_ERRORS, LATENCIES = "period errors", "latencies"

# the subject of a square wave's figures as its program saw them (its own timestamps): stored beside an
# independent observer's in every run whose program timed its edges, and the name of the probe that
# observes nothing else
OWN_VIEW = "self"


@dataclass(frozen=True)
class BenchmarkTraits:
    headline: tuple[str, ...] = ()
    period_ns: Callable[[Cell], int] | None = None
    samples: str = ""
    subject: str = ""

    def subject_of(self, cell: Cell) -> str:
        """Whom the run's own metrics are of: the value of the cell's `subject` key; "" (the run)."""
        return str(cell.param(self.subject, "")) if self.subject else ""

    @property
    def periodic(self) -> bool:
        return self.period_ns is not None


UNKNOWN = BenchmarkTraits()  # a benchmark no longer registered (an old store): nothing declared


@dataclass(frozen=True)
class ObserverTraits:
    """What an observer of a square wave is: `independent` of the program (False: the program's
    own timestamps), and where it runs (`location`: "target", "program", "controller",
    "instrument")."""

    independent: bool = True
    location: str = "target"


# an observer no longer registered (an old store): independent, since the program's own view is
# always stored under OWN_VIEW, whose probe is built in; read as on the target, the cautious guess
UNKNOWN_OBSERVER = ObserverTraits()
