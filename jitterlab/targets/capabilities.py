"""What a target can do beyond the Target protocol, one small class per capability.

A target kind declares a capability by inheriting its class (nominal, like labgrid's protocols);
code asks with `has(target, Cap)` or `need(target, Cap, why)` and never looks for attributes. A
wrapper around a target (a farm's board, the controller as runs see it) is a `Wrapper`: it has
what it declares itself and, through it, what the target it wraps has.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.records import Warning_
from jitterlab.model.socs import Soc
from jitterlab.targets.base import Completed, Process, Target


class Capability(ABC):  # noqa: B024  (a marker: most capabilities add methods, some none)
    """A capability; `does` completes "this target cannot ..." in errors."""

    does: str = ""

    def offers(self, cap: type[Capability]) -> bool:
        """False where a kind has `cap` only when configured so (an ssh target without `cc`)."""
        return True


class ControllerMachine(Capability):
    """The target is the machine jitterlab runs on: instruments and clients run on it too."""

    does = "run on the controller itself (it is another machine)"


class SharesControllerCpus(Capability):
    """The target's CPUs are those jitterlab itself runs on: its own threads can be kept off a CPU
    that the target's probe busy-polls (a thread there waits until the scheduler moves it, tens of
    ms, because a real-time poller never yields)."""

    does = "share its CPUs with jitterlab itself"

    @abstractmethod
    def controller_kept_off(self, cpus: Collection[int]) -> AbstractContextManager[None]:
        """jitterlab's threads, and the programs they start, off `cpus` while the block runs."""


class SharesControllerFiles(Capability):
    """The target's files are those of the machine jitterlab runs on: jitterlab reads /proc there and
    makes and removes its runs' directories itself, where another target starts a command for it (a
    process started: 1-6 ms each under load, several per run; bench/campaign_speed.py)."""

    does = "share its files with jitterlab itself"

    def read_here(self, paths: Iterable[str]) -> str:
        """What `cat PATHS 2>/dev/null` prints: the text of each file that can be read, in order."""
        texts = []
        for path in paths:
            # gone meanwhile (a process that ended), unreadable
            with contextlib.suppress(OSError), open(path, "rb") as file:
                texts.append(file.read().decode(errors="replace"))
        return "".join(texts)

    def renew_here(self, directory: str, removed: Iterable[str] = ()) -> None:
        """What `rm -rf REMOVED; mkdir -p DIRECTORY` does; RunFailed, with the fix, when the directory
        cannot be made."""
        for path in removed:
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
                    os.unlink(path)
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise RunFailed(f"cannot make the run's directory {directory}: {exc.strerror}; give the target "
                            "a workdir this user may write") from None


class CrossBuilt(Capability):
    """Programs for this target are built on the controller and sent ready to run."""

    does = "have its programs built on the controller (no cross compiler is set)"

    @property
    @abstractmethod
    def cross_cc(self) -> str:
        """The C compiler (argv word) that builds for the target on the controller."""


class BuildsProgramsOnDemand(Capability):
    """jitterlab's programs are built on this machine the first time a run asks (the controller,
    as the far end of a network test: the runner builds the target's programs, not its own)."""

    does = "build jitterlab's programs when a run asks (no controller with programs was given)"

    @abstractmethod
    def programs_dir(self) -> str:
        """Directory of the built programs on this machine (`<dir>/c/<name>`); UserError naming the
        cause when they cannot be built."""


class KeepsKernelModules(Capability):
    """The target keeps kernel modules built for its kernel between boots (a VM jitterlab boots)."""

    does = "keep kernel modules it built between boots"

    @abstractmethod
    def kernel_module(self, sources: Path, name: str) -> str:
        """Path on the target of module `name` built from `sources` for its running kernel."""


class WaitsForPath(Capability):
    """The target can wait for a file to appear without one round trip per look."""

    does = "wait for a file to appear"

    @abstractmethod
    def wait_for_path(self, path: str, timeout_s: float) -> bool:
        """True once `path` exists on the target, False after timeout_s."""


