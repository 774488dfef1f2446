"""What `jitterlab run` shows while it measures: a bar per target on a terminal (one per target
however many rounds --until-decided adds, gone once the measuring ends, so that the run ends on its
answer), one line per run in a log, and the runner's notices. Handed to the Runner when it is built."""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

from jitterlab.model.units import format_duration_s


def eta_s(total_s: float, completed_s: float, elapsed_s: float) -> float:
    """Time left: the estimate of the runs still to come, scaled by how long the runs so far took
    against their estimate (a loaded or slow machine takes longer than the estimates say)."""
    pace = elapsed_s / completed_s if completed_s > 0 else 1.0
    return max(total_s - completed_s, 0.0) * pace


class RunProgress:
    """The runner's `progress` and `notice` callbacks, printing to `out`.

    Used as a context manager around the measuring; `plan` gives each target its runs (their
    count and estimated seconds) once they are known, before the first run starts."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.bar = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            TextColumn("{task.percentage:>3.0f}%"),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=out,
            transient=True,
            disable=not out.is_terminal,
        )
        self._tasks: dict[str, int] = {}
        self._runs: dict[str, int] = {}
        self._started: dict[str, int] = {}
        self._first_start: dict[str, float] = {}

    def plan(self, targets: dict[str, tuple[int, float]]) -> None:
        """target -> (runs to measure, their estimated seconds)."""
        for name, (runs, seconds) in targets.items():
            if name in self._tasks:  # a round of --until-decided: the target's bar starts again
                self.bar.reset(self._tasks[name], total=max(seconds, 1e-9), description=escape(name))
            else:
                self._tasks[name] = self.bar.add_task(escape(name), total=max(seconds, 1e-9))
            self._runs[name] = runs
            self._started[name] = 0
            # a round of --until-decided is estimated from its own first start, so that its estimate
            # does not grow with the time of the rounds before it
            self._first_start.pop(name, None)

    def __enter__(self) -> RunProgress:
        self.bar.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.bar.__exit__(*exc)

    def __call__(self, target: str, what: str | None, seconds: float) -> None:
        """A run starts (`what` names it) or ends (`what` None, `seconds` its estimate done)."""
        if what is None:
            self.bar.advance(self._tasks[target], seconds)
            return
        self.bar.update(self._tasks[target], description=escape(f"{target}: {what}"))
        self._started[target] += 1
        now = time.monotonic()
        self._first_start.setdefault(target, now)
        if not self.out.is_terminal:  # logs get one line per run instead of a live bar
            task = self.bar.tasks[self._tasks[target]]
            eta = eta_s(task.total or 0.0, task.completed, now - self._first_start[target])
            self.out.print(
                escape(f"{target}: [{self._started[target]}/{self._runs[target]}] {what}, "
                       f"about {format_duration_s(eta)} left"),
                highlight=False,
            )

    def notice(self, target: str, message: str) -> None:
        self.out.print(f"[yellow]{escape(target)}[/]: {escape(message)}")
