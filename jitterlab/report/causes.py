"""Why periods were late, as a person reads it: a traced run's stored Explanation (model/explanation.py,
the attachment `explained.json`), its causes grouped by what took the time, as shares of the
lateness, each with the remedy that fits it. Every view (show, summary, the HTML report, the JSON
export, `explain`) reads causes through this module; none of them reads the trace itself.

Shares: the explained periods' lateness (of one run, or of a cell's runs) is split into the parts'
causes, grouped by cause and who (a task by its command and policy, not its pid, which changes
from run to run; an IRQ by number and name; a softirq by vector), the longest first. The first
`TOP` groups are named, the rest summed as "other", and what the trace does not cover (the
periods' remainder) is its own share, "not covered by the trace". Shares are of the lateness, so
they add up to 1.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.model.explanation import ATTACHMENT, TRACE_FILE, ExplainedPeriod, Explanation, Who
from jitterlab.model.records import RunRecord
from jitterlab.model.stored import Unreadable
from jitterlab.report.format import duration

TOP = 3  # groups named per cell; the rest are "other"
UNCOVERED = "uncovered"  # model.explanation.shares' key for the periods' remainder
OTHER = "other"
EMULATED_NOTE = "functional evidence only (emulated CPU)"
HOW_TO_TRACE = 'trace = "sched" in the campaign\'s [matrix] (docs/tracing.md)'


class DamagedExplanation(UserError):
    """A run's explained.json that cannot be read: names the file and how to get it back."""


@dataclass(frozen=True)
class Share:
    """One group of a cell's causes: the cause, who (None: no one, or several under "other"), how
    a person reads it, its ns and its share of the lateness (0..1)."""

    cause: str
    who: str | None
    text: str
    ns: int
    share: float
    example: Who | None = None  # one of whom it groups (its remedy reads the policy, the IRQ number)


@dataclass(frozen=True)
class Shares:
    """A cell's (or a run's) causes: the groups longest first (at most TOP, then "other", then
    what the trace does not cover), the lateness they split, and how many periods and runs."""

    groups: tuple[Share, ...]
    lateness_ns: int
    periods: int
    runs: int
    emulated: bool = False

    def line(self) -> str:
        """"81 % preempted by stress-ng-cpu [SCHED_OTHER], 12 % IRQ 11 virtio0, 7 % unaccounted"."""
        return ", ".join(f"{percent_share(g.share)} {g.text}" for g in self.groups)

    def causes(self) -> frozenset[str]:
        """The causes with time in them ("uncovered" and "other" are not causes)."""
        return frozenset(g.cause for g in self.groups if g.cause not in (UNCOVERED, OTHER) and g.ns > 0)


@dataclass(frozen=True)
class Remedy:
    """What to change for a cause, and the tuning (jitterlab/tunings/) that makes the change for a
    cell, where there is one."""

    text: str
    tuning: str | None = None


def percent_share(share: float) -> str:
    """A share of the lateness as a whole percent ("70 %"); "<1 %" for a share that is not nothing."""
    whole = round(share * 100)
    return "<1 %" if whole == 0 and share > 0 else f"{whole} %"


# --- reading -----------------------------------------------------------------------------------


def traced(run: RunRecord) -> bool:
    """Whether the run keeps an explanation (it was traced)."""
    return ATTACHMENT in run.attachments


def trace_path(run: RunRecord, root: Path) -> Path | None:
    """The run's trace.dat in the results directory `root`, where it keeps one."""
    return root / run.attachments[TRACE_FILE] if TRACE_FILE in run.attachments else None


def read_explanation(run: RunRecord, root: Path) -> Explanation | None:
    """The run's Explanation from its attachment under `root`; None for an untraced run;
    DamagedExplanation naming the file when it is gone or not an Explanation."""
    if not traced(run):
        return None
    path = root / run.attachments[ATTACHMENT]
    fix = "jitterlab check names the store's damaged files; measure the run again"
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise DamagedExplanation(f"{path}: run {run.id}'s explanation cannot be read "
                                 f"({exc.strerror or exc}); {fix}") from None
    except ValueError as exc:
        raise DamagedExplanation(f"{path}: run {run.id}'s explanation is not JSON ({exc}); {fix}") from None
    if not isinstance(data, dict):
        raise DamagedExplanation(f"{path}: run {run.id}'s explanation is not a JSON object; {fix}")
    try:
        return Explanation.from_json(data)
    except (Unreadable, TypeError) as exc:
        raise DamagedExplanation(f"{path}: run {run.id}'s explanation is damaged ({exc}); {fix}") from None


