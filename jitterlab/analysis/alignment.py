"""Edges of another clock (a logic analyzer's) aligned with the program's own, and the check that
they are the program's edges at all.

An edge on the wire and the program's timestamp of it differ by the clock offset, the slow drift
of one clock against the other, and the program's own lag (write to timestamp, >= 0 and small).
The program's pin is quiet before and after its run (the capture's margins).

Pairing: a program edge is paired with the capture edge of the same level nearest to where the
clock line (offset + drift) puts it, within a quarter period; a capture edge serves one program
edge at most. The line starts from the pairing of one of the first program edges with one of the
first capture edges of its level (the one that pairs most of the first FIRST_WINDOW edges), and
is refitted on windows that double until they hold the whole run (so a drift of up to
MAX_DRIFT_PPM is followed). The line's drift is the slope between the median lags of the first
and the last third of the paired edges; its offset the median of what remains.

Two waves of one period always have an edge within a quarter period of each other, so pairing
alone proves nothing. The capture is the program's only when all of these hold (else `failures`
says which did not):

- nearly every program edge is paired (MIN_MATCHED_SHARE), in the same order on both sides (but
  for EXTRA_SHARE of them: a timestamp preempted for a whole period pairs with the next edge);
- the capture holds few edges the program does not explain during its run (EXTRA_SHARE of the
  program's edges, plus the edges it says it made but could not log) and almost none before or
  after it (QUIET_EDGES: a pin's setup, a level the program sets before its first logged edge);
- the offset is stable: the drift stays under MAX_DRIFT_PPM (or moves the offset by less than
  MAX_SPREAD_FRACTION of a period over the run: on a short run the slope is mostly noise), and
  90 % of the paired edges lie within MAX_SPREAD_FRACTION of a period of the line.

An unrelated wave of the same period fails on its edges in the margins (a capture always covers
a margin on each side of the program's run); a wave with edges missing fails on the share paired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitterlab.model.errors import RunFailed
from jitterlab.model.records import Metric

FIRST_EDGES = 4  # the first program and capture edges tried as a pair for the starting offset
FIRST_WINDOW = 64  # program edges the starting offsets are judged on
MIN_MATCHED_SHARE = 0.95
EXTRA_SHARE = 0.05
QUIET_EDGES = 4
FIT_NAMES = ("align_offset_ns", "align_drift_ppm", "self_lag_spread_p50_ns", "self_lag_spread_max_ns")
MAX_DRIFT_PPM = 1000.0  # crystals and NTP keep two clocks within a few hundred ppm
# an emulated board's clock is qemu's virtual clock, which falls behind this machine's whenever the
# emulator is starved of CPU: one percent and more was seen on a busy 2-core controller
EMULATED_MAX_DRIFT_PPM = 50_000.0
MAX_SPREAD_FRACTION = 0.125


@dataclass(frozen=True)
class Alignment:
    offset_ns: int  # add to capture times to put them on the program's clock (at its first edge)
    drift_ppm: float  # how fast the offset grows over the program's run
    program_edges: int  # the program's logged edges
    matched: int  # program edges paired with a capture edge
    extra: int  # capture edges during the program's run paired with none of the program's
    outside: int  # capture edges before or after the program's run
    residual_p50_ns: float  # median |lag - line| of the paired edges
    residual_p90_ns: float
    residual_max_ns: float
    failures: tuple[str, ...] = field(default=())  # why the capture is not the program's wave

    @property
    def watched(self) -> bool:
        """True when the capture shows the program's own pin."""
        return not self.failures

    def metrics(self, probe: str) -> list[Metric]:
        """The fit as a probe stores it when the edges are the program's: the clock line and how
        far the program's timestamps stray from it."""
        offset, drift, spread_p50, spread_max = FIT_NAMES
        return [
            Metric(offset, float(self.offset_ns), "ns", probe, "none"),
            Metric(drift, self.drift_ppm, "ppm", probe, "none"),
            Metric(spread_p50, self.residual_p50_ns, "ns", probe, "lower"),
            Metric(spread_max, self.residual_max_ns, "ns", probe, "lower"),
        ]


