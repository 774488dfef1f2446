"""run, spawn, put and get as sessions over one multiplexed OpenSSH connection.

The ssh and labgrid targets share this; they differ only in how the ssh command line is built and
who opens the master connection (SSHTarget itself, or labgrid's SSHDriver).

Every remote command is an argv list; each word is quoted with shlex.quote here, because ssh
joins its arguments into one string for the remote shell. Commands run under constant wrapper
scripts (ssh_scripts.py; the argv reaches them as positional parameters, never as text) that put
them in a session of their own and kill that whole group when the ssh channel's stdin closes: on a
timeout, on stop(), and when this process dies, whose end of the pipe the kernel then closes.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import shutil
import signal
import subprocess
import tarfile
import threading
from collections.abc import Callable
from pathlib import Path

from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.targets.base import CommandTimeout, Completed, extract_all
from jitterlab.targets.capabilities import ReachedBySSH
from jitterlab.targets.ssh.scripts import CONNECT, GET, PUT_FILE, PUT_TREE, RUN, SPAWN

TRANSFER_TIMEOUT_S = 600.0
_STOP_TICK_S = 0.05  # the remote stop loop's poll interval

_TOOL_PACKAGES = {"setsid": "util-linux", "tar": "tar"}


def exit_status(rc: int) -> int:
    """A shell reports death by signal N as 128+N; Popen says -N, and so do we."""
    return -(rc - 128) if 128 < rc <= 128 + 64 else rc


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""


class SSHSessions:
    """A target's commands and files, each one ssh session over its master connection.

    `ssh_argv(remote)` is the whole ssh command line for a remote argv, ending `-- HOST COMMAND`;
    `failure(stderr)` names what ssh itself reported (a UserError or TargetLost), or None.
    """

    def __init__(
        self,
        name: str,
        where: str,
        ssh_argv: Callable[[list[str]], list[str]],
        *,
        control_path: str,
        connect_timeout_s: float,
        failure: Callable[[str], Exception | None] = lambda stderr: None,
        lost_hint: str = "",
    ) -> None:
        self.name = name
        self.where = where  # e.g. "target 'bbb' (root@bbb, port 22)", for errors
        self.ssh_argv = ssh_argv
        self.control_path = control_path
        self.connect_timeout_s = connect_timeout_s
        self.failure = failure
        # said after "connection lost": what the connection tolerated, and how to tolerate more
        self.lost_hint = lost_hint
        self._live: set[SSHProcess] = set()
        self._lock = threading.Lock()
        self._closed = False

    # --- the connection ---------------------------------------------------------------------------

    def allowance_s(self) -> float:
        """Extra time a command may need when it has to connect first (no master yet)."""
        return 0.0 if self.connected() else self.connect_timeout_s + 5.0

    def control(self, operation: str) -> subprocess.CompletedProcess:
        """`ssh -O operation` on the master (check, exit)."""
        argv = self.ssh_argv([])[:-1]
        argv[argv.index("--") : argv.index("--") + 1] = ["-O", operation]
        return subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)

    def master_alive(self) -> bool:
        """True while the multiplexing master connection runs (`ssh -O check`)."""
        return self.connected() and self.control("check").returncode == 0

    def connected(self) -> bool:
        """True when a command started now goes over the master connection (no handshake)."""
        return os.path.exists(self.control_path)

    def _lost_or_none(self, rc: int, stderr: str, connected: bool) -> Exception | None:
        """Why a command that ended with `rc` did not really run, or None when it did; `connected`:
        whether the master connection was there when the command started."""
        if rc != 255:
            return None
        error = self.failure(stderr)
        if error is None and not self.master_alive():
            error = TargetLost(f"{self.where}: connection lost ({last_line(stderr) or 'ssh exited 255'})")
        if not isinstance(error, TargetLost):
            return error
        if connected and ": cannot connect: " in error.reason:
            # the master died under the command (its keep-alive got no answer) and ssh fell back to
            # a connection of its own, which found the target as silent: the connection was lost
            error = TargetLost(error.reason.replace(": cannot connect: ", ": connection lost, and a new "
                                                    "connection failed too: ", 1))
        if ": connection lost" in error.reason:
            error = TargetLost(error.reason + self.lost_hint)
        return error

    def _check_open(self) -> None:
        if self._closed:
            raise RunFailed(f"target {self.name!r} is closed (interrupted)")

    def connect(self, workdir: str | None) -> str:
        """Create the workdir (default /tmp/jitterlab-<user>) and check what spawn and put need there;
        the workdir's absolute path."""
        done = subprocess.run(
            self.ssh_argv(["sh", "-c", CONNECT, "sh", workdir or ""]),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=self.connect_timeout_s + 30,
            text=True,
            errors="replace",
        )
        if done.returncode == 255:
            raise self.failure(done.stderr) or TargetLost(
                f"{self.where}: cannot connect: {last_line(done.stderr) or 'ssh exited 255'}"
            )
        lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        refusals = {
            "notours": "belongs to another user, who could replace the programs jitterlab runs from it",
            "writable": "may be written by other users, who could replace the programs jitterlab runs "
                        "from it (chmod go-w it if its content is yours)",
            "notdir": "is not a directory (a link or a file is there)",
        }
        for word, why in refusals.items():
            if word in lines:
                raise UserError(f'{self.where}: workdir {lines[word]} {why}; set workdir = "/some/dir" '
                                "(a directory of yours) in its [[target]], or remove that one if it is stale")
        if done.returncode != 0:
            raise UserError(f"{self.where}: cannot create {workdir or 'the workdir'}: "
                            f'{last_line(done.stderr)}; set workdir = "/some/dir" in its [[target]]')
        missing = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("missing ")]
        if missing:
            raise UserError(
                f"{self.where}: lacks {', '.join(missing)}, which jitterlab needs there "
                f"(apt install {' '.join(sorted({_TOOL_PACKAGES[t] for t in missing}))})"
            )
        return lines["workdir"]

    def close(self) -> None:
        """Refuse new work and stop every process still running (idempotent)."""
        with self._lock:
            live, self._closed = list(self._live), True
        for proc in live:
            with contextlib.suppress(Exception):
                proc.stop(grace_s=1.0)

    # --- the Target protocol -----------------------------------------------------------------------

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        self._check_open()
        connected = self.connected()
        read_end, write_end = os.pipe()  # held open until the command ends: EOF would kill it
        try:
            popen = subprocess.Popen(
                self.ssh_argv(["sh", "-c", RUN, "sh", *argv]),
                stdin=read_end,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(read_end)
        try:
            out, err = popen.communicate(timeout=timeout_s + self.allowance_s())
        except subprocess.TimeoutExpired:
            os.close(write_end)
            write_end = -1
            try:
                popen.communicate(timeout=10.0)
            except subprocess.TimeoutExpired:
                popen.kill()
                popen.communicate()
            raise CommandTimeout(f"{shlex.join(argv)} ran past its {timeout_s:g}s timeout; killed") from None
        except BaseException:
            popen.kill()
            popen.wait()
            raise
        finally:
            if write_end >= 0:
                os.close(write_end)
        stderr = _without_mux_notes(err.decode(errors="replace"))
        error = self._lost_or_none(popen.returncode, stderr, connected)
        if error is not None:
            raise error
        return Completed(tuple(argv), exit_status(popen.returncode), out.decode(errors="replace"), stderr)

    def spawn(self, argv: list[str], log_path: str | None = None) -> SSHProcess:
        self._check_open()
        proc = SSHProcess(self, argv, log_path)
        with self._lock:
            self._live.add(proc)
            closed = self._closed
        if closed:  # close() ran while it started and did not see it
            proc.stop(grace_s=1.0)
            self._check_open()
        return proc

    def forget(self, proc: SSHProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def put(self, local: Path, remote: str) -> None:
        self._check_open()
        local = Path(local)
        if local.is_dir():
            self._transfer(["sh", "-c", PUT_TREE, "sh", remote], remote, tree=local)
        else:
            with open(local, "rb") as f:
                self._transfer(["sh", "-c", PUT_FILE, "sh", remote], remote, stdin=f)

    def _transfer(self, remote_argv: list[str], remote: str, *, stdin=None, tree: Path | None = None) -> None:
        connected = self.connected()
        popen = subprocess.Popen(
            self.ssh_argv(remote_argv),
            stdin=stdin if tree is None else subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        err = b""
        try:
            if tree is not None:
                assert popen.stdin is not None
                # one tar stream instead of a round trip per file
                stream = popen.stdin
                with contextlib.suppress(BrokenPipeError), tarfile.open(fileobj=stream, mode="w|") as tar:
                    for path in sorted(tree.iterdir()):
                        tar.add(path, arcname=path.name, filter=_owned_by_nobody)
            _, err = popen.communicate(timeout=TRANSFER_TIMEOUT_S + self.allowance_s())
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
            raise RunFailed(f"{self.where}: copying to {remote} took over {TRANSFER_TIMEOUT_S:g}s") from None
        stderr = err.decode(errors="replace")
        error = self._lost_or_none(popen.returncode, stderr, connected)
        if error is not None:
            raise error
        if popen.returncode != 0:
            if "No space left on device" in stderr:
                raise RunFailed(
                    f"{self.where}: the disk is full: no space left writing {remote}; free space there "
                    "or point workdir at a larger file system"
                )
            raise RunFailed(f"{self.where}: cannot write {remote}: {last_line(stderr)}")

    def get(self, remote: str, local: Path) -> None:
        self._check_open()
        local = Path(local)
        local.parent.mkdir(parents=True, exist_ok=True)
        partial = local.with_name(local.name + ".part")
        connected = self.connected()
        popen = subprocess.Popen(
            self.ssh_argv(["sh", "-c", GET, "sh", remote]),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert popen.stdout is not None
        stderr_chunks: list[bytes] = []

        def read_stderr() -> None:
            assert popen.stderr is not None
            with popen.stderr:
                stderr_chunks.append(popen.stderr.read())

        reader = threading.Thread(target=read_stderr, daemon=True)
        reader.start()
        timer = threading.Timer(TRANSFER_TIMEOUT_S + self.allowance_s(), popen.kill)
        timer.start()
        try:
            kind = popen.stdout.readline().strip()
            if kind == b"D":
                with tarfile.open(fileobj=popen.stdout, mode="r|") as tar:
                    extract_all(tar, local)
            elif kind == b"F":
                with open(partial, "wb") as f:
                    shutil.copyfileobj(popen.stdout, f, 1 << 20)
            popen.stdout.close()
            popen.wait()
            reader.join()
        finally:
            timer.cancel()
        stderr = b"".join(stderr_chunks).decode(errors="replace")
        error = self._lost_or_none(popen.returncode, stderr, connected)
        if error is not None:
            partial.unlink(missing_ok=True)
            raise error
        if popen.returncode != 0 or kind not in (b"D", b"F"):
            partial.unlink(missing_ok=True)
            if "No such file" in stderr:
                raise FileNotFoundError(f"{self.where}: no such file {remote}")
            raise OSError(f"{self.where}: cannot read {remote}: {last_line(stderr)}")
        if kind == b"F":
            os.replace(partial, local)


class OverSSH(ReachedBySSH):
    """The Target protocol's run/spawn/put/get of a target whose commands travel as SSH sessions
    (`self._sessions`): the ssh, labgrid and qemu targets differ only in how they connect."""

    _sessions: SSHSessions

    def _live_sessions(self) -> SSHSessions:
        """The connection's sessions (a kind that connects on first use does it here)."""
        return self._sessions

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        return self._live_sessions().run(argv, timeout_s)

    def spawn(self, argv: list[str], log_path: str | None = None) -> SSHProcess:
        return self._live_sessions().spawn(argv, log_path)

    def put(self, local: Path, remote: str) -> None:
        self._live_sessions().put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self._live_sessions().get(remote, local)

    def ssh_command(self, remote: list[str]) -> list[str]:
        """The ssh command line that runs `remote` over this target's connection (`-- HOST CMD` last):
        for tools that speak SSH themselves (scp, sftp) and must reach the target the same way."""
        return self._live_sessions().ssh_argv(remote)


class SSHProcess:
    """A command started by SSHSessions.spawn: its own session on the target, a channel here."""

    def __init__(self, sessions: SSHSessions, argv: list[str], log_path: str | None) -> None:
        self.argv = tuple(argv)
        self.pid: int | None = None  # the remote process group (and session) id
        self._sessions = sessions
        self._rc: int | None = None
        self._exited = threading.Event()
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._stderr: list[bytes] = []
        read_end, self._stdin = os.pipe()
        try:
            self._popen = subprocess.Popen(
                sessions.ssh_argv(["sh", "-c", SPAWN, "sh", log_path or "/dev/null", *argv]),
                stdin=read_end,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(read_end)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._started.wait(sessions.connect_timeout_s + 30)
        if self.pid is None:
            self._popen.kill()
            self._popen.wait()
            self._close_stdin()
            stderr = b"".join(self._stderr).decode(errors="replace")
            raise sessions.failure(stderr) or TargetLost(
                f"{sessions.where}: could not start {argv[0]}: {last_line(stderr) or 'no answer'}"
            )

    @property
    def pgid(self) -> int | None:
        """The remote process group: the same number as pid (it leads its own session)."""
        return self.pid

    def _read_stdout(self) -> None:
        assert self._popen.stdout is not None
        with self._popen.stdout:
            for line in self._popen.stdout:
                word, _, value = line.decode(errors="replace").strip().partition(" ")
                if word == "pgid" and value.isdigit():
                    self.pid = int(value)
                    self._started.set()
                elif word == "exit" and value.lstrip("-").isdigit():
                    self._rc = exit_status(int(value))
                    self._exited.set()
        self._popen.wait()
        if self._rc is None:
            self._rc = 255  # the connection ended first: what ssh itself says then
        self._started.set()
        self._exited.set()

    def _read_stderr(self) -> None:
        assert self._popen.stderr is not None
        with self._popen.stderr:
            for chunk in iter(lambda: self._popen.stderr.read(4096), b""):
                if sum(map(len, self._stderr)) < 65536:
                    self._stderr.append(chunk)

    def _send(self, line: str) -> None:
        with contextlib.suppress(OSError):
            os.write(self._stdin, line.encode())

    def _close_stdin(self) -> None:
        with self._lock:
            if self._stdin >= 0:
                with contextlib.suppress(OSError):
                    os.close(self._stdin)
                self._stdin = -1

    def poll(self) -> int | None:
        return self._rc if self._exited.is_set() else None

    def wait(self, timeout_s: float | None = None) -> int:
        if not self._exited.wait(timeout_s):
            raise CommandTimeout(f"{self.argv[0]} still running after {timeout_s}s")
        assert self._rc is not None
        return self._rc

    def signal(self, signum: int) -> None:
        if not self._exited.is_set() and self._stdin >= 0:
            self._send(f"sig {signal.Signals(signum).name.removeprefix('SIG')}\n")

    def stop(self, grace_s: float = 2.0) -> int:
        """TERM the remote group, KILL it after grace_s; returns when the group is gone there."""
        if self._stdin >= 0:
            self._send(f"stop {max(1, math.ceil(grace_s / _STOP_TICK_S))}\n")
            self._close_stdin()
        try:
            self._popen.wait(grace_s + 15.0)  # the remote KILL and its settling take at most ~5 s
        except subprocess.TimeoutExpired:
            self._popen.kill()
            self._popen.wait()
        self._exited.wait(5.0)
        self._sessions.forget(self)
        return self._rc if self._rc is not None else 255


def _owned_by_nobody(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Files land owned by whoever unpacks them, as with a plain copy (also when that is root)."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def _without_mux_notes(stderr: str) -> str:
    """Drop what ssh says when the target refuses another session on the master connection
    (sshd's MaxSessions, 10 by default) and it opens a connection of its own instead."""
    if "mux_client" not in stderr and "disabling multiplexing" not in stderr:
        return stderr
    return "".join(
        line
        for line in stderr.splitlines(keepends=True)
        if not line.startswith("mux_client_request_session:") and "disabling multiplexing" not in line
    )
