"""Commands and files as sessions over an OpenSSH ControlMaster that labgrid's SSHDriver keeps.

Every command runs on the board as `exec sh -c WRAP sh LOG ARGV...`, each word quoted with
shlex.quote, so argv arrives literally. WRAP prints its pid first: sshd starts a session's command as
a session leader, so that pid is the command's process group (WRAP calls setsid where a server does
not), and stopping signals the whole group on the board: TERM, then KILL after the grace.
"""

from __future__ import annotations

import contextlib
import math
import os
import selectors
import shlex
import signal as signals
import subprocess
import tarfile
import threading
import time
from pathlib import Path
from typing import Any

from jitterlab.errors import RunFailed, TargetLost
from jitterlab.targets.base import CommandTimeout, Completed

# $1: log file ("" keeps the session's stdout/stderr), then the argv. Prints its pid (= the group).
_WRAP = """l=$1; shift
read -r _ _ _ _ g _ < /proc/$$/stat
s=; [ "$g" = "$$" ] || s=setsid
echo $$
[ -z "$l" ] && exec $s "$@" < /dev/null
exec $s "$@" > "$l" 2>&1 < /dev/null"""

# $1: process group, $2: signal, $3: checks 20 ms apart before KILL. Zombies do not count as alive:
# where PID 1 does not reap orphans they stay forever. Prints the signals sent.
_STOP = """g=$1 n=$3
alive() {
  kill -s 0 -- "-$g" 2>/dev/null || return 1
  for f in /proc/[0-9]*/stat; do
    read -r _ _ s _ p _ 2>/dev/null < "$f" || continue
    [ "$p" = "$g" ] && [ "$s" != Z ] && return 0
  done
  return 1
}
kill -s "$2" -- "-$g" 2>/dev/null || exit 0
echo "$2"
i=0
while alive; do
  if [ "$i" -ge "$n" ]; then kill -s KILL -- "-$g" 2>/dev/null; echo KILL; exit 0; fi
  sleep 0.02; i=$((i + 1))
done"""

_PUT = 'd=$(dirname -- "$1") && mkdir -p -- "$d" && cat > "$1"'
_PUT_TREE = 'mkdir -p -- "$1" && tar -C "$1" -xf -'
_GET = 'if [ -d "$1" ]; then echo D; exec tar -C "$1" -cf - .; else echo F; exec cat -- "$1"; fi'


def _read_line(fd: int, deadline: float) -> bytes:
    """Read from fd up to the first newline, EOF or the deadline; the line without its newline."""
    data = b""
    with selectors.DefaultSelector() as sel:
        sel.register(fd, selectors.EVENT_READ)
        while b"\n" not in data:
            left_s = deadline - time.monotonic()
            if left_s <= 0 or not sel.select(left_s):
                break
            chunk = os.read(fd, 65536)
            if not chunk:
                break
            data += chunk
    return data.partition(b"\n")[0]


def _pid(line: bytes) -> int | None:
    text = line.strip()
    return int(text) if text.isdigit() else None


def _drain(popen: subprocess.Popen, deadline: float) -> tuple[bytes, bytes, bool]:
    """Read stdout and stderr to EOF and reap; (stdout, stderr, finished before the deadline)."""
    assert popen.stdout is not None and popen.stderr is not None
    out, err = popen.stdout.fileno(), popen.stderr.fileno()
    bufs = {out: bytearray(), err: bytearray()}
    finished = True
    with selectors.DefaultSelector() as sel:
        for fd in bufs:
            sel.register(fd, selectors.EVENT_READ)
        while sel.get_map() and finished:
            left_s = deadline - time.monotonic()
            events = sel.select(left_s) if left_s > 0 else []
            finished = bool(events)
            for key, _ in events:
                chunk = os.read(key.fd, 65536)
                if chunk:
                    bufs[key.fd] += chunk
                else:
                    sel.unregister(key.fd)
    if finished:
        try:
            popen.wait(max(0.0, deadline - time.monotonic()) + 1.0)
        except subprocess.TimeoutExpired:
            finished = False
    return bytes(bufs[out]), bytes(bufs[err]), finished


