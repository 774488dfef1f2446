"""Long-running monitoring: the cells of a campaign measured again every interval for a while (a
day, a week), each interval committed as one repetition, like a long-term latency farm. The store
holds one run per cell and interval (its histogram and maxima); `report --trend METRIC --by time`
draws them over time. Resumable: after a crash, `--resume` goes on with the next interval."""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from jitterlab.campaign.file import Campaign
from jitterlab.execution.preflight import TargetSession
from jitterlab.execution.runner import Runner, estimate_s
from jitterlab.model.errors import UserError
from jitterlab.model.units import format_ns, parse_duration_ns
from jitterlab.store.catalog import Store


@dataclass(frozen=True)
class Schedule:
    every_ns: int
    intervals: int
    for_ns: int = 0  # as --for gave it (intervals * every_ns rounds it up)

    @classmethod
    def of(cls, campaign: Campaign, for_ns: int, every_ns: int) -> Schedule:
        one_pass_s = estimate_s(campaign, [(c, 0) for c in campaign.cells])
        if every_ns / 1e9 < one_pass_s:
            raise UserError(f"--every {format_ns(every_ns)}: one pass over the campaign's cells takes about "
                            f"{one_pass_s:.0f} s; give a longer interval or fewer cells")
        if for_ns < every_ns:
            raise UserError(f"--for {format_ns(for_ns)}: shorter than --every {format_ns(every_ns)}")
        return cls(every_ns, math.ceil(for_ns / every_ns), for_ns)

    def campaign(self, campaign: Campaign) -> Campaign:
        """The campaign as monitored: one repetition per interval, the schedule in its labels (so
        that --resume finds it and refuses another schedule)."""
        labels = {**campaign.labels, "monitor_every": format_ns(self.every_ns),
                  "monitor_intervals": str(self.intervals)}
        return dataclasses.replace(campaign, repetitions=self.intervals, labels=labels)

    def check_resumed(self, campaign: Campaign, store: Store) -> None:
        """With --resume: the monitoring gone on with must have this schedule. Another one is
        refused naming --for/--every (the runner would blame the campaign file, which is unchanged)."""
        previous = store.latest_campaign(campaign.name)
        if previous is None or previous.fingerprint == self.campaign(campaign).fingerprint:
            return
        labels = previous.labels
        try:
            then = Schedule(parse_duration_ns(labels["monitor_every"], "monitor_every"),
                            int(labels["monitor_intervals"]))
        except (KeyError, ValueError, UserError):
            return  # not a monitoring this jitterlab started: the runner says what differs
        if then.campaign(campaign).fingerprint != previous.fingerprint:
            return  # the campaign file changed too: the runner names it
        every = format_ns(then.every_ns)
        given = format_ns(self.for_ns or self.every_ns * self.intervals)
        raise UserError(f"--for {given} --every {format_ns(self.every_ns)}: "
                        f"the monitoring of {campaign.name!r} that --resume goes on with measures every "
                        f"{every} for {then.intervals} intervals; resume it with --for "
                        f"{format_ns(then.every_ns * then.intervals)} --every {every}, or leave out --resume "
                        "to start another")


def monitor(campaign: Campaign, store: Store, sessions: list[TargetSession], schedule: Schedule, *,
            resume: bool, notice: Callable[[str], None], stop: threading.Event,
            ended: Callable[[int, int], None] | None = None) -> tuple[int, int]:
    """Measure interval after interval until the schedule ends or `stop` is set; returns
    (intervals measured now, runs that failed). Each interval starts on its slot, or at once when
    the previous one overran it (said, with how late: every interval is measured). `ended(k,
    campaign_id)` is called after interval k (0-based) is committed: what it found is said there,
    and it may set `stop`."""
    monitored = schedule.campaign(campaign)
    if resume:
        schedule.check_resumed(campaign, store)
    campaign_id = Runner(monitored, store, resume=resume).campaign_id()  # created or resumed, and locked
    committed = {rep for (_, rep) in store.committed(campaign_id)}
    start = time.monotonic()
    first = min((k for k in range(schedule.intervals) if k not in committed), default=schedule.intervals)
    done = failed = 0
    for k in range(first, schedule.intervals):
        slot = start + (k - first) * schedule.every_ns / 1e9
        if stop.wait(max(0.0, slot - time.monotonic())):
            break
        late_s = time.monotonic() - slot
        notice(f"interval {k + 1}/{schedule.intervals} at {time.strftime('%Y-%m-%d %H:%M:%S')}" +
               (f" ({late_s:.1f} s late: the previous one overran its slot)" if late_s > 1.0 else ""))
        if stop.is_set():
            break
        # a runner per interval, measuring that interval's repetition of every cell
        outcome = Runner(monitored, store, only_repetitions={k}).execute(sessions, campaign_id)
        done += 1
        failed += outcome.failed
        if outcome.interrupted:
            stop.set()
            break
        if ended is not None:
            ended(k, campaign_id)
    return done, failed
