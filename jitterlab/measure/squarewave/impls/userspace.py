"""The user-space impls: the same square-wave task as a shell script, a Python and a Node.js loop,
and three C programs (sources in jitterlab/programs/)."""

from __future__ import annotations

import weakref
from dataclasses import dataclass, field

from jitterlab import programs
from jitterlab.measure.context import RunContext
from jitterlab.measure.squarewave.impls.base import IMPLS, ImplBase, bound, common_flags, run_program
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import ChipLine, Forms, MappedLevel, RegisterBlock, ValueFile
from jitterlab.model.tuning import MLOCK_ITSELF, MLOCK_NEVER, MLOCK_ON_FLAG, ProgramTraits, launcher
from jitterlab.programs import ProgramDir
from jitterlab.targets.base import Target
from jitterlab.targets.processes import pinned

FILE = (ValueFile,)  # a value file written with write()/pwrite/echo
MAPPED = (MappedLevel, RegisterBlock)  # a level byte or set/clear registers, via mmap
BASH = programs.declare(ProgramDir("bash", ("*.sh",)))
PYTHON = programs.declare(ProgramDir("python", ("*.py",)))
NODE = programs.declare(ProgramDir("node", ("*.js",)))
# per target: an interpreter's name -> the executable it runs (a version manager's shim, e.g.
# pyenv's, is a shell script that costs a few hundred ms at every start: asked once, then skipped)
_RESOLVED: weakref.WeakKeyDictionary[Target, dict[str, str]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class ProgramImpl(ImplBase):
    """An impl that is one program: an interpreter and a script, or a C program of programs/c.
    Its program's directory is declared (programs.declare), so deployment ships and builds it."""

    command: tuple[str, ...]  # argv prefix; the last word is a path relative to the programs dir
    runtime_tools: dict[str, str] = field(default_factory=dict)
    needs: Forms = FILE
    realtime: bool = False
    build: dict[str, str] = field(default_factory=dict)  # programs of a built directory -> build package
    mlock: str = MLOCK_ON_FLAG  # how its program locks its memory (model/tuning.py ProgramTraits)
    resolve: tuple[str, ...] = ()  # the interpreter's arguments that print the executable it runs
    # variables taken out of its environment: what makes its interpreter's start slow and that the
    # program has no use for (started with `env -u NAME`, one exec more: ~1 ms)
    unset: tuple[str, ...] = ()

    @property
    def program(self) -> ProgramTraits:
        return ProgramTraits(self.realtime, self.mlock, self.command[0].rsplit("/", 1)[-1])

    def tools(self) -> dict[str, str]:
        return dict(self.runtime_tools)

    def programs(self) -> dict[str, str]:
        return dict(self.build)

    def prepare(self, ctx: RunContext) -> None:
        return None  # its program was built when the programs were deployed

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        *interpreter, path = self.command
        allow = self.realtime and not ctx.rt_permitted
        form = bound(ctx, self.needs, pin)
        unset = ["env", *(word for name in self.unset for word in ("-u", name))] if self.unset else []
        if interpreter and self.resolve:
            interpreter = [resolved(ctx.target, interpreter[0], self.resolve, unset), *interpreter[1:]]
        # the launchers first: the isolated one moves the process into a partition whose CPUs no
        # process outside may be pinned to (taskset there fails with EINVAL, Linux 6.12)
        argv = [*launcher(ctx.tunings), *pinned(ctx.placement.program_cpus), *unset, *interpreter,
                f"{ctx.bindir}/{path}", *common_flags(ctx, form, allow_no_rt=allow)]
        return run_program(ctx, str(ctx.cell.param("impl")), argv)


def resolved(target: Target, name: str, asks: tuple[str, ...], prefix: list[str] | None = None) -> str:
    """The executable `name` runs on the target, asked once per target (`name` itself when it does not
    say), started after `prefix` as the program is: the same interpreter, without the shim in front."""
    known = _RESOLVED.setdefault(target, {})
    if name not in known:
        said = target.run([*(prefix or []), name, *asks], timeout_s=60.0)
        path = said.stdout.strip()
        known[name] = path if said.ok and path.startswith("/") and "\n" not in path else name
    return known[name]


IMPLS.add(
    "bash",
    "bash script: echo into the pin file, external sleep (what a quick script does)",
    ProgramImpl(("bash", f"{BASH.name}/squarewave.sh"), {"bash": "bash", "sleep": "coreutils"},
                mlock=MLOCK_NEVER),
)
IMPLS.add(
    "python",
    "Python loop: os.pwrite on the pin file (gpiod pin: the gpiod bindings), time.sleep (relative)",
    # -S: started without site-packages, which it needs only for the gpiod bindings (it adds them then):
    # site's imports cost 5-35 ms at every start on a PC, more on a small board; the loop is the same
    ProgramImpl(("python3", "-S", f"{PYTHON.name}/squarewave.py"), {"python3": "python3"},
                needs=(*FILE, ChipLine), resolve=("-c", "import sys; print(sys.executable)")),
)
IMPLS.add(
    "node",
    "Node.js: fs.writeSync on the pin file, chained setTimeout (relative)",
    # NODE_EXTRA_CA_CERTS (set where a proxy signs TLS) makes node parse every certificate it names
    # at its start: 80 ms on an idle PC, 160 under the cpu load; the program opens no TLS connection
    ProgramImpl(("node", f"{NODE.name}/squarewave.js"), {"node": "nodejs"}, mlock=MLOCK_NEVER,
                resolve=("-p", "process.execPath"), unset=("NODE_EXTRA_CA_CERTS",)),
)
IMPLS.add(
    "c-file",
    "C: write() on the pin's value file like sysfs/libsoc, relative clock_nanosleep",
    ProgramImpl(("c/c-file",), build={"c-file": ""}),
)
IMPLS.add(
    "c-gpiod",
    "C: libgpiod on the GPIO character device (the modern libsoc), relative clock_nanosleep",
    ProgramImpl(("c/c-gpiod",), needs=(ChipLine,), build={"c-gpiod": "libgpiod-dev"}),
)
IMPLS.add(
    "c-mmap",
    "C: store into the mmap'd pin, relative clock_nanosleep",
    ProgramImpl(("c/c-mmap",), needs=MAPPED, build={"c-mmap": ""}),
)
IMPLS.add(
    "c-fifo",
    "C: mmap'd pin + SCHED_FIFO + mlockall + absolute deadlines (TIMER_ABSTIME); after a stall it "
    "catches up: the missed edges fire back to back to keep the phase, so the run shows very short "
    "periods right after the long one and can last longer than its duration",
    ProgramImpl(("c/c-fifo",), needs=MAPPED, realtime=True, build={"c-fifo": ""}, mlock=MLOCK_ITSELF),
)
