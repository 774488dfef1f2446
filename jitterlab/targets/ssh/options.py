"""The [[target]] options of kind = "ssh", validated into SSHOptions (no connection is made here)."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.errors import UserError, shown
from jitterlab.model.registry import did_you_mean
from jitterlab.model.units import MAX_CAMPAIGN_NS, parse_duration_ns
from jitterlab.programs import check_cc

OPTIONS = {
    "host": 'name or address of the target, e.g. host = "board1.lab" (required)',
    "port": "TCP port of its sshd, e.g. port = 22",
    "user": 'login name, e.g. user = "root" (default: your ssh config, else your user name)',
    "key": 'identity file, e.g. key = "~/.ssh/id_ed25519" (default: your ssh config and agent)',
    "known_hosts": 'file of trusted host keys (default: "~/.ssh/known_hosts")',
    "accept_new_host_key": "true: trust and record the host key of a target seen for the first time",
    "connect_timeout": 'how long to wait for the connection, e.g. "10s"',
    "alive_timeout": 'how long the target may not answer before its connection counts as lost, e.g. "60s" '
                     '(default "15s"; raise it for a board that real-time loads keep busy for longer)',
    "workdir": 'absolute directory on the target for jitterlab\'s files (default: "/tmp/jitterlab-<user>")',
    "cc": 'cross compiler on this machine, e.g. cc = "aarch64-linux-gnu-gcc": build here, static',
}
# ssh reads these as words of its own config language: a name must not be taken for an option
_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.:%@+-]*$")
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_][A-Za-z0-9_.:-]*)$")
# a compiler and its flags: words without anything a shell or make would read as syntax
ALIVE_INTERVAL_S = 5  # ssh's keep-alive probe interval (ServerAliveInterval)


@dataclass(frozen=True)
class SSHOptions:
    host: str
    port: int = 22
    user: str | None = None
    key: str | None = None
    known_hosts: str = "~/.ssh/known_hosts"
    accept_new_host_key: bool = False
    connect_timeout_s: float = 10.0
    alive_timeout_s: float = 15.0  # keep-alive probes unanswered this long: the connection is lost
    workdir: str | None = None
    cc: str | None = None
    from_command_line: bool = False  # given as doctor's ssh://URL and options, not as a [[target]]

    def setting(self, key: str, value: str) -> str:
        """How a person sets option `key` where these options came from: `set key = value in its
        [[target]]`, or the command line's `--key value`."""
        if self.from_command_line:
            flag = "--" + key.replace("_", "-")
            return f"give {flag}" if value == "true" else f"give {flag} {value}"
        return f"set {key} = {value} in its [[target]]"

    @property
    def destination(self) -> str:
        host = self.host.strip("[]")
        return f"{self.user}@{host}" if self.user else host

    def known_hosts_path(self) -> str:
        return os.path.expanduser(self.known_hosts)


def parse_options(options: Mapping[str, object], where: str, *, check_files: bool = False) -> SSHOptions:
    """Check the options of one ssh target; `where` is e.g. "campaign.toml: target[1]".

    `check_files`: also that the key file exists here (when connecting, not when reading a campaign,
    which may be checked, e.g. with --dry-run, on another machine).
    """
    for key in options:
        if key not in OPTIONS:
            hint = did_you_mean(str(key), list(OPTIONS))
            raise UserError(
                f"{where}.{key}: unknown option of an ssh target; {hint}known: {', '.join(sorted(OPTIONS))}"
            )
    host = options.get("host")
    if host is None:
        raise UserError(f'{where}.host: an ssh target needs a host, e.g. host = "board1.lab"')
    if not isinstance(host, str) or not _HOST.match(host):
        raise UserError(
            f"{where}.host: expected a host name or address (letters, digits, '.', '-', ':'), "
            f"got {shown(host)}"
        )
    port = options.get("port", 22)
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise UserError(f"{where}.port: expected a TCP port number 1-65535, e.g. port = 22, "
                        f"got {shown(port)}")
    user = options.get("user")
    if user is not None and (not isinstance(user, str) or not _NAME.match(user)):
        raise UserError(f'{where}.user: expected a login name, e.g. user = "root", got {shown(user)}')
    key = _path(options, "key", where, must_exist=check_files)
    known_hosts = _path(options, "known_hosts", where, must_exist=False) or "~/.ssh/known_hosts"
    accept = options.get("accept_new_host_key", False)
    if not isinstance(accept, bool):
        raise UserError(f"{where}.accept_new_host_key: expected true or false, got {shown(accept)}")
    timeout = options.get("connect_timeout", "10s")
    timeout_ns = parse_duration_ns(timeout, f"{where}.connect_timeout", MAX_CAMPAIGN_NS)
    if timeout_ns < 1_000_000_000:
        raise UserError(f'{where}.connect_timeout: ssh counts whole seconds; give "1s" or more: '
                        f"{shown(timeout)}")
    alive = options.get("alive_timeout", "15s")
    alive_ns = parse_duration_ns(alive, f"{where}.alive_timeout", MAX_CAMPAIGN_NS)
    if alive_ns < ALIVE_INTERVAL_S * 1_000_000_000:
        raise UserError(f'{where}.alive_timeout: ssh asks every {ALIVE_INTERVAL_S} s; give '
                        f'"{ALIVE_INTERVAL_S}s" or more: {shown(alive)}')
    workdir = options.get("workdir")
    if workdir is not None and not (
        isinstance(workdir, str) and workdir.startswith("/") and workdir.rstrip("/") and "\n" not in workdir
    ):
        raise UserError(f'{where}.workdir: expected an absolute path, e.g. "/tmp/jitterlab", '
                        f"got {shown(workdir)}")
    cc = options.get("cc")
    if cc is not None:
        check_cc(cc, f"{where}.cc")
    return SSHOptions(
        host=host,
        port=port,
        user=user,
        key=key,
        known_hosts=known_hosts,
        accept_new_host_key=accept,
        connect_timeout_s=timeout_ns / 1e9,
        alive_timeout_s=alive_ns / 1e9,
        workdir=workdir.rstrip("/") if workdir else None,
        cc=" ".join(cc.split()) if isinstance(cc, str) else None,
    )


def _path(options: Mapping[str, object], key: str, where: str, *, must_exist: bool) -> str | None:
    value = options.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or any(c in value for c in '"\n\r\t'):
        raise UserError(f'{where}.{key}: expected a file path, e.g. {key} = "~/.ssh/...", '
                        f"got {shown(value)}")
    if must_exist and not os.path.isfile(os.path.expanduser(value)):
        raise UserError(f"{where}.{key}: no such file {shown(value)}; give the path of your private key")
    return value


def from_url(url: str, where: str, extra: Mapping[str, object] | None = None) -> SSHOptions:
    """ssh://[user@]host[:port] (and `extra` options) -> options with defaults for the rest."""
    m = re.fullmatch(r"ssh://(?:(?P<user>[^@/]+)@)?(?P<host>\[[^\]]+\]|[^:/@]+)(?::(?P<port>\d+))?/?", url)
    if not m:
        raise UserError(f"{where}: cannot read {shown(url)}; write it like ssh://user@host:22")
    raw: dict[str, object] = {**(extra or {}), "host": m["host"]}
    if m["user"]:
        raw["user"] = m["user"]
    if m["port"]:
        raw["port"] = int(m["port"])
    return dataclasses.replace(parse_options(raw, where, check_files=True), from_command_line=True)