class VirtualMachine(Capability):
    """A VM jitterlab booted: how its CPU is provided and how long it took to come up."""

    does = "report a VM's accelerator and boot time (it is not a VM jitterlab booted)"

    @property
    @abstractmethod
    def vm_accel(self) -> str:
        """"kvm" (hardware virtualization) or "tcg" (emulation: functional evidence only)."""

    @property
    @abstractmethod
    def boot_s(self) -> float | None:
        """Wall time from starting the VM to the target answering, s."""

    def vm_facts(self) -> dict[str, object]:
        """What else the run's record should say of the VM: its machine, its root, what jitterlab
        changed of the board it emulates (keys vm_*)."""
        return {}


@dataclass(frozen=True)
class GpioTrace:
    """Where the emulator writes its GPIO controller's output levels, on the controller.

    The file grows for as long as the board runs, one line per level change (qemu's trace
    events, e.g. `pl061_set_output`), stamped with this machine's CLOCK_REALTIME by qemu."""

    path: Path
    block: Soc  # the emulated GPIO controller (model/socs.py): its name, its lines, those it reserves
    event: str  # the trace event naming a level change


class RecordsGpioOutputs(Capability):
    """An emulated board whose emulator records the levels its GPIO controller drives, outside the
    board: a probe on the controller follows a pin the way a logic analyzer would."""

    does = "record its GPIO outputs outside the board (an emulated board with a traced GPIO controller)"

    @abstractmethod
    def gpio_trace(self) -> GpioTrace:
        """The trace of the running board; UserError when it has none (say why)."""


class MemoryUnreadable(Exception):
    """An emulated board's memory could not be read from outside; the message is one line that says
    what happened and what to check."""


class WordReader(Protocol):
    """One 32-bit word of an emulated board's physical memory, read anew at each call (as fast as the
    emulator answers; MemoryUnreadable when it cannot); close() ends its connection."""

    def __call__(self) -> int: ...

    def close(self) -> None: ...


class ExaminesMemory(Capability):
    """An emulated board whose emulator answers, on the controller, what the board's physical memory
    (a GPIO block's registers) holds now, through a monitor of the probe's own."""

    does = "show its physical memory from outside (an emulated board with a monitor socket)"

    @abstractmethod
    def word_reader(self, address: int) -> WordReader:
        """A reader of the word at physical `address` of the running board, on a connection of its
        own to the emulator's monitor (which serves one client at a time); MemoryUnreadable naming
        the cause when the monitor cannot be reached."""


@dataclass(frozen=True)
class UnitLink:
    """A real-time unit beside Linux with jitterlab's firmware running: where a program on the target
    reaches it, and what observes its pin from outside when it is emulated."""

    tty: str  # the line Linux commands it over, on the target
    baud: int
    facts: dict[str, object]  # what it is and what it runs (keys unit_*), for the run's record
    trace: GpioTrace | None = None  # an emulated unit: its GPIO controller's trace, on the controller
    trace_line: int = 0  # the output line of that controller the wave is on


class CommandsUnit(Capability):
    """A target with a real-time unit beside its Linux (a core of its SoC, or an MCU on a serial
    line, or one qemu emulates on the controller), configured by the `unit` table of its [[target]]."""

    does = "command a real-time unit (give its [[target]] a unit table)"

    @abstractmethod
    def unit_ready(self) -> UnitLink:
        """The unit with jitterlab's firmware running, loaded at the first call and kept until the
        target closes, when what ran on it before is put back; RunFailed naming the cause."""

    @abstractmethod
    def unit_facts(self) -> dict[str, object]:
        """What the target's record says of its unit (keys unit_*), without loading it."""

    @abstractmethod
    def unit_checks(self) -> list[tuple[str, str, str | None]]:
        """What the unit needs, looked at without loading it: (topic, state, fix or None), for doctor."""


