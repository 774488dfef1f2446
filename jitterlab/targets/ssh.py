"""A machine reached over SSH with the OpenSSH client, one multiplexed connection per target.

Every remote command is an argv list; each word is quoted with shlex.quote here, because ssh
joins its arguments into one string for the remote shell. Commands run under constant wrapper
scripts (the argv reaches them as positional parameters, never as text) that put them in a
session of their own and kill that whole group when the ssh channel's stdin closes: on a
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
import tempfile
import threading
from pathlib import Path

from jitterlab.errors import RunFailed, TargetLost, UserError
from jitterlab.targets.base import CommandTimeout, Completed
from jitterlab.targets.ssh_options import SSHOptions
from jitterlab.targets.ssh_scripts import CONNECT, GET, PUT_FILE, PUT_TREE, RUN, SPAWN

CONTROL_PERSIST_S = 60  # an idle master lingers this long, also after a killed controller
TRANSFER_TIMEOUT_S = 600.0
_STOP_TICK_S = 0.05  # the remote stop loop's poll interval

_TOOL_PACKAGES = {"setsid": "util-linux", "tar": "tar"}


def _exit_status(rc: int) -> int:
    """A shell reports death by signal N as 128+N; Popen says -N, and so do we."""
    return -(rc - 128) if 128 < rc <= 128 + 64 else rc


def _config_path(path: str) -> str:
    """A path as a value of ssh's own option language: %-tokens escaped, spaces quoted."""
    path = path.replace("%", "%%")
    return f'"{path}"' if any(c.isspace() for c in path) else path


