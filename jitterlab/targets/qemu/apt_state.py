"""apt on a state of jitterlab's own: Debian's lists for one architecture, read into the cache.

A state is a directory of the cache (<cache>/apt-arm64, <cache>/apt-amd64) holding a sources.list,
the lists read from it and apt's archive cache; apt is pointed at it with options only, so this
machine's apt configuration is never read for sources nor changed. It reads Debian's release,
its -updates, -security and -backports suites for the machine's architecture and for this
machine's own (a kernel of another architecture is built for here with this machine's
linux-kbuild of the same version: both come from one reading of the archive, never from lists
read at other times). About 26 MB of lists per architecture, read in a few seconds, again when
older than a day, and at once when the sources changed (another mirror, another architecture).

A reading that fails leaves the lists of before in use when there are any, and says so (`note`):
a suite mid-sync on the mirror still lets the kernels of yesterday boot, never silently.
Mirrors: deb.debian.org, or JITTERLAB_DEBIAN_MIRROR / JITTERLAB_DEBIAN_SECURITY_MIRROR (a lab's
own mirror or proxy).
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from jitterlab.cache import locked
from jitterlab.model.errors import UserError

if TYPE_CHECKING:
    from debian.deb822 import Packages

APT_TIMEOUT_S = 600.0
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"
MAX_AGE_S = 86400.0
RETRY_S = 600.0  # after a failed reading that left lists to use
_NOT_FOUND = ("E: No packages found",)
# how apt-get download says that the pool lacks a file its lists name
_POOL_MISSING = re.compile(r"\b404\s+Not Found|File not found")


@dataclass(frozen=True)
class Archive:
    """Where Debian is read from; keyring None: a local test archive, trusted as it is."""

    mirror: str = "http://deb.debian.org/debian"
    security: str = "http://deb.debian.org/debian-security"
    keyring: str | None = KEYRING


def archive() -> Archive:
    """Debian's mirrors, or the lab's own (JITTERLAB_DEBIAN_MIRROR, JITTERLAB_DEBIAN_SECURITY_MIRROR)."""
    default = Archive()
    return Archive(
        os.environ.get("JITTERLAB_DEBIAN_MIRROR") or default.mirror,
        os.environ.get("JITTERLAB_DEBIAN_SECURITY_MIRROR") or default.security,
    )


UNRELEASED = ("sid", "unstable", "experimental")  # suites without -updates, -security, -backports


def suites(codename: str, source: Archive) -> list[tuple[str, str]]:
    """(mirror, suite) of a Debian release as a board image reads them."""
    if codename in UNRELEASED:
        return [(source.mirror, codename)]
    return [(source.mirror, codename), (source.mirror, f"{codename}-updates"),
            (source.security, f"{codename}-security")]


@dataclass(frozen=True)
class Package:
    name: str
    version: str
    arch: str | None = None  # None: the state's own architecture (or "all")

    def __str__(self) -> str:
        return f"{self.name}{':' + self.arch if self.arch else ''}={self.version}"


class PoolMissing(UserError):
    """apt-get download found a package in the lists but not its file in Debian's pool."""

    def __init__(self, where: str, said: str) -> None:
        super().__init__(f"{where}: Debian's pool lacks a file its lists name: {said}")
        self.said = said


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


def os_release() -> dict[str, str]:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return {}
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in text.splitlines()) if k}


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def first_error(text: str) -> str:
    """The first "E:" line of apt's output (the index and why; the last one only says "some"),
    without the mirror's address."""
    errors = [line for line in text.splitlines() if line.startswith("E:")]
    return re.sub(r"\s*\[IP: [^]]*\]", "", " ".join(errors[0].split())) if errors else last_line(text)


