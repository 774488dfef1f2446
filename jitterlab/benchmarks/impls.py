"""Programming models that produce the square wave (sources in jitterlab/programs/)."""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.registry import Registry


@dataclass(frozen=True)
class Impl:
    """How to start one programming model; `argv_prefix` is relative to the deployed programs dir."""

    argv_prefix: tuple[str, ...]
    tools: dict[str, str]
    realtime: bool = False


IMPLS: Registry[Impl] = Registry("impl")

IMPLS.add(
    "bash",
    "bash script: echo into the pin file, external sleep (what a quick script does)",
    Impl(("bash", "bash/squarewave.sh"), {"bash": "bash", "sleep": "coreutils"}),
)
IMPLS.add(
    "python",
    "Python loop: os.pwrite on the pin file, time.sleep (relative)",
    Impl(("python3", "python/squarewave.py"), {"python3": "python3"}),
)
IMPLS.add(
    "node",
    "Node.js: fs.writeSync on the pin file, chained setTimeout (relative)",
    Impl(("node", "node/squarewave.js"), {"node": "nodejs"}),
)
IMPLS.add(
    "c-file",
    "C: write() on the pin's value file like sysfs/libsoc, relative clock_nanosleep",
    Impl(("c/c-file",), {}),
)
IMPLS.add("c-mmap", "C: store into the mmap'd pin, relative clock_nanosleep", Impl(("c/c-mmap",), {}))
IMPLS.add(
    "c-fifo",
    "C: mmap'd pin + SCHED_FIFO + mlockall + absolute deadlines (TIMER_ABSTIME)",
    Impl(("c/c-fifo",), {}, realtime=True),
)
