#!/usr/bin/env python3
"""Python square wave: os.pwrite to the pin's value file (stdlib only), or the GPIO character device
through the gpiod bindings (--chip/--line; python3-libgpiod 1.x or gpiod 2.x); time.sleep for the
half period."""

import os
import sys
import time
import types

try:  # the C module signal.py wraps: the same calls without its enum classes (~8 ms at every start)
    import _signal as signal
except ImportError:
    import signal

IMPL = "python"
EXIT_UNAVAILABLE = 69  # the target lacks something this program needs (sysexits EX_UNAVAILABLE)


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


USAGE = ("usage: squarewave.py --period-ns N --duration-ns N (--pin PATH | --chip /dev/gpiochipN --line N) "
         "--log PATH [--prio N] [--allow-no-rt] [--mlock]")
_VALUED = {"--period-ns": "period_ns", "--duration-ns": "duration_ns", "--pin": "pin", "--chip": "chip",
           "--line": "line", "--log": "log", "--prio": "prio"}
_COUNTS = ("period_ns", "duration_ns", "line", "prio")
_SWITCHES = {"--allow-no-rt": "allow_no_rt", "--mlock": "mlock"}


def _usage(why):
    print(f"squarewave.py: {why}\n{USAGE}", file=sys.stderr)
    sys.exit(2)


def _parse(argv):
    """The flags, read by hand: argparse's imports (re, enum, gettext) cost more at every start than
    the rest of the program (~18 ms on a PC; a small board's start is what a person waits for)."""
    args = dict.fromkeys([*_VALUED.values(), *_SWITCHES.values()])
    args["prio"] = 80  # accepted, ignored
    argv = sys.argv[1:] if argv is None else argv
    i = 0
    while i < len(argv):
        flag, i = argv[i], i + 1
        if flag in _SWITCHES:
            args[_SWITCHES[flag]] = True
            continue
        if flag not in _VALUED:
            _usage(f"unknown flag: {flag}")
        if i >= len(argv):
            _usage(f"missing value for {flag}")
        name, value, i = _VALUED[flag], argv[i], i + 1
        if name in _COUNTS:
            if not (value.isascii() and value.isdigit()):
                _usage(f"bad value for {flag}: {value}")
            value = int(value)
        args[name] = value
    if args["period_ns"] is None or args["period_ns"] < 2:
        _usage("--period-ns is required and must be >= 2")
    if args["duration_ns"] is None or args["log"] is None:
        _usage("--duration-ns and --log are required")
    if (args["pin"] is None) == (args["chip"] is None) or (args["chip"] is not None and args["line"] is None):
        _usage("give --pin PATH, or --chip /dev/gpiochipN and --line OFFSET")
    return types.SimpleNamespace(**args)


def _file_pin(path):
    """set(level), close() for a value file."""
    fd = os.open(path, os.O_RDWR)  # no O_TRUNC: an observer may have the file mapped
    values = (b"0", b"1")
    return (lambda level: os.pwrite(fd, values[level], 0)), (lambda: os.close(fd))


def _gpiod_pin(chip, line):
    """set(level), close() for a line of a GPIO character device, through the gpiod bindings (in
    site-packages, which a start with -S leaves out: added here)."""
    if sys.flags.no_site:
        import site

        site.main()
    try:
        import gpiod
    except ImportError:
        print(f"{IMPL}: the gpiod bindings are missing (apt install python3-libgpiod)", file=sys.stderr)
        sys.exit(EXIT_UNAVAILABLE)
    if hasattr(gpiod, "request_lines"):  # gpiod 2.x
        from gpiod.line import Direction, Value

        request = gpiod.request_lines(chip, consumer="jitterlab", config={
            line: gpiod.LineSettings(direction=Direction.OUTPUT, output_value=Value.INACTIVE)})
        values = (Value.INACTIVE, Value.ACTIVE)
        return (lambda level: request.set_value(line, values[level])), request.release
    handle = gpiod.Chip(chip).get_line(line)  # gpiod 1.x
    handle.request(consumer="jitterlab", type=gpiod.LINE_REQ_DIR_OUT, default_val=0)
    return handle.set_value, handle.release


def _lock_memory():
    """mlockall(MCL_CURRENT | MCL_FUTURE) through libc (the stdlib has no binding); exits unavailable
    when it cannot."""
    try:
        import ctypes
        import platform
    except ImportError:
        print(f"{IMPL}: --mlock needs ctypes, which this Python lacks", file=sys.stderr)
        sys.exit(EXIT_UNAVAILABLE)
    # MCL_CURRENT | MCL_FUTURE: 1 | 2, but 0x2000 | 0x4000 on alpha, powerpc and sparc
    flags = 0x6000 if platform.machine().startswith(("alpha", "ppc", "powerpc", "sparc")) else 3
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.mlockall(flags) != 0:
        print(f"{IMPL}: --mlock: mlockall: {os.strerror(ctypes.get_errno())}", file=sys.stderr)
        sys.exit(EXIT_UNAVAILABLE)


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
    set_pin, close_pin = _file_pin(args.pin) if args.pin else _gpiod_pin(args.chip, args.line)
    if args.mlock:
        _lock_memory()
    t_ns, levels = [], []

    def edge(level):
        set_pin(level)
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
    close_pin()
    _write_log(args.log, t_ns, levels)
    return 0


if __name__ == "__main__":
    sys.exit(main())
