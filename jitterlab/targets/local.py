"""The machine jitterlab itself runs on."""

from __future__ import annotations

import contextlib
import os
import pwd
import select
import shutil
import signal
import stat
import subprocess
import threading
import time
from collections.abc import Collection, Iterator, Mapping
from pathlib import Path

from jitterlab.model.errors import UserError, shown
from jitterlab.model.registry import did_you_mean
from jitterlab.targets.base import CommandTimeout, Completed
from jitterlab.targets.capabilities import (
    ControllerMachine,
    SharesControllerCpus,
    SharesControllerFiles,
    WaitsForPath,
)


def default_workdir() -> str:
    """$XDG_RUNTIME_DIR/jitterlab where the session has a runtime directory of this user's own
    (private by definition), else /tmp/jitterlab-<uid>."""
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    if runtime.startswith("/"):
        with contextlib.suppress(OSError):
            st = os.stat(runtime)
            if stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o077:
                return f"{runtime.rstrip('/')}/jitterlab"
    return f"/tmp/jitterlab-{os.getuid()}"


def private_dir(path: str) -> str:
    """Create `path` with mode 0700, or check the one that is there: a directory (not a link) of
    this user that no one else may write. Programs are built and run from it, so a directory that
    another user made or could write could hold their programs for us to run."""
    parent = os.path.dirname(path.rstrip("/")) or "/"
    try:
        os.makedirs(parent, exist_ok=True)
        os.mkdir(path, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise UserError(f"workdir {path}: cannot create it: {exc.strerror}; set workdir = \"/some/dir\" "
                        "in its [[target]]") from None
    st = os.lstat(path)
    fix = ('set workdir = "/some/dir" in its [[target]] (a directory of yours), or remove this one if '
           "it is stale")
    if not stat.S_ISDIR(st.st_mode):
        raise UserError(f"workdir {path}: is not a directory (a link or a file is there); {fix}")
    if st.st_uid != os.getuid():
        try:
            owner = pwd.getpwuid(st.st_uid).pw_name
        except KeyError:
            owner = f"uid {st.st_uid}"
        raise UserError(f"workdir {path}: belongs to {owner}, not to you; jitterlab would run programs "
                        f"from it that {owner} can replace; {fix}")
    if st.st_mode & 0o022:
        raise UserError(f"workdir {path}: others may write it (mode {stat.filemode(st.st_mode)}), so its "
                        f"programs could be replaced; chmod go-w {path} if its content is yours, or {fix}")
    return path


def _kill_group(pgid: int, signum: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signum)


def _group_alive(pgid: int) -> bool:
    """True while a process of the group still runs (zombies do not count: they are dead,
    and where PID 1 does not reap orphans they stay forever, so killpg(pgid, 0) would lie)."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            return True
    return False


def _stop_group(pgid: int, popen: subprocess.Popen, grace_s: float) -> None:
    """SIGTERM the group; SIGKILL whatever of it still runs after grace_s, leader or not."""
    _kill_group(pgid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    pause_s = 0.001  # most exit within milliseconds of SIGTERM: look often first, then less
    while popen.poll() is None or _group_alive(pgid):
        if time.monotonic() >= deadline:
            _kill_group(pgid, signal.SIGKILL)
            popen.wait()
            _await_group_gone(pgid)
            return
        time.sleep(pause_s)
        pause_s = min(2 * pause_s, 0.02)


def _await_group_gone(pgid: int, timeout_s: float = 5.0) -> None:
    """SIGKILL is delivered at once but dying takes a moment; return when it is done."""
    deadline = time.monotonic() + timeout_s
    while _group_alive(pgid) and time.monotonic() < deadline:
        time.sleep(0.002)


def _await_exit(pid: int, timeout_s: float) -> bool:
    """Wait until the child `pid` has exited (not reaped) or timeout_s passed; False when this
    kernel has no pidfds (Linux < 5.3), and Popen.wait must do the waiting. Popen.wait with a
    timeout sleeps in steps growing to 50 ms, i.e. ~25 ms late on average after every program;
    a pidfd wakes up on the exit itself."""
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        return False
    try:
        select.select([fd], [], [], max(0.0, timeout_s))
    finally:
        os.close(fd)
    return True


class LocalProcess:
    """A subprocess leading its own process group, so stopping it stops its children too."""

    def __init__(self, argv: list[str], log_path: str | None, on_exit) -> None:
        self.argv = tuple(argv)
        log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if log_path:
                log.close()  # the child holds its own descriptor
        self.pid = self._popen.pid
        self._on_exit = on_exit

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout_s: float | None = None) -> int:
        left_s = timeout_s
        if timeout_s is not None and self._popen.poll() is None and _await_exit(self.pid, timeout_s):
            left_s = 0.0  # it has exited, or its time is up
        try:
            return self._popen.wait(left_s)
        except subprocess.TimeoutExpired:
            raise CommandTimeout(f"{self.argv[0]} still running after {timeout_s}s") from None

    def signal(self, signum: int) -> None:
        if self._popen.poll() is None:
            _kill_group(self.pid, signum)

    def stop(self, grace_s: float = 2.0) -> int:
        # Children that outlive the leader get the same grace: they may be writing results.
        if self._popen.poll() is None or _group_alive(self.pid):
            _stop_group(self.pid, self._popen, grace_s)
        self._on_exit(self)
        return self._popen.returncode


class LocalTarget(ControllerMachine, SharesControllerCpus, SharesControllerFiles, WaitsForPath):
    """Runs commands on this machine with subprocess, one process group per command."""

    def __init__(self, name: str = "local", workdir: str | None = None) -> None:
        self.name = name
        self.workdir = private_dir(workdir or default_workdir())
        self._live: set[LocalProcess] = set()
        self._lock = threading.Lock()

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            return Completed(tuple(argv), 127, "", f"{argv[0]}: command not found")
        except OSError as exc:  # not executable, exec format error, ...: what a shell says too
            return Completed(tuple(argv), 126, "", f"{argv[0]}: {exc.strerror}")
        try:
            out, err = popen.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(popen.pid, signal.SIGKILL)
            try:  # bounded: a process that left the group may still hold the pipes
                popen.communicate(timeout=2.0)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.wait()
            _await_group_gone(popen.pid)
            raise CommandTimeout(f"{' '.join(argv)} ran past its {timeout_s:g}s timeout") from None
        except BaseException:
            _kill_group(popen.pid, signal.SIGKILL)
            popen.wait()
            raise
        # a finished command leaves nothing behind (e.g. `sh -c 'daemon >/dev/null &'`)
        if _group_alive(popen.pid):
            _kill_group(popen.pid, signal.SIGKILL)
            _await_group_gone(popen.pid)
        return Completed(
            tuple(argv),
            popen.returncode,
            out.decode(errors="replace"),
            err.decode(errors="replace"),
        )

    def spawn(self, argv: list[str], log_path: str | None = None) -> LocalProcess:
        proc = LocalProcess(argv, log_path, self._forget)
        with self._lock:
            self._live.add(proc)
        return proc

    def _forget(self, proc: LocalProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def put(self, local: Path, remote: str) -> None:
        if Path(local).is_dir():
            shutil.copytree(local, remote, dirs_exist_ok=True)
        else:
            Path(remote).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, remote)

    def get(self, remote: str, local: Path) -> None:
        if Path(remote).is_dir():
            shutil.copytree(remote, local, dirs_exist_ok=True)
            return
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(remote, local)

    def close(self) -> None:
        with self._lock:
            live = list(self._live)
        for proc in live:
            proc.stop(grace_s=1.0)

    def live_pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._live if p.poll() is None]

    def controller_kept_off(self, cpus: Collection[int]) -> contextlib.AbstractContextManager[None]:
        return threads_kept_off(cpus)

    def wait_for_path(self, path: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return True
            time.sleep(0.0005)  # a look costs ~5 us: what waits for the path (a probe ready) is seen soon
        return os.path.exists(path)


def workdir_only(options: Mapping[str, object], where: str, kind: str) -> str | None:
    """The options of a kind whose only option is `workdir` (an absolute path, or None)."""
    for key in options:
        if key != "workdir":
            hint = did_you_mean(str(key), ["workdir"])
            raise UserError(f"{where}.{key}: unknown option of a {kind} target; {hint}known: workdir")
    workdir = options.get("workdir")
    if workdir is not None and not (isinstance(workdir, str) and workdir.startswith("/")):
        raise UserError(f"{where}.workdir: must be an absolute path, got {shown(workdir)}")
    return workdir


def _threads() -> set[int]:
    return {int(tid) for tid in os.listdir("/proc/self/task")}


# one block at a time: a second one (a second local target's run) would take what the first one kept
# as the CPUs to give back; it waits for the first to end
_KEEPING = threading.RLock()


@contextlib.contextmanager
def threads_kept_off(cpus: Collection[int]) -> Iterator[None]:
    """Every thread of this process off `cpus` while the block runs (a thread started meanwhile
    inherits it from its creator, and so does a program started: the ones jitterlab places say their
    own CPUs), then each back on the CPUs it had. A thread left with no CPU keeps its own: a
    machine of one CPU, or a probe's CPU that is all the thread was given. Blocks of several threads
    run one after the other."""
    with _KEEPING:
        yield from _kept_off(set(cpus))


def _kept_off(away: set[int]) -> Iterator[None]:
    kept: dict[int, set[int]] = {}
    before = _threads()
    for tid in before:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            had = os.sched_getaffinity(tid)
            if had & away and had - away:
                os.sched_setaffinity(tid, had - away)
                kept[tid] = had
    # a thread started meanwhile by one kept off has its creator's CPUs: it gets back what was taken
    given_back = {frozenset(had - away): had for had in kept.values()}
    try:
        yield
    finally:
        for tid in _threads():
            with contextlib.suppress(OSError):
                had = kept.get(tid) if tid in before else given_back.get(frozenset(os.sched_getaffinity(tid)))
                if had is not None:
                    os.sched_setaffinity(tid, had)
