"""The `sched` load: hackbench (rt-tests) rounds in a loop, scheduler and IPC pressure.

hackbench prints its result ("Time: 0.612") only when a round ends and nothing when signalled,
so a constant shell loop runs rounds of `loops` messages until stopped (or until its deadline,
which bounds its life); achieved = messages of the finished rounds / their time. The log grows with
every round, so the load is read per run as it goes (Sustained): kept up between runs that use it.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass

from jitterlab.measure.loads.base import (
    LOADS,
    LoadContext,
    LoadSpec,
    Sustained,
    Tool,
    lifetime_s,
)
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options
from jitterlab.model.params import Param, boolean, integer, parse_options
from jitterlab.model.records import Metric
from jitterlab.targets.processes import describe_exit

PARAMS = (
    Param("groups", "hackbench --groups", integer(1, 10_000), "20", default=10),
    Param("fds", "hackbench --fds: senders and receivers per group", integer(1, 10_000), "10", default=20),
    Param("loops", "messages per sender and receiver per round", integer(1), "100", default=50),
    Param("threads", "threads instead of processes (hackbench --threads)", boolean, "true", default=False),
    Param("pipe", "pipes instead of sockets (hackbench --pipe)", boolean, "true", default=False),
)
# $1: seconds to live; the rest: the hackbench argv. A failed round ends the loop with its status.
LOOP = 'end=$(( $(date +%s) + $1 )); shift; while [ "$(date +%s)" -lt "$end" ]; do "$@" || exit; done'
_TIME = re.compile(r"^Time:\s*([0-9.]+)\s*$", re.M)


@dataclass(frozen=True)
class SchedOptions(Options):
    groups: int  # hackbench --groups
    fds: int  # senders and receivers per group
    loops: int  # messages per sender and receiver per round
    threads: bool
    pipe: bool


def validate_options(options: dict, where: str) -> dict:
    """Check sched's options; return them with defaults filled in."""
    return parse_options(PARAMS, options, where, "load 'sched'")


def messages_per_round(opts: SchedOptions) -> int:
    """Each of a group's `fds` senders writes `loops` messages to each of its `fds` receivers."""
    return opts.groups * opts.fds * opts.fds * opts.loops


def parse_rounds(log_text: str) -> list[float]:
    """Seconds of every finished hackbench round."""
    return [float(t) for t in _TIME.findall(log_text)]


class SchedLoad(Sustained):
    """hackbench rounds, back to back, in one process group."""

    def __init__(self) -> None:
        self._tool: Tool | None = None
        self._result: list[Metric] | None = None
        self._read = 0  # rounds of the log already read by mark()

    def start(self, ctx: LoadContext) -> None:
        opts = SchedOptions.of(validate_options(ctx.options, "load sched"))
        self._opts = opts
        ctx.target.run(["mkdir", "-p", ctx.scratch])
        hackbench = ["hackbench", "--groups", str(opts.groups), "--fds", str(opts.fds),
                     "--loops", str(opts.loops)]
        hackbench += ["--threads"] if opts.threads else []
        hackbench += ["--pipe"] if opts.pipe else []
        argv = ["sh", "-c", LOOP, "sh", str(lifetime_s(ctx)), *hackbench]
        self._tool = Tool(ctx, "sched load: hackbench loop", argv, "hackbench.log")
        self._tool.await_running(workers=1)

    def check(self) -> None:
        """The loop alive, nothing stopped, CPU time used (rounds end and start: no worker count)."""
        self._tool.check()

    def mark(self) -> None:
        self._read = len(parse_rounds(self._tool.read(self._tool.log)))

    def snapshot(self) -> list[Metric]:
        """Rate over the rounds finished since mark() (or the start); the loop runs on."""
        return self._rate(parse_rounds(self._tool.read(self._tool.log))[self._read:], "the loop runs")

    def stop(self) -> list[Metric]:
        """Stop the loop (the round under way is lost); rate over the finished rounds."""
        if self._result is not None or self._tool is None:
            return self._result or []
        rc = self._tool.finish(signal.SIGTERM, timeout_s=2.0)
        rounds = parse_rounds(self._tool.read(self._tool.log))[self._read:]  # since mark(), like snapshot()
        self._result = self._rate(rounds, f"loop {describe_exit(rc)}")
        return self._result

    def _rate(self, rounds: list[float], state: str) -> list[Metric]:
        seconds = sum(rounds)
        if not rounds or seconds <= 0:
            raise RunFailed(
                f"sched load: no hackbench round finished ({state}), so there is "
                f"no achieved rate; lower [loads.sched] loops (now {self._opts.loops}) or run "
                f"longer; {self._tool.log_tail()}"
            )
        return [
            Metric("load_sched_messages_per_s", len(rounds) * messages_per_round(self._opts) / seconds,
                   "messages/s"),
            Metric("load_sched_rounds", float(len(rounds)), "rounds"),
        ]


LOADS.add(
    "sched",
    "hackbench rounds in a loop (scheduler/IPC pressure); options: groups, fds, loops, threads, "
    "pipe",
    LoadSpec(SchedLoad, {"hackbench": "rt-tests"}, PARAMS, record=SchedOptions),
)
