"""The user-space impls: the same square-wave task as a shell script, a Python and a Node.js loop,
and three C programs (sources in jitterlab/programs/)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterlab.measure.context import RunContext
from jitterlab.measure.squarewave.impls.base import IMPLS, common_flags, run_program
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.targets.processes import pinned

FILE_PINS = frozenset({"vpin", "sysfs", "external"})  # a value file written with write()/pwrite
MAPPED_PINS = frozenset({"vpin", "gpiomem", "external"})  # a level byte or set/clear registers, via mmap


@dataclass(frozen=True)
class ProgramImpl:
    """An impl that is one program: an interpreter and a script, or a C program of programs/c."""

    command: tuple[str, ...]  # argv prefix; the last word is a path relative to the programs dir
    runtime_tools: dict[str, str] = field(default_factory=dict)
    pins: frozenset[str] = FILE_PINS
    realtime: bool = False
    build: dict[str, str] = field(default_factory=dict)  # programs/c targets -> build package

    def tools(self) -> dict[str, str]:
        return dict(self.runtime_tools)

    def programs(self) -> dict[str, str]:
        return dict(self.build)

    def prepare(self, ctx: RunContext) -> None:
        return None  # its program was built when the programs were deployed

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        *interpreter, path = self.command
        allow = self.realtime and not ctx.rt_permitted
        argv = [*pinned(ctx.placement.program_cpus), *interpreter, f"{ctx.bindir}/{path}",
                *common_flags(ctx, pin, allow_no_rt=allow)]
        return run_program(ctx, str(ctx.cell.param("impl")), argv)


IMPLS.add(
    "bash",
    "bash script: echo into the pin file, external sleep (what a quick script does)",
    ProgramImpl(("bash", "bash/squarewave.sh"), {"bash": "bash", "sleep": "coreutils"}),
)
IMPLS.add(
    "python",
    "Python loop: os.pwrite on the pin file (gpiod pin: the gpiod bindings), time.sleep (relative)",
    ProgramImpl(("python3", "python/squarewave.py"), {"python3": "python3"}, pins=FILE_PINS | {"gpiod"}),
)
IMPLS.add(
    "node",
    "Node.js: fs.writeSync on the pin file, chained setTimeout (relative)",
    ProgramImpl(("node", "node/squarewave.js"), {"node": "nodejs"}),
)
IMPLS.add(
    "c-file",
    "C: write() on the pin's value file like sysfs/libsoc, relative clock_nanosleep",
    ProgramImpl(("c/c-file",), build={"c-file": ""}),
)
IMPLS.add(
    "c-gpiod",
    "C: libgpiod on the GPIO character device (the modern libsoc), relative clock_nanosleep",
    ProgramImpl(("c/c-gpiod",), pins=frozenset({"gpiod"}), build={"c-gpiod": "libgpiod-dev"}),
)
IMPLS.add(
    "c-mmap",
    "C: store into the mmap'd pin, relative clock_nanosleep",
    ProgramImpl(("c/c-mmap",), pins=MAPPED_PINS, build={"c-mmap": ""}),
)
IMPLS.add(
    "c-fifo",
    "C: mmap'd pin + SCHED_FIFO + mlockall + absolute deadlines (TIMER_ABSTIME); after a stall it "
    "catches up: the missed edges fire back to back to keep the phase, so the run shows very short "
    "periods right after the long one and can last longer than its duration",
    ProgramImpl(("c/c-fifo",), pins=MAPPED_PINS, realtime=True, build={"c-fifo": ""}),
)
