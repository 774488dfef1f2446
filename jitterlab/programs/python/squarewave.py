#!/usr/bin/env python3
"""Python square wave (stdlib only): os.pwrite to the pin, time.sleep for the half period."""

import argparse
import os
import signal
import sys
import time

IMPL = "python"


class _Stop(Exception):
    """Raised by the signal handler to cut a sleep short (PEP 475 would resume it)."""


class _StopFlag:
    def __init__(self) -> None:
        self.requested = False
        self.sleeping = False

    def __call__(self, signum, frame) -> None:
        self.requested = True
        if self.sleeping:
            self.sleeping = False  # raise at most once, and only out of the sleep below
            raise _Stop


def _parse(argv):
    def count(s):
        n = int(s)
        if n < 0:
            raise ValueError(s)
        return n

    p = argparse.ArgumentParser(prog="squarewave.py", allow_abbrev=False)
    p.add_argument("--period-ns", type=count, required=True)
    p.add_argument("--duration-ns", type=count, required=True)
    p.add_argument("--pin", required=True)
    p.add_argument("--log", required=True)
    p.add_argument("--prio", type=count, default=80, help="accepted, ignored")
    p.add_argument("--allow-no-rt", action="store_true", help="accepted, ignored")
    args = p.parse_args(argv)
    if args.period_ns < 2:
        p.error("--period-ns must be >= 2")
    return args


def _write_log(path, t_ns, levels):
    tmp = f"{path}.tmp.{os.getpid()}"
    with open(tmp, "w") as f:
        f.write(f"# jitterlab-edges v1 clock=monotonic impl={IMPL}\n")
        f.writelines(f"{t} {lv}\n" for t, lv in zip(t_ns, levels, strict=True))
        f.write(f"# end edges={len(t_ns)}\n")
    os.replace(tmp, path)


def main(argv=None) -> int:
    args = _parse(argv)
    half_s = (args.period_ns // 2) / 1e9
    stop = _StopFlag()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    fd = os.open(args.pin, os.O_RDWR)  # no O_TRUNC: the observer has the file mapped
    values = (b"0", b"1")
    t_ns, levels = [], []

    def edge(level):
        os.pwrite(fd, values[level], 0)
        t_ns.append(time.monotonic_ns())
        levels.append(level)

    start = time.monotonic_ns()
    level, done = 1, False
    while True:
        edge(level)
        if done:
            break
        try:
            try:
                stop.sleeping = True
                if not stop.requested:
                    time.sleep(half_s)
            finally:
                stop.sleeping = False
        except _Stop:
            pass
        if stop.requested:
            break
        done = time.monotonic_ns() - start >= args.duration_ns
        level ^= 1
        if done and level == 1:
            break
    if levels[-1] == 1:
        edge(0)  # leave the pin at '0'
    os.close(fd)
    _write_log(args.log, t_ns, levels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
