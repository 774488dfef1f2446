"""A fake benchmark and fake loads for the `fake` target kind, so that `jitterlab run` is tested in
milliseconds: a campaign file names them (benchmark = "fake", load = "fake"), and a test says with
PLAN where a run fails, is interrupted or loses its target. Nothing real runs: their processes are
the fake target's, on its clock.

`fake` is a load that reports as it goes (Sustained: kept up between runs); `fake-oneshot` reports
only when it stops (started and stopped for every run).
"""

from __future__ import annotations

import os
import signal
import threading
from collections import Counter
from dataclasses import dataclass, field

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement
from jitterlab.measure.loads.base import LOADS, LoadContext, LoadSpec, Sustained
from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric
from jitterlab.model.registry import Entry
from jitterlab.targets.fake import FakeTarget


@dataclass
class Plan:
    """What goes wrong, each at (target, phase, repetition); phases: prepare, measure, analyse."""

    interrupt: tuple[str, str, int] | None = None  # SIGINT to this process, as a user's Ctrl-C
    lose: tuple[str, str, int] | None = None  # the target's connection drops
    drop: tuple[str, str, int] | None = None  # it drops unnoticed: the runner's next command finds out
    fail: tuple[str, str, int] | None = None  # the run fails (RunFailed)
    load_dies: tuple[str, int] | None = None  # the load's process dies while this run measures
    load_start_fails: set[int] = field(default_factory=set)  # these starts of a load (0, 1, ...) fail
    events: list[tuple[str, str, int]] = field(default_factory=list)  # (target, what, repetition)
    counts: Counter = field(default_factory=Counter)  # "start fake", "stop fake", "snapshot fake", ...
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count(self, what: str) -> None:
        with self.lock:
            self.counts[what] += 1


PLAN = Plan()


def interrupt_and_block(target: FakeTarget) -> None:
    """Ctrl-C arrives; what ran on the target runs on until the runner closes it, then is killed."""
    os.kill(os.getpid(), signal.SIGINT)
    assert target.closing.wait(10), "the interrupt did not close the target"
    raise RunFailed("killed by the interrupt")


def _hook(ctx, phase: str) -> None:
    where = (ctx.target.name, phase, ctx.repetition)
    with PLAN.lock:
        PLAN.events.append((ctx.target.name, phase, ctx.repetition))
    if PLAN.interrupt == where:
        interrupt_and_block(ctx.target)
    if PLAN.lose == where:
        ctx.target.lose("the fake target's cable was pulled")
        ctx.target.run(["true"])  # the next command finds out
    if PLAN.drop == where:
        ctx.target.lose("the fake target's cable was pulled")
    if PLAN.fail == where:
        raise RunFailed(f"the fake benchmark failed in {phase}")


class _Measuring:
    def __init__(self, ctx) -> None:
        self.ctx = ctx
        self.program = ctx.target.spawn(["fake-program", ctx.scratch])
        self.closed = False

    def measure(self) -> int:
        ctx = self.ctx
        _hook(ctx, "measure")
        if PLAN.load_dies == (ctx.target.name, ctx.repetition):
            for proc in ctx.target.running():
                if proc.argv[0] == "fake-load":
                    proc.signal(signal.SIGKILL)
        ctx.target.clock_s += ctx.settings.duration_ns / 1e9
        self.program.stop()
        return ctx.repetition

    def close(self) -> None:
        self.closed = True
        self.program.stop()


class FakeBenchmark(BenchmarkBase):
    metrics = ("fake_value",)

    def prepare(self, ctx) -> _Measuring:
        _hook(ctx, "prepare")
        return _Measuring(ctx)

    def analyse(self, ctx, measured) -> Measurement:
        _hook(ctx, "analyse")
        return Measurement([Metric("fake_value", float(measured), "")])


class OneshotLoad:
    """One fake process; reports ops/s over its life when it stops."""

    name = "fake-oneshot"

    proc = None

    def start(self, ctx: LoadContext) -> None:
        with PLAN.lock:
            n = PLAN.counts[f"start {self.name}"]
            PLAN.counts[f"start {self.name}"] += 1
        if n in PLAN.load_start_fails:
            raise RunFailed(f"{self.name} load: cannot start (start #{n})")
        self.target = ctx.target
        self.proc = ctx.target.spawn(["fake-load", ctx.scratch, f"--lifetime={ctx.max_duration_s:g}"])

    def check(self) -> None:
        PLAN.count(f"check {self.name}")
        if self.proc.poll() is not None:
            raise RunFailed(f"{self.name} load: its process is gone")

    def stop(self) -> list[Metric]:
        if self.proc is None:
            return []
        PLAN.count(f"stop {self.name}")
        self.proc.stop()
        return [Metric("load_fake_ops_per_s", 100.0 if isinstance(self, Sustained) else 99.0, "ops/s")]


class FakeLoad(OneshotLoad, Sustained):
    """The same, read per run as it goes: kept up between runs."""

    name = "fake"

    def mark(self) -> None:
        PLAN.count(f"mark {self.name}")

    def snapshot(self) -> list[Metric]:
        PLAN.count(f"snapshot {self.name}")
        if self.proc.poll() is not None:
            raise RunFailed(f"{self.name} load: its process is gone")
        return [Metric("load_fake_ops_per_s", 100.0, "ops/s")]


def register(monkeypatch) -> Plan:
    """Make the fake benchmark and loads known for one test (gone after it); a fresh PLAN."""
    global PLAN
    PLAN = Plan()
    monkeypatch.setitem(BENCHMARKS._entries, "fake", Entry("fake", "for tests", FakeBenchmark()))
    for load in (FakeLoad, OneshotLoad):
        monkeypatch.setitem(LOADS._entries, load.name, Entry(load.name, "for tests", LoadSpec(load, {})))
    return PLAN