def _close_pipes(popen: subprocess.Popen) -> None:
    for pipe in (popen.stdin, popen.stdout, popen.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _owned_by_nobody(info: tarfile.TarInfo) -> tarfile.TarInfo:
    """Files land owned by whoever unpacks them, as with a plain copy."""
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


class SessionProcess:
    """A command running on the board; the local side is its ssh session over the master."""

    def __init__(self, argv: list[str], popen: subprocess.Popen, pgid: int | None, sessions: Sessions):
        self.argv = tuple(argv)
        self.pgid = pgid  # on the board; None when the wrapper never started
        self._popen = popen
        self._sessions = sessions
        self._sent: int | None = None  # the last signal delivered to the group
        self._stopped = False
        self._lock = threading.Lock()

    def _rc(self, rc: int | None) -> int | None:
        # ssh exits 255 when the remote command died of a signal (or the connection broke)
        if rc == 255 and self._sent is not None:
            return -self._sent
        return rc

    def poll(self) -> int | None:
        return self._rc(self._popen.poll())

    def wait(self, timeout_s: float | None = None) -> int:
        try:
            return self._rc(self._popen.wait(timeout_s))
        except subprocess.TimeoutExpired:
            raise CommandTimeout(f"{self.argv[0]} still running after {timeout_s}s") from None

    def signal(self, signum: int) -> None:
        if self.pgid is None or self._popen.poll() is not None:
            return
        self._sessions.signal_group(self.pgid, signals.Signals(signum).name.removeprefix("SIG"))
        self._sent = signum

    def stop(self, grace_s: float = 2.0) -> int:
        with self._lock:
            if not self._stopped:
                self._stopped = True
                if self.pgid is not None:
                    checks = str(max(0, math.ceil(grace_s / 0.02)))
                    sent = self._sessions.control(
                        ["sh", "-c", _STOP, "sh", str(self.pgid), "TERM", checks], timeout_s=grace_s + 30.0
                    )
                    if sent and sent.split():
                        self._sent = signals.SIGKILL if sent.split()[-1] == "KILL" else signals.SIGTERM
                try:
                    self._popen.wait(5.0)
                except subprocess.TimeoutExpired:  # the master is gone or the session hangs
                    self._popen.kill()
                    self._popen.wait()
                _close_pipes(self._popen)
                self._sessions.forget(self)
        rc = self.poll()
        assert rc is not None
        return rc


class Sessions:
    """run, spawn, put and get on the board, each one ssh session (`ssh` ends with the host)."""

    def __init__(self, name: str, ssh: list[str], where: str) -> None:
        self.name = name
        self._ssh = ssh
        self._where = where  # e.g. "target 'bbb' (labgrid)", for errors
        self._live: set[SessionProcess] = set()
        self._lock = threading.Lock()
        self._closed = False

    def _command(self, argv: list[str], log_path: str) -> list[str]:
        if not argv:
            raise ValueError("an empty argv")
        words = ["exec", "sh", "-c", _WRAP, "sh", log_path, *argv]
        return [*self._ssh, " ".join(shlex.quote(str(w)) for w in words)]

    def _popen(self, cmd: list[str], **kwargs: Any) -> subprocess.Popen:
        # its own session: a Ctrl-C at the terminal must not cut the sessions cleanup still needs
        return subprocess.Popen(cmd, start_new_session=True, **kwargs)

    def _check_open(self) -> None:
        if self._closed:
            raise RunFailed(f"target {self.name!r} is closed (interrupted)")

    def _call(self, argv: list[str], timeout_s: float) -> tuple[bool, int | None, int, bytes, bytes]:
        """Run argv through the wrapper: (finished in time, its pgid, rc, stdout, stderr).

        Past timeout_s the local ssh is killed; the command on the board is the caller's to kill.
        """
        popen = self._popen(
            self._command(argv, ""), stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        try:
            out, err, finished = _drain(popen, time.monotonic() + timeout_s)
        finally:
            if popen.poll() is None:
                popen.kill()
                popen.wait()
            _close_pipes(popen)
        line, newline, rest = out.partition(b"\n")
        pgid = _pid(line) if newline else None
        return finished, pgid, popen.returncode, rest if pgid is not None else out, err

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        self._check_open()
        finished, pgid, rc, out, err = self._call(argv, timeout_s)
        if not finished:
            if pgid is not None:
                self.signal_group(pgid, "KILL")
            raise CommandTimeout(f"{' '.join(argv)} ran past its {timeout_s:g}s timeout on {self.name}")
        stderr = err.decode(errors="replace")
        if pgid is None and rc == 255:  # ssh itself failed: the wrapper never ran
            lines = stderr.strip().splitlines()
            raise TargetLost(
                f"{self._where}: lost the SSH connection: {lines[-1] if lines else 'ssh exited 255'}"
            )
        return Completed(tuple(argv), rc, out.decode(errors="replace"), stderr)

    def signal_group(self, pgid: int, signame: str) -> None:
        self.control(["sh", "-c", 'kill -s "$1" -- "-$2" 2>/dev/null; exit 0', "sh", signame, str(pgid)])

    def control(self, argv: list[str], timeout_s: float = 30.0) -> str | None:
        """Housekeeping (signals, also after close); its stdout, or None when the board did not answer."""
        finished, pgid, _, out, _ = self._call(argv, timeout_s)
        return out.decode(errors="replace") if finished and pgid is not None else None

    def spawn(self, argv: list[str], log_path: str | None = None) -> SessionProcess:
        with self._lock:  # close() must see every process that starts
            self._check_open()
            popen = self._popen(
                self._command(argv, log_path or "/dev/null"),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            assert popen.stdout is not None
            proc = SessionProcess(
                argv, popen, _pid(_read_line(popen.stdout.fileno(), time.monotonic() + 30)), self
            )
            self._live.add(proc)
        return proc

    def forget(self, proc: SessionProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def _transfer(self, script: str, path: str, **kwargs: Any) -> subprocess.Popen:
        self._check_open()
        quoted = " ".join(shlex.quote(w) for w in ["sh", "-c", script, "sh", path])
        return self._popen([*self._ssh, quoted], **kwargs)

    def put(self, local: Path, remote: str) -> None:
        local = Path(local)
        if local.is_dir():
            popen = self._transfer(_PUT_TREE, remote, stdin=subprocess.PIPE, stderr=subprocess.PIPE)
            assert popen.stdin is not None
            try:
                with tarfile.open(fileobj=popen.stdin, mode="w|") as tar:
                    tar.add(local, arcname=".", filter=_owned_by_nobody)
            except BrokenPipeError:
                pass  # the remote tar gave up; its stderr says why
            finally:
                with contextlib.suppress(BrokenPipeError):
                    popen.stdin.close()
        else:
            with open(local, "rb") as src:
                popen = self._transfer(_PUT, remote, stdin=src, stderr=subprocess.PIPE)
        assert popen.stderr is not None
        err = popen.stderr.read()
        popen.wait()
        popen.stderr.close()
        if popen.returncode != 0:
            why = err.decode(errors="replace").strip()
            raise OSError(f"copying {local} to {self.name}:{remote} failed: {why}")

    def get(self, remote: str, local: Path) -> None:
        local = Path(local)
        popen = self._transfer(
            _GET, remote, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert popen.stdout is not None
        try:
            kind = popen.stdout.readline().strip()
            if kind == b"D":
                local.mkdir(parents=True, exist_ok=True)
                with tarfile.open(fileobj=popen.stdout, mode="r|") as tar:
                    if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4
                        tar.extractall(local, filter="data")
                    else:
                        tar.extractall(local)  # the tree comes from our own workdir on the board
            elif kind == b"F":
                local.parent.mkdir(parents=True, exist_ok=True)
                with open(local, "wb") as dst:
                    while chunk := popen.stdout.read(65536):
                        dst.write(chunk)
        finally:
            _, err = popen.communicate()
        if popen.returncode != 0:
            why = err.decode(errors="replace").strip()
            raise FileNotFoundError(f"copying {self.name}:{remote} to {local} failed: {why}")

    def close(self) -> None:
        """Refuse new work and stop every process still running (idempotent)."""
        with self._lock:
            self._closed = True
            live = list(self._live)
        for proc in live:
            with contextlib.suppress(Exception):
                proc.stop(grace_s=1.0)