class SSHTarget:
    """A machine reached with the ssh client; connect() before use, close() to release it."""

    kind = "ssh"

    def __init__(self, name: str, options: SSHOptions) -> None:
        self.name = name
        self.options = options
        self.workdir = options.workdir or ""
        self.cross_cc = options.cc  # programs are built on this machine with it, not on the target
        self._dir = tempfile.mkdtemp(prefix="jl-ssh-")
        self.control_path = f"{self._dir}/cm"
        self._live: set[SSHProcess] = set()
        self._lock = threading.Lock()
        self._closed = False

    # --- the ssh command line ---------------------------------------------------------------------

    def ssh_argv(self, remote: list[str], *, master: str = "auto") -> list[str]:
        o = self.options
        argv = [
            "ssh",
            "-T",
            "-p",
            str(o.port),
            "-o", "BatchMode=yes",
            "-o", "LogLevel=ERROR",
            "-o", f"ConnectTimeout={math.ceil(o.connect_timeout_s)}",
            "-o", "ServerAliveInterval=5",
            "-o", "ServerAliveCountMax=3",
            "-o", f"StrictHostKeyChecking={'accept-new' if o.accept_new_host_key else 'yes'}",
            "-o", f"UserKnownHostsFile={_config_path(o.known_hosts_path())}",
            "-o", f"ControlMaster={master}",
            "-o", f"ControlPath={_config_path(self.control_path)}",
            "-o", f"ControlPersist={CONTROL_PERSIST_S}",
        ]  # fmt: skip
        if o.key:
            argv += ["-i", _config_path(os.path.expanduser(o.key)), "-o", "IdentitiesOnly=yes"]
        if o.user:
            argv += ["-l", o.user]
        return [*argv, "--", o.host.strip("[]"), shlex.join(remote)]

    def _allowance_s(self) -> float:
        """Extra time a command may need when it has to connect first (no master yet)."""
        return 0.0 if os.path.exists(self.control_path) else self.options.connect_timeout_s + 5.0

    def _where(self) -> str:
        o = self.options
        return f"target {self.name!r} ({o.destination}, port {o.port})"

    def failure(self, stderr: str) -> Exception | None:
        """The error ssh itself reported in `stderr` (a UserError or TargetLost), or None."""
        o, where = self.options, self._where()
        host = o.host if o.port == 22 else f"[{o.host.strip('[]')}]:{o.port}"
        known = o.known_hosts_path()
        if "IDENTIFICATION HAS CHANGED" in stderr or "has changed and you have requested" in stderr:
            return UserError(
                f"{where}: its host key has CHANGED since it was recorded in {known}; refusing to connect "
                "(this is what a man-in-the-middle looks like). If the target was reinstalled, check its "
                "new fingerprint on its console (ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), and "
                f"only then forget the old key: ssh-keygen -f {shlex.quote(known)} -R {shlex.quote(host)}"
            )
        if "Host key verification failed" in stderr or "host key is known for" in stderr:
            scan = f"ssh-keyscan -p {o.port} {shlex.quote(o.host.strip('[]'))}"
            return UserError(
                f"{where}: its host key is not in {known}; compare the fingerprint from `{scan} | "
                "ssh-keygen -lf -` with the one on its console, then add it with "
                f"`{scan} >> {shlex.quote(known)}`, or set accept_new_host_key = true in its [[target]] "
                "to trust it on first use"
            )
        if "Permission denied" in stderr and "(" in stderr:
            return UserError(
                f"{where}: the target refused our key (Permission denied (publickey)); set key = "
                '"~/.ssh/<your key>" in its [[target]] and put the .pub into ~/.ssh/authorized_keys of '
                f"{o.user or 'your user'} there (ssh-copy-id)"
            )
        for pattern, reason in (
            ("Connection refused", "connection refused: is sshd running there, on this port?"),
            ("timed out", f"no answer within {o.connect_timeout_s:g}s (connect_timeout): is it up?"),
            ("No route to host", "no route to host: is it up and on this network?"),
            ("Network is unreachable", "network unreachable from this machine"),
            ("Could not resolve hostname", f"host name {o.host!r} not found: check host in its [[target]]"),
        ):
            if pattern in stderr:
                return TargetLost(f"{where}: cannot connect: {reason}")
        for pattern in ("closed by remote host", "Connection reset", "Broken pipe", "mux_client",
                        "Connection closed", "kex_exchange_identification", "Timeout, server"):
            if pattern in stderr:
                return TargetLost(f"{where}: connection lost ({_last_line(stderr)})")
        return None

    def master_alive(self) -> bool:
        """True while the multiplexing master connection runs (`ssh -O check`)."""
        if not os.path.exists(self.control_path):
            return False
        argv = self.ssh_argv([])[:-1]
        argv[argv.index("--") : argv.index("--") + 1] = ["-O", "check"]
        done = subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        return done.returncode == 0

    def _lost_or_none(self, rc: int, stderr: str) -> Exception | None:
        """Why a command that ended with `rc` did not really run, or None when it did."""
        if rc != 255:
            return None
        error = self.failure(stderr)
        if error is None and not self.master_alive():
            error = TargetLost(f"{self._where()}: connection lost ({_last_line(stderr) or 'ssh exited 255'})")
        return error

    # --- connection -------------------------------------------------------------------------------

    def connect(self) -> SSHTarget:
        """Open the master connection, create the workdir, check what spawn and put need there."""
        done = subprocess.run(
            self.ssh_argv(["sh", "-c", CONNECT, "sh", self.options.workdir or ""]),
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=self.options.connect_timeout_s + 30,
            text=True,
            errors="replace",
        )
        if done.returncode == 255:
            raise self.failure(done.stderr) or TargetLost(
                f"{self._where()}: cannot connect: {_last_line(done.stderr) or 'ssh exited 255'}"
            )
        lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
        if done.returncode != 0 or "notours" in lines:
            problem = (
                f"{lines['notours']} belongs to another user"
                if "notours" in lines
                else f"cannot create {self.options.workdir or 'the workdir'}: {_last_line(done.stderr)}"
            )
            raise UserError(f"{self._where()}: {problem}; set workdir = \"/some/dir\" in its [[target]]")
        missing = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("missing ")]
        if missing:
            raise UserError(
                f"{self._where()}: lacks {', '.join(missing)}, which jitterlab needs there "
                f"(apt install {' '.join(sorted({_TOOL_PACKAGES[t] for t in missing}))})"
            )
        self.workdir = lines["workdir"]
        return self

    def close(self) -> None:
        with self._lock:
            live, self._closed = list(self._live), True
        for proc in live:
            with contextlib.suppress(Exception):
                proc.stop(grace_s=1.0)
        if os.path.exists(self.control_path):
            argv = self.ssh_argv([])[:-1]
            argv[argv.index("--") : argv.index("--") + 1] = ["-O", "exit"]
            with contextlib.suppress(subprocess.TimeoutExpired):
                subprocess.run(argv, capture_output=True, timeout=10, stdin=subprocess.DEVNULL)
        shutil.rmtree(self._dir, ignore_errors=True)

    # --- the Target protocol -----------------------------------------------------------------------

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
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
            out, err = popen.communicate(timeout=timeout_s + self._allowance_s())
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
        error = self._lost_or_none(popen.returncode, stderr)
        if error is not None:
            raise error
        return Completed(tuple(argv), _exit_status(popen.returncode), out.decode(errors="replace"), stderr)

    def spawn(self, argv: list[str], log_path: str | None = None) -> SSHProcess:
        proc = SSHProcess(self, argv, log_path)
        with self._lock:
            self._live.add(proc)
        return proc

    def forget(self, proc: SSHProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def put(self, local: Path, remote: str) -> None:
        local = Path(local)
        if local.is_dir():
            self._transfer(["sh", "-c", PUT_TREE, "sh", remote], remote, tree=local)
        else:
            with open(local, "rb") as f:
                self._transfer(["sh", "-c", PUT_FILE, "sh", remote], remote, stdin=f)

    def _transfer(self, remote_argv: list[str], remote: str, *, stdin=None, tree: Path | None = None) -> None:
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
                        tar.add(path, arcname=path.name)
            _, err = popen.communicate(timeout=TRANSFER_TIMEOUT_S + self._allowance_s())
        except subprocess.TimeoutExpired:
            popen.kill()
            popen.wait()
            raise RunFailed(
                f"{self._where()}: copying to {remote} took over {TRANSFER_TIMEOUT_S:g}s"
            ) from None
        stderr = err.decode(errors="replace")
        error = self._lost_or_none(popen.returncode, stderr)
        if error is not None:
            raise error
        if popen.returncode != 0:
            if "No space left on device" in stderr:
                raise RunFailed(
                    f"{self._where()}: the disk is full: no space left writing {remote}; free space there "
                    "or point workdir at a larger file system"
                )
            raise RunFailed(f"{self._where()}: cannot write {remote}: {_last_line(stderr)}")

    def get(self, remote: str, local: Path) -> None:
        local = Path(local)
        local.parent.mkdir(parents=True, exist_ok=True)
        partial = local.with_name(local.name + ".part")
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
        timer = threading.Timer(TRANSFER_TIMEOUT_S + self._allowance_s(), popen.kill)
        timer.start()
        try:
            kind = popen.stdout.readline().strip()
            if kind == b"D":
                with tarfile.open(fileobj=popen.stdout, mode="r|") as tar:
                    if hasattr(tarfile, "data_filter"):  # Python >= 3.11.4: refuse paths outside
                        tar.extractall(local, filter="data")
                    else:
                        tar.extractall(local)
            elif kind == b"F":
                with open(partial, "wb") as f:
                    shutil.copyfileobj(popen.stdout, f, 1 << 20)
            popen.stdout.close()
            popen.wait()
            reader.join()
        finally:
            timer.cancel()
        stderr = b"".join(stderr_chunks).decode(errors="replace")
        error = self._lost_or_none(popen.returncode, stderr)
        if error is not None:
            partial.unlink(missing_ok=True)
            raise error
        if popen.returncode != 0 or kind not in (b"D", b"F"):
            partial.unlink(missing_ok=True)
            if "No such file" in stderr:
                raise FileNotFoundError(f"{self._where()}: no such file {remote}")
            raise OSError(f"{self._where()}: cannot read {remote}: {_last_line(stderr)}")
        if kind == b"F":
            os.replace(partial, local)


class SSHProcess:
    """A command started by SSHTarget.spawn: its own session on the target, a channel here."""

    def __init__(self, target: SSHTarget, argv: list[str], log_path: str | None) -> None:
        self.argv = tuple(argv)
        self.pid: int | None = None  # the remote process group (and session) id
        self._target = target
        self._rc: int | None = None
        self._stopped_rc: int | None = None
        self._exited = threading.Event()
        self._started = threading.Event()
        self._lock = threading.Lock()
        self._stderr: list[bytes] = []
        read_end, self._stdin = os.pipe()
        try:
            self._popen = subprocess.Popen(
                target.ssh_argv(["sh", "-c", SPAWN, "sh", log_path or "/dev/null", *argv]),
                stdin=read_end,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        finally:
            os.close(read_end)
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()
        self._started.wait(target.options.connect_timeout_s + 30)
        if self.pid is None:
            self._popen.kill()
            self._popen.wait()
            self._close_stdin()
            stderr = b"".join(self._stderr).decode(errors="replace")
            raise target.failure(stderr) or TargetLost(
                f"{target._where()}: could not start {argv[0]}: {_last_line(stderr) or 'no answer'}"
            )

    def _read_stdout(self) -> None:
        assert self._popen.stdout is not None
        with self._popen.stdout:
            for line in self._popen.stdout:
                word, _, value = line.decode(errors="replace").strip().partition(" ")
                if word == "pgid" and value.isdigit():
                    self.pid = int(value)
                    self._started.set()
                elif word == "exit" and value.lstrip("-").isdigit():
                    self._rc = _exit_status(int(value))
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
        self._target.forget(self)
        return self._rc if self._rc is not None else 255


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


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else ""