@dataclass(frozen=True)
class _Line:
    offset_ns: float  # program time - capture time at t0_ns
    slope: float  # d(offset)/d(program time)
    t0_ns: int

    def capture_time(self, self_t: np.ndarray) -> np.ndarray:
        return self_t - (self.offset_ns + self.slope * (self_t - self.t0_ns))

    def lag(self, self_t: np.ndarray, cap_t: np.ndarray) -> np.ndarray:
        return (self_t - cap_t) - (self.offset_ns + self.slope * (self_t - self.t0_ns))


def _pairs(cap_t: np.ndarray, cap_level: np.ndarray, self_t: np.ndarray, self_level: np.ndarray,
           line: _Line, window_ns: int) -> tuple[np.ndarray, np.ndarray]:
    """(program index, capture index) of the paired edges, by program index."""
    want = line.capture_time(self_t)
    own_parts, cap_parts = [], []
    for level in (0, 1):
        ext_idx = np.flatnonzero(cap_level == level)
        own_idx = np.flatnonzero(self_level == level)
        if not len(ext_idx) or not len(own_idx):
            continue
        ext, target = cap_t[ext_idx], want[own_idx]
        pos = np.clip(np.searchsorted(ext, target), 1, max(len(ext) - 1, 1))
        before, after = pos - 1, np.minimum(pos, len(ext) - 1)
        nearest = np.where(np.abs(target - ext[before]) <= np.abs(ext[after] - target), before, after)
        distance = np.abs(target - ext[nearest])
        ok = distance <= window_ns
        own_ok, cap_ok, dist_ok = own_idx[ok], ext_idx[nearest[ok]], distance[ok]
        order = np.argsort(dist_ok, kind="stable")  # a capture edge goes to its nearest program edge
        _, first = np.unique(cap_ok[order], return_index=True)
        keep = order[first]
        own_parts.append(own_ok[keep])
        cap_parts.append(cap_ok[keep])
    if not own_parts:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    own_i, cap_i = np.concatenate(own_parts), np.concatenate(cap_parts)
    order = np.argsort(own_i, kind="stable")
    return own_i[order], cap_i[order]


def _fit(self_t: np.ndarray, lag_ns: np.ndarray, t0_ns: int) -> _Line:
    """The clock line through (program time, program time - capture time), robust to odd lags."""
    slope = 0.0
    third = len(self_t) // 3
    if third >= 2:
        span = float(np.median(self_t[-third:]) - np.median(self_t[:third]))
        if span > 0:
            slope = float(np.median(lag_ns[-third:]) - np.median(lag_ns[:third])) / span
    offset = float(np.median(lag_ns - slope * (self_t - t0_ns)))
    return _Line(offset, slope, t0_ns)


