"""A Target for hermetic tests: canned command output, fake processes on a fake clock.

Registered as the target kind `fake` (targets/registry.py), so that a campaign file can name it and
`jitterlab run` can be tested without a machine: every command it is not told about succeeds and
prints nothing, its processes exist only on its clock, and a test can make it lose its connection.
"""

from __future__ import annotations

import shutil
import signal as signals
import tempfile
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from jitterlab.model.errors import TargetLost
from jitterlab.targets.base import CommandTimeout, Completed
from jitterlab.targets.capabilities import ControllerMachine
from jitterlab.targets.local import LocalTarget, workdir_only

Response = Completed | Exception | Callable[[list[str]], Completed]


@dataclass
class FakeBehaviour:
    """How a spawned fake process behaves. duration_s None: runs until signalled or stopped."""

    rc: int = 0
    duration_s: float | None = None
    log: str = ""  # written to log_path at spawn
    files: dict[str, str] = field(default_factory=dict)  # written when it ends (path -> text)
    ignores: frozenset[int] = frozenset()  # signals it survives (SIGKILL never is)


class FakeProcess:
    """A process that exists only on the target's fake clock."""

    def __init__(self, argv: list[str], behaviour: FakeBehaviour, target: FakeTarget) -> None:
        self.argv = tuple(argv)
        self.behaviour = behaviour
        self.signals: list[int] = []
        self._target = target
        duration_s = behaviour.duration_s
        self._ends_at = None if duration_s is None else target.clock_s + duration_s
        self._rc: int | None = None

    def _end(self, rc: int) -> int:
        if self._rc is None:
            self._rc = rc
            for path, text in self.behaviour.files.items():
                Path(path).parent.mkdir(parents=True, exist_ok=True)
                Path(path).write_text(text)
        return self._rc

    def poll(self) -> int | None:
        if self._rc is None and self._ends_at is not None and self._target.clock_s >= self._ends_at:
            self._end(self.behaviour.rc)
        return self._rc

    def wait(self, timeout_s: float | None = None) -> int:
        if self.poll() is not None:
            return self._rc
        left_s = None if self._ends_at is None else self._ends_at - self._target.clock_s
        if left_s is not None and (timeout_s is None or left_s <= timeout_s):
            self._target.clock_s = self._ends_at
            return self._end(self.behaviour.rc)
        if timeout_s is None:
            raise RuntimeError(f"fake {self.argv[0]} runs forever: wait() would never return")
        self._target.clock_s += timeout_s
        raise CommandTimeout(f"{self.argv[0]} still running after {timeout_s}s")

    def signal(self, signum: int) -> None:
        if self.poll() is None:
            self.signals.append(signum)
            if signum not in self.behaviour.ignores or signum == signals.SIGKILL:
                self._end(-signum)

    def stop(self, grace_s: float = 2.0) -> int:
        if self.poll() is None:
            self.signal(signals.SIGTERM)
            if self._rc is None:
                self._target.clock_s += grace_s
                self.signal(signals.SIGKILL)
        return self._rc