class AnswersSlowly(Capability):
    """A target whose commands may take long to answer (a slow board, an emulated SoC over SSH): how
    long it may be silent before it counts as lost (`alive_timeout` of its [[target]])."""

    does = "say how long it may be silent (it answers at once, like this machine)"

    @property
    @abstractmethod
    def alive_timeout_s(self) -> float:
        """Seconds the target may not answer before its connection counts as lost."""


def command_timeout_s(target: object, base_s: float) -> float:
    """The timeout of a command that takes `base_s` on a quick machine: on a target that answers
    slowly, never less than a few times its alive_timeout (a one-CPU emulated board over SSH spends
    seconds on a handshake alone)."""
    slow = has(target, AnswersSlowly)
    return base_s if slow is None else max(base_s, 4 * slow.alive_timeout_s)


class ReachedBySSH(Capability):
    """The target is reached with the OpenSSH client; others may open connections of their own."""

    does = "be reached with ssh (use an ssh, labgrid or qemu target)"

    @abstractmethod
    def ssh_command(self, remote: list[str]) -> list[str]:
        """argv that runs `remote` on the target through ssh (its options and host)."""


class HostKeyStatus(Capability):
    """The target knows whether its host key was checked against a known one."""

    does = "tell whether its host key was verified"

    @property
    @abstractmethod
    def host_key_verified(self) -> bool:
        """False when the connection was made without checking the host key."""

    @property
    @abstractmethod
    def host_key_unverified(self) -> tuple[str, str]:
        """What an unverified key risks on this kind of target, and the option that makes it
        verified: the message and the remedy of the warning a run starts with."""


