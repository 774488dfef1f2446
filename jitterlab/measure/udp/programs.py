"""Running the UDP programs (udp-echo-server/-client, pps-send/-recv) on a target or on the controller.

A server is started first and awaited through the file it creates once its socket is bound; the
client then runs to completion. Every process goes through spawn_recorded and carries
PR_SET_PDEATHSIG plus a bounded life of its own, so nothing outlives the run.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass

from jitterlab.measure.context import RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Warning_
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import BuildsProgramsOnDemand, ControllerMachine, has, lacks
from jitterlab.targets.processes import RecordedProcess, run_recorded, spawn_recorded

EXIT_POLICY_REFUSED = 3  # udp_common.h: the kernel refused the scheduling policy
READY_TIMEOUT_S = 10.0


def program(bindir: str, name: str) -> str:
    return f"{bindir}/c/{name}"


def _last_line(output: str) -> str:
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def failure(name: str, rc: int, output: str) -> RunFailed:
    """A program ended with status rc: its own one-line reason, or the status and its last line."""
    line = _last_line(output)
    if rc == EXIT_POLICY_REFUSED:  # "<name>: SCHED_X refused by the kernel: why; remedy"
        return RunFailed(line.removeprefix(f"{name}: "))
    what = f"killed by signal {-rc}" if rc < 0 else f"exited with status {rc}"
    return RunFailed(f"{name} {what}: {line}")


def warnings_in(output: str, where: str) -> list[Warning_]:
    """The `warning:` lines a program printed, as warnings naming where it ran."""
    return [
        Warning_(f"{where}: {line.removeprefix('warning: ')}", "see the message; the run went on")
        for line in output.splitlines()
        if line.startswith("warning: ")
    ]


def read_text(target: Target, path: str) -> str:
    done = target.run(["cat", path])
    return done.stdout if done.ok else ""


class Server:
    """A program that runs until stopped and creates `ready` once it listens."""

    def __init__(self, target: Target, name: str, argv: list[str], ready: str, log: str) -> None:
        self.target, self.name, self.ready, self.log = target, name, ready, log
        self.proc: RecordedProcess = spawn_recorded(target, argv, log_path=log)

    def await_ready(self, timeout_s: float = READY_TIMEOUT_S) -> None:
        deadline = time.monotonic() + timeout_s
        while True:
            rc = self.proc.poll()
            if rc is not None:
                raise failure(self.name, rc, read_text(self.target, self.log))
            if self.target.run(["test", "-e", self.ready]).ok:
                return
            if time.monotonic() > deadline:
                self.proc.stop()
                raise RunFailed(
                    f"{self.name} did not listen within {timeout_s:g}s: "
                    f"{_last_line(read_text(self.target, self.log))}"
                )
            time.sleep(0.01)

    def stop(self) -> tuple[int, str]:
        """SIGTERM it (it writes what it counted) and return (status, its output)."""
        rc = self.proc.stop()
        return rc, read_text(self.target, self.log)


def run_to_end(target: Target, name: str, argv: list[str], log: str, timeout_s: float) -> str:
    """Run a program to completion and return its output; RunFailed if it fails or overruns."""
    rc = run_recorded(target, argv, log, timeout_s=timeout_s, name=name,
                      budget="its run + campaign.run_timeout")
    output = read_text(target, log)
    if rc != 0:
        raise failure(name, rc, output)
    return output


@dataclass(frozen=True)
class Side:
    """Where one end of a UDP test runs: a target, its built programs and a private directory."""

    target: Target
    bindir: str
    scratch: str
    is_controller: bool = False


def is_local(target: Target) -> bool:
    """True when the target is the controller itself (capabilities.ControllerMachine)."""
    return has(target, ControllerMachine) is not None


@contextlib.contextmanager
def controller_side(ctx: RunContext) -> Iterator[Side]:
    """The jitterlab machine as one end: the target itself when it is the controller, else
    ctx.controller, which builds the programs the first time a run asks (once per source
    version, like a target; the runner's controller offers capabilities.BuildsProgramsOnDemand)."""
    if is_local(ctx.target):
        yield Side(ctx.target, ctx.bindir, ctx.scratch, is_controller=True)
        return
    controller = ctx.controller
    why = "the client end of this cell runs on the controller with jitterlab's programs built there"
    if controller is None:
        raise RunFailed(f"no controller was given to this run: {why}", "unavailable")
    programs = has(controller, BuildsProgramsOnDemand)
    if programs is None:
        raise RunFailed(lacks(controller, BuildsProgramsOnDemand, why), "unavailable")
    try:
        bindir = programs.programs_dir()
    except UserError as exc:
        raise RunFailed(f"cannot build the programs on the controller: {exc}", "unavailable") from None
    scratch = str(ctx.local_dir / "controller")
    controller.run(["mkdir", "-p", scratch])
    yield Side(controller, bindir, scratch, is_controller=True)
