"""A machine reached over SSH with the OpenSSH client, one multiplexed connection per target.

This module builds the ssh command line, opens and ends the master connection and turns what ssh
says into errors that name the fix; commands and files travel as sessions over it (ssh_sessions.py).
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import shutil
import subprocess
import tempfile

from jitterlab.model.errors import TargetLost, UserError
from jitterlab.targets.capabilities import AnswersSlowly, Capability, CrossBuilt
from jitterlab.targets.ssh.options import ALIVE_INTERVAL_S, SSHOptions
from jitterlab.targets.ssh.sessions import OverSSH, SSHSessions, last_line

CONTROL_PERSIST_S = 60  # an idle master lingers this long, also after a killed controller


def _config_path(path: str) -> str:
    """A path as a value of ssh's own option language: %-tokens escaped, spaces quoted."""
    path = path.replace("%", "%%")
    return f'"{path}"' if any(c.isspace() for c in path) else path


class SSHTarget(OverSSH, CrossBuilt, AnswersSlowly):
    """A machine reached with the ssh client; connect() before use, close() to release it."""

    def __init__(self, name: str, options: SSHOptions) -> None:
        self.name = name
        self.options = options
        self.workdir = options.workdir or ""
        self._dir = tempfile.mkdtemp(prefix="jl-ssh-")
        self.control_path = f"{self._dir}/cm"
        self._sessions = SSHSessions(
            name,
            self._where(),
            lambda remote: self.ssh_argv(remote),  # looked up per call: bench/parallel.py counts them
            control_path=self.control_path,
            connect_timeout_s=options.connect_timeout_s,
            failure=self.failure,
            lost_hint=f"; it may also have been silent for {options.alive_timeout_s:g}s (alive_timeout), "
                      "e.g. kept busy by real-time work: raise alive_timeout in its [[target]] if so",
        )

    def offers(self, cap: type[Capability]) -> bool:
        return self.offered(self.options, cap)

    @staticmethod
    def offered(options: SSHOptions, cap: type[Capability]) -> bool:
        """What a target with these options offers: it is CrossBuilt only with a `cc`."""
        return cap is not CrossBuilt or options.cc is not None

    @property
    def alive_timeout_s(self) -> float:
        return self.options.alive_timeout_s

    @property
    def cross_cc(self) -> str:
        """Programs are built on this machine with it (`cc` of its [[target]]), not on the target."""
        assert self.options.cc is not None, "cross_cc of an ssh target without cc"
        return self.options.cc

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
            "-o", f"ServerAliveInterval={ALIVE_INTERVAL_S}",
            "-o", f"ServerAliveCountMax={max(1, math.ceil(o.alive_timeout_s / ALIVE_INTERVAL_S))}",
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
                f"`{scan} >> {shlex.quote(known)}`, or {o.setting('accept_new_host_key', 'true')} "
                "to trust it on first use"
            )
        if "Permission denied" in stderr and "(" in stderr:
            key = "~/.ssh/<your key>" if o.from_command_line else '"~/.ssh/<your key>"'
            return UserError(
                f"{where}: the target refused our key (Permission denied (publickey)); "
                f"{o.setting('key', key)} and put the .pub into ~/.ssh/authorized_keys of "
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
                return TargetLost(f"{where}: connection lost ({last_line(stderr)})")
        return None

    def master_alive(self) -> bool:
        """True while the multiplexing master connection runs (`ssh -O check`)."""
        return self._sessions.master_alive()

    # --- connection -------------------------------------------------------------------------------

    def connect(self) -> SSHTarget:
        """Open the master connection, create the workdir, check what spawn and put need there; on
        failure nothing is left (the control socket's private directory included)."""
        try:
            self.workdir = self._sessions.connect(self.options.workdir)
        except BaseException:
            self.close()
            raise
        return self

    def close(self) -> None:
        self._sessions.close()
        if os.path.exists(self.control_path):
            with contextlib.suppress(subprocess.TimeoutExpired):
                self._sessions.control("exit")
        shutil.rmtree(self._dir, ignore_errors=True)