class FlashesImages(Capability):
    """A board jitterlab can give another system image, unattended: power off, write the image,
    power on, wait for its boot prompt, then reach it; the board stays open between images."""

    does = "be flashed with a system image (it has no power, image writer and console to do it with)"

    @abstractmethod
    def install(self, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
        """Write `image` and boot it; seconds from power-on to `boot_prompt` (a regular expression)
        on the console. UserError naming what the board lacks; TimeoutError with the console's
        last words when it does not boot."""

    @abstractmethod
    def connect(self) -> None:
        """Reach the booted image (once; the caller retries while its services start)."""

    @abstractmethod
    def disconnect(self) -> None:
        """End the connection to the image and keep the board (the next image is flashed on it)."""


C = TypeVar("C", bound=Capability)


def has(target: object, cap: type[C]) -> C | None:
    """The target as `cap` when it has that capability, else None."""
    found = target if isinstance(target, cap) else capabilities_of(target).get(cap)
    if found is None or not found.offers(cap):  # type: ignore[attr-defined]
        return None
    return found  # type: ignore[return-value]


def host_key_warning(target: object) -> Warning_ | None:
    """The warning a run (and doctor) starts with when the target was reached without checking its
    host key; None when it was checked, or the kind does not tell."""
    status = has(target, HostKeyStatus)
    if status is None or status.host_key_verified:
        return None
    message, remedy = status.host_key_unverified
    return Warning_(message, remedy)


def lacks(target: object, cap: type[Capability], why: str) -> str:
    """The one-line "target NAME cannot ...: why" (for a caller that raises something else)."""
    return f"target {target.name!r} cannot {cap.does}: {why}"  # type: ignore[attr-defined]


def need(target: object, cap: type[C], why: str) -> C:
    """The target as `cap`; UserError "target NAME cannot ...: why" when it lacks it."""
    found = has(target, cap)
    if found is None:
        raise UserError(lacks(target, cap, why))
    return found


class Wrapper:
    """Base of a target that wraps another: the Target protocol is passed on member by member (a
    subclass overrides what it changes), and it has what the inner target has."""

    def __init__(self, inner: Target) -> None:
        self._inner = inner

    @property
    def inner(self) -> Target:
        return self._inner

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def workdir(self) -> str:
        return self._inner.workdir

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        return self._inner.run(argv, timeout_s)

    def spawn(self, argv: list[str], log_path: str | None = None) -> Process:
        return self._inner.spawn(argv, log_path)

    def put(self, local: Path, remote: str) -> None:
        self._inner.put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self._inner.get(remote, local)

    def close(self) -> None:
        self._inner.close()


@dataclass(frozen=True)
class EmulatedMachine:
    """What a target that boots a machine jitterlab emulates declares of it (a qemu machine profile,
    with its [[target]]'s options), before it boots: the machine (in messages), its CPUs, the
    register map of its GPIO block (model/socs.py) and the GPIO block its emulator traces."""

    machine: str
    cpus: int | None = None
    gpio_soc: Soc | None = None
    traced: Soc | None = None


@dataclass(frozen=True)
class Declared:
    """A target as its [[target]] declares it, before anything connects: what it will offer, known from
    its kind and options (targets/registry.py `declare`), so that a campaign asking what it cannot
    give is refused when read, --dry-run included."""

    name: str
    described: str  # 'kind "qemu", machine = "pc"'
    offered: frozenset[type[Capability]]
    elsewhere: Callable[[type[Capability]], str]  # the targets that offer a capability, for the fix
    emulated: EmulatedMachine | None = None  # a machine jitterlab boots
    # a real-time unit beside its Linux: its unit table, read (programs/unit's UnitSpec)
    unit: object | None = None

    @property
    def cpus(self) -> int | None:
        """Its CPUs, when its [[target]] says them (a machine jitterlab boots)."""
        return self.emulated.cpus if self.emulated is not None else None

    @property
    def traced_gpio(self) -> Soc | None:
        """The GPIO block whose outputs its emulator traces (RecordsGpioOutputs), if any."""
        return self.emulated.traced if self.emulated is not None else None

    def offers(self, cap: type[Capability]) -> bool:
        return cap in self.offered

    def need(self, cap: type[Capability], who: str, where: str | Where) -> None:
        """UserError "<where>: <who> needs a target that can ...; target NAME (...) cannot; targets that
        can: ..." when the target will not offer `cap`."""
        if not self.offers(cap):
            raise UserError(f"{where}: {who} needs a target that can {cap.does}; target {self.name!r} "
                            f"({self.described}) cannot; targets that can: {self.elsewhere(cap)}")

    def need_soc(self, soc: Soc, where: str | Where) -> None:
        """UserError "<where>: target NAME (...) has the GPIO registers of soc X, not Y" when the target
        is an emulated board whose GPIO block is not `soc` (registers of no GPIO block otherwise)."""
        board = self.emulated
        if board is not None and board.gpio_soc is not None and soc is not board.gpio_soc:
            have = board.gpio_soc.name
            raise UserError(f'{where}: target {self.name!r} (qemu machine {board.machine!r}) has the GPIO '
                            f'registers of soc "{have}", not "{soc.name}"; give soc = "{have}"')


def kind_capabilities(cls: type) -> frozenset[type[Capability]]:
    """The capabilities a target class declares (before its configuration may withhold some)."""
    return frozenset(c for c in cls.__mro__ if _is_capability(c))


def capabilities_of(target: object) -> dict[type, object]:
    """Capabilities reached through wrappers: {Capability class: the object that has it}; a
    wrapper's own come before those of what it wraps."""
    found: dict[type, object] = {}
    seen = target
    while True:
        for cls in type(seen).__mro__:
            if _is_capability(cls):
                found.setdefault(cls, seen)
        if not isinstance(seen, Wrapper):
            return found
        seen = seen.inner


def _is_capability(cls: type) -> bool:
    """A capability class says what it `does`; a target class that inherits capabilities does not."""
    return issubclass(cls, Capability) and cls is not Capability and "does" in cls.__dict__
