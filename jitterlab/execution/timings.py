"""Where a campaign's wall time goes: its phases timed as they happen and written as JSON lines to the
file `jitterlab run --timings FILE` names (bench/campaign_speed.py reads them); nothing is timed or
written when it is not asked for.

One line per phase: {"phase": name, "target": target name or "", "start_s": ..., "end_s": ...}, the
times in seconds of the epoch (time.time(), so that a process that started this one can put its own
moments beside them). The phases of one run (named in RUN_PHASES) are timed by wrapping the benchmark
and the loads the run's phases call (execution/run.py stays as it is); the rest by the runner and the
command around them.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from jitterlab.execution.loads import TargetLoads
from jitterlab.measure.benchmarks.base import Measurement, Measuring, Phases
from jitterlab.measure.context import RunContext
from jitterlab.model.errors import UserError
from jitterlab.model.records import Cell, Metric

# a run's phases in the order they happen (execution/run.py), as the timings file names them
RUN_PHASES = ("loads start", "benchmark prepare", "loads up", "measure", "benchmark close", "loads down",
              "analyse")


class Timings:
    """The phases of one jitterlab process, written as they end (several threads may write)."""

    def __init__(self, path: Path | None = None) -> None:
        self._file: IO[str] | None = None
        self._lock = threading.Lock()
        if path is not None:
            try:
                self._file = open(path, "a", encoding="utf-8")  # noqa: SIM115 (closed by close())
            except OSError as exc:
                raise UserError(f"--timings {path}: cannot write it ({exc.strerror}); give a file in a "
                                "directory you can write") from None

    @property
    def enabled(self) -> bool:
        return self._file is not None

    def record(self, phase: str, start_s: float, end_s: float, target: str = "") -> None:
        if self._file is None:
            return
        line = json.dumps({"phase": phase, "target": target, "start_s": start_s, "end_s": end_s})
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()  # an interrupted run keeps what it timed

    @contextlib.contextmanager
    def phase(self, name: str, target: str = "") -> Iterator[None]:
        """Time what the block does (also when it raises) as phase `name`."""
        if self._file is None:
            yield
            return
        start_s = time.time()
        try:
            yield
        finally:
            self.record(name, start_s, time.time(), target)

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


OFF = Timings()  # what times nothing


class TimedPhases:
    """A benchmark's phases as a run calls them, each timed under its target's name."""

    def __init__(self, bench: Phases, timings: Timings, target: str) -> None:
        self._bench, self._timings, self._target = bench, timings, target

    def warm(self) -> None:
        self._bench.warm()

    def prepare(self, ctx: RunContext) -> Measuring:
        with self._timings.phase("benchmark prepare", self._target):
            return _TimedMeasuring(self._bench.prepare(ctx), self._timings, self._target)

    def analyse(self, ctx: RunContext, measured: object) -> Measurement:
        with self._timings.phase("analyse", self._target):
            return self._bench.analyse(ctx, measured)


class _TimedMeasuring:
    def __init__(self, measuring: Measuring, timings: Timings, target: str) -> None:
        self._measuring, self._timings, self._target = measuring, timings, target

    def measure(self) -> object:
        with self._timings.phase("measure", self._target):
            return self._measuring.measure()

    def close(self) -> None:
        with self._timings.phase("benchmark close", self._target):
            self._measuring.close()


class TimedLoads:
    """A target's loads as a run calls them, their phases timed (the wrapped object keeps the state)."""

    def __init__(self, loads: TargetLoads, timings: Timings, target: str) -> None:
        self._loads, self._timings, self._target = loads, timings, target

    def start(self, cell: Cell, runs: int) -> None:
        with self._timings.phase("loads start", self._target):
            self._loads.start(cell, runs)

    def up(self) -> None:
        with self._timings.phase("loads up", self._target):
            self._loads.up()

    def down(self, keep: bool) -> list[Metric]:
        with self._timings.phase("loads down", self._target):
            return self._loads.down(keep)

    def after_failure(self, keep: bool) -> None:
        self._loads.after_failure(keep)

    def stop(self) -> None:
        self._loads.stop()
