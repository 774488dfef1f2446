"""Why a traced run's periods were late, as the run keeps it: its explained periods, each one's
lateness split into causes (analysis/attribution.py), how its edges were put on the trace's clock,
and what the trace lost. A run that asked for a trace and explains nothing says why (`refused`).

Kept as JSON beside the run (its attachment `explained.json`, model/stored.py: read by any later
jitterlab, written back key for key); read by the report, `show`, `summary`, `explain` and the
JSON export, which never read the trace itself. Times are on the trace's clock (CLOCK_MONOTONIC of
the target), in ns.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from jitterlab.model.stored import Stored

ATTACHMENT = "explained.json"  # the run's attachment holding its Explanation
TRACE_FILE = "trace.dat"  # the run's attachment holding its trace (trace-cmd report reads it)

# where an explained period's edges come from, on the trace's clock
DIRECT = "direct"  # the probe read the target's CLOCK_MONOTONIC (vpin, self)
PROGRAM_LOG = "program-log"  # an outside probe, mapped through the program's own toggles

# why a period was explained
WORST = "worst"  # one of the run's N latest periods
ENVELOPE = "envelope"  # it breaks the cell's envelope rule


@dataclass(frozen=True, kw_only=True)
class Who(Stored):
    """What took the time: a task (comm, pid, policy, priority), an IRQ (number, name; -1: an
    hrtimer callback), a softirq (vector name) or a migration (from, to). `text` is how a person
    reads it ("stress-ng-cpu [SCHED_OTHER nice 0] pid 812", "IRQ 11 virtio0", "softirq NET_RX")."""

    kind: str | None = None  # "task", "irq", "softirq", "move"
    text: str | None = None
    comm: str | None = None
    pid: int | None = None
    policy: str | None = None  # SCHED_OTHER, SCHED_FIFO/RR, SCHED_DEADLINE
    priority: int | None = None  # real-time priority of FIFO/RR, nice of the others
    irq: int | None = None
    irq_name: str | None = None
    softirq: str | None = None
    from_cpu: int | None = None
    to_cpu: int | None = None


@dataclass(frozen=True, kw_only=True)
class Part(Stored):
    """One cause of a period's lateness and how long it lasted (analysis.attribution.CAUSES)."""

    cause: str
    duration_ns: int
    who: Who | None = None


@dataclass(frozen=True, kw_only=True)
class Span(Stored):
    """A stretch of the program's CPU during a period, for the timeline: its cause (None: the trace
    does not cover it) and who."""

    start_ns: int
    end_ns: int
    cpu: int
    cause: str | None = None
    who: Who | None = None


@dataclass(frozen=True, kw_only=True)
class ExplainedPeriod(Stored):
    """One late period: its number in the run (0: the first after the warm-up), due time and real
    edge, why it was explained, its causes longest first, what the trace does not cover
    (`remainder_ns`: shown, never spread), and its spans where the run kept them (its worst)."""

    index: int
    due_ns: int
    edge_ns: int
    chosen: str  # WORST or ENVELOPE
    parts: tuple[Part, ...] = ()
    remainder_ns: int = 0
    spans: tuple[Span, ...] | None = None

    @property
    def lateness_ns(self) -> int:
        return self.edge_ns - self.due_ns


@dataclass(frozen=True, kw_only=True)
class Explanation(Stored):
    """A traced run's late periods, explained. `aligned_by` is DIRECT or PROGRAM_LOG with the
    mapping's `residual_ns` (the parts add up to the lateness within it); `refused` why nothing is
    explained (no mapping between the probe and the trace, a trace that lost the run, ...);
    `events`/`lost_events` what the trace holds and what the kernel dropped; `emulated` when the
    target is an emulated CPU (functional evidence, never timing)."""

    aligned_by: str | None = None
    residual_ns: int | None = None
    refused: str | None = None
    events: int | None = None
    lost_events: int | None = None
    program_cpus: tuple[int, ...] | None = None
    pids: tuple[int, ...] | None = None
    emulated: bool | None = None
    periods: tuple[ExplainedPeriod, ...] = ()

    def by_cause(self) -> dict[str, int]:
        """ns per cause over the explained periods, the remainder under "uncovered"."""
        return shares(self.periods)


def shares(periods: Iterable[ExplainedPeriod]) -> dict[str, int]:
    """ns per cause over these periods (of one run, or of a cell's runs), "uncovered" for what the
    traces do not cover; the total is the periods' lateness."""
    out: dict[str, int] = {}
    for p in periods:
        for part in p.parts:
            out[part.cause] = out.get(part.cause, 0) + part.duration_ns
        if p.remainder_ns:
            out["uncovered"] = out.get("uncovered", 0) + p.remainder_ns
    return out