def align(cap_t_ns: np.ndarray, cap_level: np.ndarray, self_t_ns: np.ndarray, self_level: np.ndarray,
          period_ns: int, dropped: int = 0, max_drift_ppm: float = MAX_DRIFT_PPM) -> Alignment:
    """The clock line from capture to program, and whether the capture is the program's wave (see
    the module doc). `dropped`: edges the program made but did not log; `max_drift_ppm`: the drift
    two clocks can have (EMULATED_MAX_DRIFT_PPM when one is an emulated board's).
    RunFailed("unmeasurable") only when there is nothing to align."""
    cap_t, self_t = np.asarray(cap_t_ns, np.int64), np.asarray(self_t_ns, np.int64)
    cap_level, self_level = np.asarray(cap_level), np.asarray(self_level)
    if not len(cap_t) or not len(self_t):
        raise RunFailed("unmeasurable: nothing to align (no external or no program edges)",
                        status="unmeasurable")
    window_ns, t0 = period_ns // 4, int(self_t[0])
    n = len(self_t)
    first = slice(0, min(n, FIRST_WINDOW))
    best: tuple[int, _Line] | None = None
    for j in range(min(FIRST_EDGES, n)):
        for i in range(min(FIRST_EDGES, len(cap_t))):
            if cap_level[i] != self_level[j]:
                continue
            line = _Line(float(self_t[j] - cap_t[i]), 0.0, t0)
            count = len(_pairs(cap_t, cap_level, self_t[first], self_level[first], line, window_ns)[0])
            if best is None or count > best[0]:
                best = (count, line)
    if best is None:
        return _unaligned(n, len(cap_t), "the first edges of the program and of the capture have no level "
                          "in common")
    line, upto = best[1], first.stop
    while True:  # refit on windows that double, so that a drift is followed to the end
        own_i, cap_i = _pairs(cap_t, cap_level, self_t[:upto], self_level[:upto], line, window_ns)
        if len(own_i):
            line = _fit(self_t[own_i], self_t[own_i] - cap_t[cap_i], t0)
        if upto == n:
            break
        upto = min(2 * upto, n)
    own_i, cap_i = _pairs(cap_t, cap_level, self_t, self_level, line, window_ns)
    if len(own_i):
        line = _fit(self_t[own_i], self_t[own_i] - cap_t[cap_i], t0)
    return _judge(cap_t, self_t, own_i, cap_i, line, period_ns, dropped, max_drift_ppm)


def _unaligned(n: int, m: int, why: str) -> Alignment:
    nan = float("nan")
    return Alignment(0, nan, n, 0, 0, m, nan, nan, nan, (why,))


def _judge(cap_t: np.ndarray, self_t: np.ndarray, own_i: np.ndarray, cap_i: np.ndarray, line: _Line,
           period_ns: int, dropped: int, max_drift_ppm: float) -> Alignment:
    n, matched = len(self_t), len(own_i)
    window_ns = period_ns // 4
    ends = line.capture_time(self_t[[0, -1]])
    inside = int(np.searchsorted(cap_t, ends[1] + window_ns, "right")
                 - np.searchsorted(cap_t, ends[0] - window_ns))
    extra, outside = inside - matched, len(cap_t) - inside
    residual = np.abs(line.lag(self_t[own_i], cap_t[cap_i])) if matched else np.array([np.nan])
    p50, p90, worst = (float(np.percentile(residual, q)) for q in (50, 90, 100))
    drift_ppm = line.slope * 1e6
    failures = []
    if matched < MIN_MATCHED_SHARE * n:
        failures.append(f"only {matched} of the program's {n} edges have an edge of the same level on the "
                        "capture within a quarter period")
    disorder = int(np.sum(np.diff(cap_i) <= 0))  # one timestamp preempted for a period crosses two
    if disorder > EXTRA_SHARE * n:
        failures.append(f"{disorder} of the paired edges are not in the same order on both sides")
    if extra > EXTRA_SHARE * n + dropped:
        failures.append(f"{extra} edges on the capture during the program's run match none of its "
                        f"{n} edges")
    if outside > QUIET_EDGES:
        failures.append(f"{outside} edges on the capture before or after the program's run, when its "
                        "pin is quiet")
    span_ns = float(self_t[-1] - self_t[0])
    drift_matters = abs(line.slope) * span_ns > MAX_SPREAD_FRACTION * period_ns
    if matched and abs(drift_ppm) > max_drift_ppm and drift_matters:
        failures.append(f"the offset drifts {drift_ppm:+.0f} ppm over the run, more than two clocks do "
                        f"(±{max_drift_ppm:g} ppm)")
    if matched and p90 > MAX_SPREAD_FRACTION * period_ns:
        failures.append(f"the paired edges do not keep a stable offset: 90 % lie within {p90:.0f} ns of "
                        f"it, more than {MAX_SPREAD_FRACTION:g} of the period")
    return Alignment(round(line.offset_ns), drift_ppm, n, matched, max(extra, 0), outside, p50, p90, worst,
                     tuple(failures))