class Apt:
    """apt-cache and apt-get download on jitterlab's state of Debian for architecture `arch`, which
    also holds the lists of `host` (this machine's architecture)."""

    def __init__(self, where: str, state: Path, arch: str, host: str) -> None:
        self.where = where
        self.state = state
        self.arch = arch
        self.host = host
        self.note = ""  # set by refresh() when the lists in use could not be read again
        self.options = [
            "-o", f"Dir::Etc::SourceList={state}/sources.list",
            "-o", "Dir::Etc::SourceParts=/nonexistent",
            "-o", f"Dir::State::Lists={state}/lists",
            "-o", f"Dir::Cache={state}/cache",
            # apt's binary cache of the lists, which container images' apt.conf turns off: without
            # it every apt-cache call parses 26 MB of lists again (4 s instead of 0.1 s)
            "-o", "Dir::Cache::pkgcache=pkgcache.bin", "-o", "Dir::Cache::srcpkgcache=srcpkgcache.bin",
            "-o", "Dir::State::status=/dev/null",  # nothing of this machine counts as installed
            "-o", "Acquire::Languages=none",
            "-o", "Debug::NoLocking=1",  # our own lock (refresh) keeps readers of a state apart
            "-o", f"APT::Architecture={arch}",
            "-o", f"APT::Architectures={','.join(dict.fromkeys((arch, host)))}",
        ]  # fmt: skip
        if os.geteuid() == 0:  # as root, apt would drop to _apt, who cannot write our cache
            self.options += ["-o", "APT::Sandbox::User=root"]

    @property
    def name(self) -> str:
        """For messages: "jitterlab's arm64 apt state in <dir>"."""
        return f"jitterlab's {self.arch} apt state in {self.state}"

    def show(self, names: list[str]) -> list[Packages]:
        """Every version apt's lists hold of `names` (one stanza each; none for a name apt does
        not know). UserError with apt's own words when apt fails."""
        done = _run_apt(["apt-cache", *self.options, "show", *names], self.where)
        output = done.stdout + done.stderr
        if done.returncode != 0:
            if any(line.startswith(_NOT_FOUND) for line in output.splitlines()):
                return []
            raise UserError(f"{self.where}: apt-cache show {' '.join(names)} on {self.name} failed: "
                            f"{first_error(output)}; delete {self.state} to read Debian's lists again")
        from debian.deb822 import Packages  # here: 40 ms of every start, for a campaign without kernels

        return list(Packages.iter_paragraphs(done.stdout, use_apt_pkg=False))

    def pkgnames(self, prefix: str) -> list[str]:
        """The names of the packages the lists hold that start with `prefix`."""
        done = _run_apt(["apt-cache", *self.options, "pkgnames", prefix], self.where)
        if done.returncode != 0:
            raise UserError(f"{self.where}: apt-cache pkgnames on {self.name} failed: "
                            f"{first_error(done.stdout + done.stderr)}; delete {self.state} to read "
                            "Debian's lists again")
        return done.stdout.split()

    def stamp(self) -> list[int]:
        """Changes when apt's answers may have changed (the lists were read again)."""
        with contextlib.suppress(OSError):
            return [os.stat(self.state / "updated").st_mtime_ns]
        return []

    def _sources(self) -> str:
        codename = os_release().get("VERSION_CODENAME")
        if not codename:
            raise UserError(
                f"{self.where}: this system names no Debian release (VERSION_CODENAME in /etc/os-release)"
            )
        source = archive()
        signed = f"signed-by={source.keyring}" if source.keyring else "trusted=yes"
        read = suites(codename, source)
        if codename not in UNRELEASED:  # a kernel version the release lacks may be in backports
            read.append((source.mirror, f"{codename}-backports"))
        # the architectures are part of what was read: other ones, and the lists are read again
        lines = [f"# architectures {' '.join(dict.fromkeys((self.arch, self.host)))}\n"]
        return "".join(lines + [f"deb [{signed}] {mirror} {suite} main\n" for mirror, suite in read])

    def refresh(self, *, force: bool = False) -> None:
        """Read the state's suites when they are missing, older than a day, from other sources, or
        `force`d (a pool that lacks what the lists name: they are older than the archive)."""
        with locked(self.state / "update.lock"):
            sources = self._sources()
            same = _read(self.state / "sources.list") == sources
            updated = self.stamp()
            if same and not force and updated and time.time() - updated[0] / 1e9 < MAX_AGE_S:
                self.note = ""
                return
            tried = self.state / "tried"
            if same and not force and self._has_lists() and _age_s(tried) < RETRY_S:
                self.note = _read(tried)  # read and failed a moment ago: the mirror has not synced yet
                return
            for sub in ("lists/partial", "cache/archives/partial"):
                (self.state / sub).mkdir(parents=True, exist_ok=True)
            (self.state / "sources.list").write_text(sources)
            failure = self._update()
            # made here, under the lock: readers then only read it
            _run_apt(["apt-cache", *self.options, "gencaches"], self.where)
            if failure is None:
                (self.state / "updated").touch()
                tried.unlink(missing_ok=True)
                self.note = ""
                return
            if not self._has_lists():
                raise UserError(f"{self.where}: {failure}; check the network, or retry when the mirror "
                                "has synced")
            # the lists that could be read are used (apt keeps the old one of an index it could
            # not fetch, and drops those of sources no longer read): said in every record of a
            # kernel resolved on them
            if same and updated:
                when = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(updated[0] / 1e9))
                self.note = f"{failure}; the lists read {when} were used where no newer could be read"
            else:
                self.note = f"{failure}; the suites that could be read were used"
            tried.write_text(self.note)

    def _has_lists(self) -> bool:
        return any((self.state / "lists").glob("*_Packages*"))

    def _update(self) -> str | None:
        """apt-get update of our own sources; what failed, or None."""
        done = _run_apt(["apt-get", *self.options, "-qq", "update"], self.where)
        # an index that could not be fetched may leave the exit status 0 and say so with "E:"
        if done.returncode == 0 and not any(line.startswith("E:") for line in done.stderr.splitlines()):
            return None
        what = " ".join(line.split()[-2] for line in _read(self.state / "sources.list").splitlines()
                        if line.startswith("deb "))
        return f"reading Debian {what} into {self.state} failed: {first_error(done.stderr or done.stdout)}"

    def download(self, packages: list[Package], into: Path) -> None:
        """The .deb files of `packages` into `into`; PoolMissing when the pool lacks one."""
        done = _run_apt(["apt-get", *self.options, "-qq", "download", *map(str, packages)], self.where, into)
        if done.returncode == 0:
            return
        said = first_error(done.stderr or done.stdout)
        if _POOL_MISSING.search(said):
            raise PoolMissing(self.where, said)
        raise UserError(f"{self.where}: apt-get download {' '.join(map(str, packages))} failed: {said}; "
                        "check the network and retry")


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")
