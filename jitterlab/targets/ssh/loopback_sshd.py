"""A throwaway OpenSSH server on 127.0.0.1 for tests and benchmarks of the ssh target.

It runs /usr/sbin/sshd (Debian package openssh-server) unprivileged-style: a generated config,
host key, client key and known_hosts in one directory, no PAM, on a free loopback port. `drop()`
kills the server and its connections (not the commands they run, which must clean up after
themselves, as on a target whose network went away).
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

SSHD = "/usr/sbin/sshd"


def available() -> str | None:
    """Why a loopback sshd cannot run here, or None when it can."""
    if not os.access(SSHD, os.X_OK):
        return f"{SSHD} is missing (apt install openssh-server; scripts/install-deps installs it)"
    if not shutil.which("ssh-keygen") or not shutil.which("ssh"):
        return "the OpenSSH client is missing (apt install openssh-client)"
    return None


def _keygen(path: Path) -> None:
    if not path.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "jitterlab-test", "-f", str(path)],
            check=True,
            stdin=subprocess.DEVNULL,
        )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopbackSSHD:
    """One sshd; `client_key` and `known_hosts` are what a target needs to reach it."""

    def __init__(self, root: Path, client_key: Path | None = None) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.host_key = self.root / "host_key"
        self.client_key = client_key or self.root / "client_key"
        self.known_hosts = self.root / "known_hosts"
        self.config = self.root / "sshd_config"
        self.log = self.root / "sshd.log"
        self.user = getpass.getuser()
        self.port = 0
        self._proc: subprocess.Popen | None = None

    def start(self, port: int | None = None) -> LoopbackSSHD:
        _keygen(self.host_key)
        _keygen(self.client_key)
        (self.root / "authorized_keys").write_text(Path(f"{self.client_key}.pub").read_text())
        if os.geteuid() == 0:  # sshd as root insists on its privilege separation directory
            Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)
        self.port = port or self.port or free_port()
        self.config.write_text(
            "\n".join(
                [
                    "ListenAddress 127.0.0.1",
                    f"HostKey {self.host_key}",
                    f"AuthorizedKeysFile {self.root / 'authorized_keys'}",
                    "UsePAM no",
                    "StrictModes no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PermitRootLogin prohibit-password",
                    "PidFile none",
                    # bash then skips ~/.bashrc (sshd sessions at level 1 read it): a heavy one,
                    # e.g. `pyenv init`, would cost every command ~100 ms, as it does on such a target
                    "SetEnv SHLVL=1",
                    "Subsystem sftp internal-sftp",  # sftp, and scp of OpenSSH 9 (SFTP protocol)
                    "LogLevel INFO",
                    "",
                ]
            )
        )
        key_type, key = Path(f"{self.host_key}.pub").read_text().split()[:2]
        self.known_hosts.write_text(f"[127.0.0.1]:{self.port} {key_type} {key}\n")
        with open(self.log, "ab") as log:
            self._proc = subprocess.Popen(
                [SSHD, "-D", "-e", "-f", str(self.config), "-p", str(self.port)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
            )
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError(f"sshd exited {self._proc.returncode}: {self.log.read_text()[-500:]}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), 0.5) as s:
                s.settimeout(2)
                if s.recv(4).startswith(b"SSH-"):
                    return self
            time.sleep(0.05)
        raise RuntimeError(f"sshd did not listen on port {self.port} within 15s")

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc else None

    def options(self, **extra: object) -> dict[str, object]:
        """[[target]] options of an ssh target that reaches this server."""
        return {
            "host": "127.0.0.1",
            "port": self.port,
            "user": self.user,
            "key": str(self.client_key),
            "known_hosts": str(self.known_hosts),
            **extra,
        }

    def toml(self, name: str, **extra: object) -> str:
        lines = ["[[target]]", f'name = "{name}"', 'kind = "ssh"']
        for key, value in self.options(**extra).items():
            lines.append(f"{key} = {json.dumps(value)}")  # JSON strings, ints and booleans are TOML
        return "\n".join(lines) + "\n"

    def _server_pids(self) -> list[int]:
        """The listener and its connection handlers (sshd processes below it, not the shells)."""
        if self._proc is None or self._proc.poll() is not None:
            return []
        children: dict[int, list[int]] = {}
        for entry in os.listdir("/proc"):
            if entry.isdigit():
                with contextlib.suppress(OSError, IndexError, ValueError):
                    stat = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
                    children.setdefault(int(stat[1]), []).append(int(entry))
        found, todo = [], [self._proc.pid]
        while todo:
            pid = todo.pop()
            with contextlib.suppress(OSError):
                if os.readlink(f"/proc/{pid}/exe") != SSHD:
                    continue
            found.append(pid)
            todo.extend(children.get(pid, []))
        return found

    def drop(self) -> None:
        """Kill the server and every connection it holds, as if the target went off the network."""
        for pid in self._server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if self._proc is not None:
            self._proc.wait()

    def freeze(self, frozen: bool = True) -> None:
        """Stop (SIGSTOP) the server and its connections, as a target too busy to answer; False:
        let them go on."""
        for pid in self._server_pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGSTOP if frozen else signal.SIGCONT)

    def stop(self) -> None:
        self.drop()