class Explanations:
    """The explanations of a store's runs, each read once; a damaged one is None here, and its
    message kept in `damaged` for the view to say."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)
        self._read: dict[str, Explanation | None] = {}
        self.damaged: dict[str, str] = {}

    def of(self, run: RunRecord) -> Explanation | None:
        if run.id not in self._read:
            try:
                self._read[run.id] = read_explanation(run, self.root)
            except DamagedExplanation as exc:
                self._read[run.id], self.damaged[run.id] = None, str(exc)
        return self._read[run.id]

    def explained(self, runs: Iterable[RunRecord]) -> list[tuple[RunRecord, Explanation]]:
        """The runs that explain periods, with their explanation (refused ones left out)."""
        return [(r, e) for r in runs if (e := self.of(r)) is not None and not e.refused and e.periods]


# --- shares ------------------------------------------------------------------------------------


def who_key(who: Who | None) -> str | None:
    """Who, as causes are grouped: a task by command and policy (with a real-time priority), an IRQ
    by number and name, a softirq by vector, a move by its CPUs; else its text."""
    if who is None:
        return None
    if who.kind == "task" and who.pid == 0:
        return "idle"
    if who.kind == "task" and who.comm:
        if who.policy and who.policy != "SCHED_OTHER" and who.priority is not None:
            return f"{who.comm} [{who.policy} {who.priority}]"
        return f"{who.comm} [{who.policy}]" if who.policy else who.comm
    if who.kind == "irq" and who.irq is not None:
        if who.irq == -1:
            return "hrtimer callbacks"
        return f"IRQ {who.irq} {who.irq_name}" if who.irq_name else f"IRQ {who.irq}"
    if who.kind == "softirq" and who.softirq:
        return f"softirq {who.softirq}"
    if who.kind == "move" and who.from_cpu is not None and who.to_cpu is not None:
        return f"CPU {who.from_cpu} → {who.to_cpu}"
    return who.text


_WORDS = {  # a cause as a person reads it; {who} is who_key
    "wakeup": "preempted by {who}",
    "switch": "{who} ran on until the switch",
    "timer": "timer held off while {who} ran",
    "irq": "{who}",
    "softirq": "{who}",
    "migration": "migrated {who}",
    "program": "the program's own code",
    "slack": "timer slack",
    "idle-exit": "idle exit",
    "unaccounted": "unaccounted (no kernel event)",
    UNCOVERED: "not covered by the trace",
    OTHER: "other",
}


def cause_text(cause: str, who: str | None) -> str:
    """"preempted by stress-ng-cpu [SCHED_OTHER]", "IRQ 11 virtio0", "unaccounted (no kernel event)"."""
    words = _WORDS.get(cause, cause)
    if "{who}" in words:
        return words.format(who=who) if who else cause
    return words


def shares(periods: Iterable[ExplainedPeriod], *, runs: int = 1, emulated: bool = False,
           top: int = TOP) -> Shares:
    """The periods' lateness split into groups of cause and who, as shares (module docstring)."""
    periods = list(periods)
    grouped: dict[tuple[str, str | None], int] = {}
    example: dict[tuple[str, str | None], Who | None] = {}
    uncovered = 0
    for p in periods:
        for part in p.parts:
            key = (part.cause, who_key(part.who))
            grouped[key] = grouped.get(key, 0) + part.duration_ns
            example.setdefault(key, part.who)
        uncovered += p.remainder_ns
    total = sum(grouped.values()) + uncovered
    ranked = sorted(((ns, cause, who) for (cause, who), ns in grouped.items() if ns > 0),
                    key=lambda x: (-x[0], x[1], x[2] or ""))
    out = [Share(cause, who, cause_text(cause, who), ns, ns / total, example[(cause, who)])
           for ns, cause, who in ranked[:top]]
    rest = sum(ns for ns, _, _ in ranked[top:])
    if rest:
        n = len(ranked) - top
        out.append(Share(OTHER, None, f"other ({n} more)", rest, rest / total))
    if uncovered:
        out.append(Share(UNCOVERED, None, cause_text(UNCOVERED, None), uncovered, uncovered / total))
    return Shares(tuple(out), total, len(periods), runs, emulated)


def run_shares(explanation: Explanation) -> Shares:
    return shares(explanation.periods, emulated=bool(explanation.emulated))


def cell_of(run: RunRecord) -> tuple[str, str]:
    """(target, the cell's label): how runs are put together in a cell."""
    from jitterlab.campaign import cells

    return run.target, cells.label(run.cell)


def cell_shares(runs: Iterable[RunRecord], explanations: Explanations) -> dict[tuple[str, str], Shares]:
    """Per cell (target, label) that has explained periods: its runs' causes as shares."""
    found: dict[tuple[str, str], list[Explanation]] = {}
    for run, e in explanations.explained(runs):
        found.setdefault(cell_of(run), []).append(e)
    return {cell: shares([p for e in es for p in e.periods], runs=len(es),
                         emulated=any(bool(e.emulated) for e in es))
            for cell, es in sorted(found.items())}


def traced_causes(runs: Iterable[RunRecord], explanations: Explanations) -> dict[str, frozenset[str]]:
    """Per target with explained periods: every cause its traces show (time in it), for the limits
    block to agree with (report/limits.py)."""
    out: dict[str, set[str]] = {}
    for run, e in explanations.explained(runs):
        out.setdefault(run.target, set()).update(
            part.cause for p in e.periods for part in p.parts if part.duration_ns > 0)
    return {target: frozenset(causes) for target, causes in sorted(out.items())}


