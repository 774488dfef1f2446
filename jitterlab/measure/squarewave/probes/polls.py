"""A level read again and again by a thread on the controller, and what the reads say: the edges of
one line, how often it was read, and the gaps in which it was not.

Each read is stamped with the controller's CLOCK_MONOTONIC half way between asking and the
answer. A level change shows first in some read: the edge is stamped with that read (it happened
since the read before, so it may be early by up to one interval between reads: the resolution is
the mean interval). Two edges between the same two reads are not seen at all, and a gap between
two reads longer than BLIND_FACTOR median intervals is a blind span [stamp before, stamp after]:
an edge stamped at its end may be late by up to the gap, and the blind rule (analysis/blind.py)
leaves out the periods it touches.
"""

from __future__ import annotations

import threading
import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

BLIND_FACTOR = 3  # a gap between two reads longer than this many median intervals is blind
STOP_READS = 2  # reads made after stop() is asked for, so that the last edge is in
STOP_WAIT_S = 2.0

clock_ns: Callable[[], int] = time.monotonic_ns  # replaced by tests with a clock of their own


@dataclass(frozen=True)
class Polls:
    """What the thread read: t_ns the stamps (int64, ascending), level 0/1 of each read."""

    t_ns: np.ndarray
    level: np.ndarray


@dataclass(frozen=True)
class PollEdges:
    t_ns: np.ndarray  # int64, the stamp of the first read showing each new level
    level: np.ndarray  # uint8, the level after each edge
    initial_level: int  # what the first read showed


def edges_of(polls: Polls) -> PollEdges:
    """The level changes between consecutive reads (the first read sets the level before them)."""
    level = np.asarray(polls.level, dtype=np.uint8)
    change = np.flatnonzero(level[1:] != level[:-1]) + 1
    t_ns = np.asarray(polls.t_ns, dtype=np.int64)
    return PollEdges(t_ns[change], level[change], int(level[0]) if len(level) else 0)


def intervals_ns(polls: Polls) -> np.ndarray:
    return np.diff(np.asarray(polls.t_ns, dtype=np.int64))


def blind_spans(polls: Polls, factor: int = BLIND_FACTOR) -> np.ndarray:
    """(n, 2) int64 [start, end] of the gaps between reads longer than `factor` median intervals,
    adjacent gaps merged."""
    t_ns, gaps = np.asarray(polls.t_ns, dtype=np.int64), intervals_ns(polls)
    if not len(gaps):
        return np.empty((0, 2), dtype=np.int64)
    long = np.flatnonzero(gaps > factor * np.median(gaps))
    spans: list[list[int]] = []
    for i in long.tolist():
        if spans and spans[-1][1] == t_ns[i]:
            spans[-1][1] = int(t_ns[i + 1])
        else:
            spans.append([int(t_ns[i]), int(t_ns[i + 1])])
    return np.array(spans, dtype=np.int64).reshape(-1, 2)


class Poller:
    """A thread that calls `read()` (a 32-bit register) as fast as it answers and keeps `mask`'s
    level of each read, stamped. The first error ends the thread and is raised by stop()."""

    def __init__(self, read: Callable[[], int], mask: int) -> None:
        self._read, self._mask = read, mask
        self._t = array("q")
        self._level = bytearray()
        self._error: Exception | None = None
        self._quit = threading.Event()
        self._first = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="register-poll", daemon=True)

    def start(self, timeout_s: float) -> None:
        """Start reading; return after the first read (its error, if it failed)."""
        self._thread.start()
        if not self._first.wait(timeout_s) and self._error is None:
            self._quit.set()
            raise TimeoutError(f"no read within {timeout_s:g}s")
        if self._error is not None:
            raise self._error

    @property
    def reads(self) -> int:
        return len(self._level)

    def stop(self) -> Polls:
        """A few more reads (the run's last edge), then stop; raise the thread's error if any."""
        wanted, deadline = self.reads + STOP_READS, time.monotonic() + STOP_WAIT_S
        while self.reads < wanted and self._error is None and self._thread.is_alive() \
                and time.monotonic() < deadline:
            time.sleep(0.001)
        self.close()
        if self._error is not None:
            raise self._error
        return Polls(np.frombuffer(self._t, dtype=np.int64).copy(),
                     np.frombuffer(bytes(self._level), dtype=np.uint8).copy())

    def close(self, timeout_s: float = 10.0) -> None:
        self._quit.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout_s)

    def _loop(self) -> None:
        read, mask, t, level, quit_ = self._read, self._mask, self._t, self._level, self._quit
        try:
            while not quit_.is_set():
                asked = clock_ns()
                value = read()
                answered = clock_ns()
                t.append((asked + answered) // 2)
                level.append(1 if value & mask else 0)
                self._first.set()
        except Exception as exc:  # handed to the caller, who names it
            self._error = exc
        finally:
            self._first.set()
