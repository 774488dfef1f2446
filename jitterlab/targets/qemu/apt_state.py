"""Running apt-cache and apt-get download on this machine's apt lists or on a state of jitterlab's own.

An own state is a directory of the cache (<cache>/apt-backports, <cache>/apt-arm64) holding a
sources.list, the lists read from it and apt's archive cache; apt is pointed at it with options
only, so this machine's apt configuration is never read for sources nor changed:
- backports: this Debian release's backports suite, for a kernel version this machine's lists lack;
- a CPU architecture that is not this machine's: Debian's release, its updates, security and
  backports suites for that architecture only, with an empty dpkg status (nothing of that
  architecture is installed here). About 26 MB of lists, read in a few seconds.
A state is read again when it is older than a day or missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError

APT_TIMEOUT_S = 600.0
MIRROR = "http://deb.debian.org/debian"
SECURITY_MIRROR = "http://deb.debian.org/debian-security"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MAX_AGE_S = 86400.0
RETRY_S = 600.0  # after a failed reading that left lists to use
# what decides whether apt's answers on this machine's lists may have changed
HOST_STAMPS = ("/var/lib/apt/lists", "/var/cache/apt/pkgcache.bin", "/etc/apt/sources.list.d")


@dataclass(frozen=True)
class Package:
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}={self.version}"


def _run_apt(argv: list[str], where: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=APT_TIMEOUT_S, cwd=cwd, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise UserError(
            f"{where}: {argv[0]} is missing: named Debian kernels are fetched with apt; on another "
            'system give the path of a kernel file, e.g. kernel = "/boot/vmlinuz-..."'
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(
            f"{where}: {' '.join(argv[:2])} took over {APT_TIMEOUT_S:g}s; check the network"
        ) from None


def _host_apt_options() -> list[str]:
    # as root, apt would try to drop to _apt, who cannot write our cache
    return ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []


def os_release() -> dict[str, str]:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return {}
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in text.splitlines()) if k}


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def _first_error(text: str) -> str:
    """The first "E:" line of apt's output (the index and why; the last one only says "some"),
    without the mirror's address."""
    errors = [line for line in text.splitlines() if line.startswith("E:")]
    return re.sub(r"\s*\[IP: [^]]*\]", "", " ".join(errors[0].split())) if errors else last_line(text)


def _stamp(paths: list[Path] | tuple[str, ...]) -> list[int]:
    stamps = []
    for path in paths:
        with contextlib.suppress(OSError):
            stamps.append(os.stat(path).st_mtime_ns)
    return stamps


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held while one process prepares something in the cache (an apt state, a kernel, a root):
    other targets and jitterlab processes wait for it. With Debug::NoLocking apt itself would not
    keep two readers of a state apart."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


class Apt:
    """apt-cache and apt-get download on this machine's lists (state None) or on a state of our own.

    `arch`: the Debian architecture of a foreign state (None: this machine's, for backports)."""

    def __init__(self, where: str, state: Path | None = None, arch: str | None = None) -> None:
        self.where = where
        self.state = state
        self.arch = arch
        self.options = _host_apt_options()
        if state is not None:
            self.options += [
                "-o", f"Dir::Etc::SourceList={state}/sources.list",
                "-o", "Dir::Etc::SourceParts=/nonexistent",
                "-o", f"Dir::State::Lists={state}/lists",
                "-o", f"Dir::Cache={state}/cache",
                "-o", "Acquire::Languages=none",
                "-o", "Debug::NoLocking=1",
            ]  # fmt: skip
        if arch is not None:
            # only that architecture, and none of this machine's installed packages as its status
            self.options += [
                "-o", f"APT::Architecture={arch}",
                "-o", f"APT::Architectures={arch}",
                "-o", "Dir::State::status=/dev/null",
            ]  # fmt: skip

    @property
    def name(self) -> str:
        """For messages: "this machine's apt lists" or "jitterlab's arm64 apt state in <dir>"."""
        if self.state is None:
            return "this machine's apt lists"
        return f"jitterlab's {self.arch or 'backports'} apt state in {self.state}"

    def cache(self, args: list[str]) -> str:
        done = _run_apt(["apt-cache", *self.options, *args], self.where)
        return done.stdout if done.returncode == 0 else ""

    def stamp(self) -> list[int]:
        """Changes when apt's answers may have changed (the lists were read again)."""
        if self.state is None:
            return _stamp(HOST_STAMPS)
        return _stamp([self.state / "updated"])

    def age_s(self) -> float | None:
        """Seconds since our own state was last read; None when it never was."""
        assert self.state is not None
        try:
            return time.time() - (self.state / "updated").stat().st_mtime
        except OSError:
            return None

    def refresh(self) -> None:
        """Read our own state's suites when it is missing or older than a day."""
        assert self.state is not None
        with locked(self.state / "update.lock"):
            age_s = self.age_s()
            if age_s is not None and age_s < MAX_AGE_S:
                return
            tried = _stamp([self.state / "tried"])
            if tried and time.time() - tried[0] / 1e9 < RETRY_S and self._has_lists():
                return  # lists read partly a moment ago: the mirror will not have synced yet
            failure = self._update()
            if failure is None:
                (self.state / "updated").touch()
                return
            (self.state / "tried").touch()
            if not self._has_lists():
                raise UserError(f"{self.where}: {failure}; check the network, or retry when the mirror "
                                "has synced")
            # the lists that could be read are used (apt keeps the old one of an index it could
            # not fetch): a suite mid-sync on the mirror, or a machine offline for a while, still
            # boots the kernels it has; "updated" stays old, so the next boot reads them again

    def _has_lists(self) -> bool:
        assert self.state is not None
        return any((self.state / "lists").glob("*_Packages*"))

    def _update(self) -> str | None:
        """apt-get update of our own sources; what failed, or None."""
        assert self.state is not None
        codename = os_release().get("VERSION_CODENAME")
        if not codename:
            raise UserError(
                f"{self.where}: this system names no Debian release (VERSION_CODENAME in /etc/os-release)"
            )
        for sub in ("lists/partial", "cache/archives/partial"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        suites = [(MIRROR, f"{codename}-backports")]
        if self.arch is not None:
            suites = [(MIRROR, codename), (MIRROR, f"{codename}-updates"),
                      (SECURITY_MIRROR, f"{codename}-security"), *suites]
        (self.state / "sources.list").write_text(
            "".join(f"deb [signed-by={KEYRING}] {mirror} {suite} main\n" for mirror, suite in suites)
        )
        done = _run_apt(["apt-get", *self.options, "-qq", "update"], self.where)
        # an index that could not be fetched may leave the exit status 0 and say so with "E:"
        if done.returncode == 0 and not any(line.startswith("E:") for line in done.stderr.splitlines()):
            return None
        what = " ".join(suite for _, suite in suites)
        return f"reading Debian {what} into {self.state} failed: {_first_error(done.stderr or done.stdout)}"

    def download(self, packages: list[Package], into: Path) -> None:
        done = _run_apt(["apt-get", *self.options, "-qq", "download", *map(str, packages)], self.where, into)
        if done.returncode != 0:
            fix = ("run apt-get update (as root)" if self.state is None
                   else f"delete {self.state} to read Debian's lists again")
            raise UserError(
                f"{self.where}: apt-get download {' '.join(map(str, packages))} failed: "
                f"{last_line(done.stderr or done.stdout)}; {fix} and check the network"
            )