def uncovered_share(runs: Iterable[RunRecord], explanations: Explanations) -> dict[str, float]:
    """Per target with explained periods: the share of their lateness its traces do not cover."""
    late: dict[str, list[int]] = {}
    for run, e in explanations.explained(runs):
        total = late.setdefault(run.target, [0, 0])
        total[0] += sum(p.remainder_ns for p in e.periods)
        total[1] += sum(p.lateness_ns for p in e.periods)
    return {target: gap / whole for target, (gap, whole) in sorted(late.items()) if whole > 0}


# --- remedies ----------------------------------------------------------------------------------


def _wakeup(who: Who | None, _: str | None) -> Remedy:
    rt = who is not None and who.policy not in (None, "SCHED_OTHER") and who.priority is not None
    policy = (f"a SCHED_FIFO priority above {who.priority} for the program" if rt and who else
              "a real-time policy for the program (SCHED_FIFO, e.g. impl c-fifo)")
    return Remedy(f"{policy}, or an isolated CPU other tasks cannot run on", "isolated")


def _irq(who: Who | None, name: str | None) -> Remedy:
    if who is not None and who.irq == -1:
        return Remedy("other timers' callbacks on the program's CPU: an isolated CPU (nohz_full)", "isolated")
    irq = f"IRQ {who.irq}'s" if who is not None and who.irq is not None else "the IRQ's"
    return Remedy(f"{irq} affinity away from the program's CPU", "irq-away")


# cause -> its remedy for who took the time (Who, and who_key of it)
_REMEDIES: dict[str, Callable[[Who | None, str | None], Remedy]] = {
    "wakeup": _wakeup,
    "switch": lambda _, name: Remedy(
        f"{name or 'the task'} held a section the kernel does not preempt: a kernel with full preemption "
        "(PREEMPT or PREEMPT_RT), or an isolated CPU it cannot run on", "isolated"),
    "timer": lambda _, name: Remedy(
        f"the timer's interrupt was held off while {name or 'another task'} ran: a PREEMPT_RT kernel, or "
        "an isolated CPU it cannot run on", "isolated"),
    "irq": _irq,
    "softirq": lambda _, __: Remedy(
        "the softirq follows the IRQ that raised it: IRQ affinity away from the program's CPU; on "
        "PREEMPT_RT softirqs run threaded, so a program priority above them", "irq-away"),
    "idle-exit": lambda _, __: Remedy("no deep idle state: hold /dev/cpu_dma_latency at 0",
                                      "cpu-dma-latency"),
    "unaccounted": lambda _, __: Remedy(
        "nothing in Linux: hardware or hypervisor (an SMI, firmware, the VM's host)"),
    "slack": lambda _, __: Remedy("the program's timer slack at 1 ns (a real-time policy has none)",
                                  "timer-slack"),
    "program": lambda _, __: Remedy("a compiled impl (c-mmap, c-fifo) with its memory locked", "mlock"),
    "migration": lambda _, __: Remedy("the program pinned to one CPU ([campaign.cpus])"),
}


def remedy(cause: str, who: Who | None = None) -> Remedy | None:
    """The change that fits a cause, for who took the time (None: "other" and what the trace does not
    cover have none)."""
    fits = _REMEDIES.get(cause)
    return fits(who, who_key(who)) if fits is not None else None


def remedy_text(r: Remedy) -> str:
    """The remedy with its tuning named: "... (tuning irq-away)"."""
    return f"{r.text} (tuning {r.tuning})" if r.tuning else r.text


def remedies(s: Shares) -> list[tuple[Share, Remedy]]:
    """Each named group of a cell's causes with its remedy; a remedy said once."""
    out, said = [], set()
    for g in s.groups:
        r = remedy(g.cause, g.example)
        if r is not None and (r.text, r.tuning) not in said:
            said.add((r.text, r.tuning))
            out.append((g, r))
    return out


def traced_note(explanation: Explanation) -> str:
    """How a traced run says it was: its alignment, its events and losses, and, emulated, the
    evidence it is."""
    if explanation.refused:
        return f"traced; nothing explained: {explanation.refused}"
    counts = [f"{explanation.events:,} events"] if explanation.events is not None else []
    if explanation.lost_events:
        counts.append(f"{explanation.lost_events:,} lost by the kernel")
    text = "traced" + (f" ({', '.join(counts)})" if counts else "")
    if explanation.aligned_by:
        text += f"; edges on the trace's clock: {explanation.aligned_by}"
        if explanation.residual_ns is not None:
            text += f" (within {duration(explanation.residual_ns)})"
    if explanation.emulated:
        text += f"; {EMULATED_NOTE}"
    return text


def as_export(explanation: Explanation | None, damaged: str | None = None) -> Mapping[str, object] | None:
    """What the JSON export keeps of a run's explanation: the record as stored, with its cause
    shares beside it; None for an untraced run."""
    if damaged is not None:
        return {"damaged": damaged}
    if explanation is None:
        return None
    s = run_shares(explanation)
    return {**explanation.as_json(),
            "shares": [{"cause": g.cause, "who": g.who, "text": g.text, "ns": g.ns, "share": g.share}
                       for g in s.groups]}