class FakeTarget(ControllerMachine):
    """Records every argv; `run` answers from canned responses (longest matching argv prefix),
    else runs the command for real locally (`fallback_local=True`), or answers rc 127 (rc 0 and no
    output when `quiet`). It is the controller too: what would run there is as fake as the rest."""

    kind = "fake"

    def __init__(
        self, name: str = "fake", workdir: str | None = None, fallback_local: bool = False,
        quiet: bool = False,
    ) -> None:
        self.name = name
        self.workdir = workdir or tempfile.mkdtemp(prefix="jitterlab-fake-")
        if workdir is None:  # the directory it made goes with it (kept while the target is in use)
            weakref.finalize(self, shutil.rmtree, self.workdir, ignore_errors=True)
        self.fallback_local = fallback_local
        self.quiet = quiet
        self.clock_s = 0.0  # fake time: advances only in wait()/stop() or by the test
        self.calls: list[tuple[str, ...]] = []  # every run and spawn argv, in order
        self.processes: list[FakeProcess] = []
        self.closed = False
        self.closing = threading.Event()  # set by close(): what "runs" on it is being stopped
        self.lost: str | None = None  # why it cannot be reached since lose()
        self._responses: list[tuple[tuple[str, ...], Response]] = []
        self._behaviours: list[tuple[tuple[str, ...], FakeBehaviour]] = []
        self._local = LocalTarget(name, self.workdir)  # the "filesystem" and the fallback

    def respond(
        self,
        prefix: list[str],
        stdout: str = "",
        rc: int = 0,
        stderr: str = "",
        *,
        response: Response | None = None,
    ) -> None:
        """Answer commands starting with `prefix`: this output, or `response` (a Completed,
        an exception to raise, or a callable taking argv)."""
        self._responses.append((tuple(prefix), response or Completed((), rc, stdout, stderr)))

    def behave(self, prefix: list[str], behaviour: FakeBehaviour) -> None:
        """Spawned commands starting with `prefix` behave like this (default: run until stopped)."""
        self._behaviours.append((tuple(prefix), behaviour))

    @staticmethod
    def _match(table: list, argv: list[str]):
        """The answer of the longest matching prefix; of equal ones, the latest given."""
        hits = [(len(p), i, v) for i, (p, v) in enumerate(table) if tuple(argv[: len(p)]) == p]
        return max(hits, key=lambda h: h[:2])[2] if hits else None

    def lose(self, reason: str = "connection to the fake target lost") -> None:
        """From now on every command raises TargetLost(reason), and its processes are gone."""
        self.lost = reason
        for proc in list(self.processes):
            proc._end(-signals.SIGKILL)

    def _reachable(self) -> None:
        if self.lost is not None:
            raise TargetLost(self.lost)

    def running(self) -> list[FakeProcess]:
        """Its processes that have not ended."""
        return [p for p in list(self.processes) if p.poll() is None]

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        self._reachable()
        self.calls.append(tuple(argv))
        answer = self._match(self._responses, argv)
        if isinstance(answer, Exception):
            raise answer
        if callable(answer):
            return answer(list(argv))
        if answer is not None:
            return Completed(tuple(argv), answer.rc, answer.stdout, answer.stderr)
        if self.fallback_local:
            return self._local.run(argv, timeout_s)
        if self.quiet:
            return Completed(tuple(argv), 0, "", "")
        return Completed(tuple(argv), 127, "", f"{argv[0]}: no canned response in FakeTarget")

    def spawn(self, argv: list[str], log_path: str | None = None) -> FakeProcess:
        self._reachable()
        self.calls.append(tuple(argv))
        behaviour = self._match(self._behaviours, argv) or FakeBehaviour()
        if log_path:
            Path(log_path).parent.mkdir(parents=True, exist_ok=True)
            Path(log_path).write_text(behaviour.log)
        proc = FakeProcess(argv, behaviour, self)
        self.processes.append(proc)
        return proc

    def put(self, local: Path, remote: str) -> None:
        self._reachable()
        self._local.put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self._reachable()
        self._local.get(remote, local)

    def close(self) -> None:
        self.closing.set()
        for proc in list(self.processes):
            proc.stop()
        self.closed = True


OPENED: list[FakeTarget] = []
"""Every FakeTarget the `fake` kind opened in this process, for a test to look at afterwards."""


def parse_options(options: Mapping[str, object], where: str) -> str | None:
    """The `fake` kind's options: `workdir` (an absolute path; default: a new temporary directory)."""
    return workdir_only(options, where, "fake")


def open_fake(name: str, options: Mapping[str, object], where: str | None = None) -> FakeTarget:
    """A quiet FakeTarget (every command it is not told about succeeds), recorded in OPENED."""
    target = FakeTarget(name, parse_options(options, where or f"target {name!r}"), quiet=True)
    OPENED.append(target)
    return target
