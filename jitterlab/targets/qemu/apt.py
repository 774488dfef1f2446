"""Which Debian packages make a kernel, as apt sees them, and fetching them (no installing).

A kernel named "standard" or "rt" is the candidate of the machine profile's metapackage of that
flavour (linux-image-amd64 or linux-image-rt-amd64 for pc) in this machine's apt lists; a version
like "6.12" is the newest 6.12.x of it, from these lists or else from Debian's backports suite,
which jitterlab reads into an apt state of its own in the cache (this machine's apt configuration
is never changed). A kernel is its image package, its headers and what the headers need to build
modules (the -common tree and kbuild); `apt-get download` fetches them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.options import KernelSpec

APT_TIMEOUT_S = 600.0
BACKPORTS_MIRROR = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"


@dataclass(frozen=True)
class Package:
    name: str
    version: str

    def __str__(self) -> str:
        return f"{self.name}={self.version}"


@dataclass(frozen=True)
class Resolved:
    """The packages of one kernel: the image, then its headers and what they need."""

    image: Package
    headers: tuple[Package, ...]
    backports: bool = False

    @property
    def release(self) -> str:
        """`uname -r` of the kernel: linux-image-6.1.0-56-rt-amd64 -> 6.1.0-56-rt-amd64."""
        return self.image.name.removeprefix("linux-image-").removesuffix("-unsigned")

    @property
    def key(self) -> str:
        return re.sub(r"[^A-Za-z0-9.+_-]", "_", f"{self.image.name}_{self.image.version}")


# --- apt's answers, parsed ---------------------------------------------------------------------


def parse_policy(text: str) -> tuple[str | None, list[str]]:
    """`apt-cache policy PKG` -> (candidate or None, versions newest first)."""
    candidate = None
    versions: list[str] = []
    in_table = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("Candidate:"):
            value = stripped.split(":", 1)[1].strip()
            candidate = None if value == "(none)" else value
        elif stripped.startswith("Version table:"):
            in_table = True
        elif in_table:
            words = stripped.removeprefix("***").split()
            # a version line is "VERSION PRIORITY"; the lines below it name where it comes from
            if len(words) == 2 and words[1].isdigit() and not words[0].isdigit():
                versions.append(words[0])
    return candidate, versions


def parse_show(text: str) -> dict[str, str]:
    """The fields of the first stanza of `apt-cache show PKG=VERSION`."""
    fields: dict[str, str] = {}
    key = None
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        if line[0].isspace() and key:
            fields[key] += " " + line.strip()
        else:
            key, _, value = line.partition(":")
            fields[key] = value.strip()
    return fields


def depends(field: str) -> list[tuple[str, str | None]]:
    """A Depends field -> (package, version pinned with = or >=, else None), first alternatives."""
    out = []
    for clause in field.split(","):
        first = clause.split("|")[0].strip()
        m = re.match(r"^([a-z0-9][a-z0-9.+-]*)(?::\w+)?\s*(?:\((=|>=)\s*([^)\s]+)\))?", first)
        if m:
            out.append((m[1], m[3]))
    return out


def pick_version(spec: KernelSpec, candidate: str | None, versions: list[str]) -> str | None:
    """The metapackage version `spec` asks for among apt's (newest first), or None."""
    if spec.version is None:
        return candidate
    return next((v for v in versions if v.split(":")[-1].startswith(spec.version + ".")), None)


# --- asking apt ----------------------------------------------------------------------------------

AptCache = Callable[[list[str]], str]  # ["policy", "PKG"] -> stdout; "" when apt knows nothing


def resolve(spec: KernelSpec, apt_cache: AptCache, where: str, *, backports: bool = False) -> Resolved | None:
    """The packages of the kernel `spec` names, as apt_cache sees them; None if it has no such version."""
    assert spec.metapackage is not None
    candidate, versions = parse_policy(apt_cache(["policy", spec.metapackage]))
    version = pick_version(spec, candidate, versions)
    if version is None:
        return None
    meta = parse_show(apt_cache(["show", f"{spec.metapackage}={version}"]))
    images = [(n, v) for n, v in depends(meta.get("Depends", "")) if n.startswith("linux-image-")]
    if not images:
        raise UserError(
            f"{where}: {spec.metapackage} {version} names no linux-image package (apt-cache show)"
        )
    name, pinned = images[0]
    image = Package(name, pinned or version)
    headers_name = "linux-headers-" + image.name.removeprefix("linux-image-").removesuffix("-unsigned")
    headers = parse_show(apt_cache(["show", f"{headers_name}={image.version}"]))
    if not headers:
        raise UserError(
            f"{where}: apt knows no {headers_name} {image.version} to build kernel modules with; run "
            "apt-get update and retry"
        )
    needed = [Package(headers_name, image.version)]
    for dep, dep_version in depends(headers.get("Depends", "")):
        if dep.startswith(("linux-headers-", "linux-kbuild-")):
            needed.append(Package(dep, dep_version or image.version))
    return Resolved(image, tuple(needed), backports)


def _run_apt(argv: list[str], where: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=APT_TIMEOUT_S, cwd=cwd, stdin=subprocess.DEVNULL
        )
    except FileNotFoundError:
        raise UserError(
            f"{where}: {argv[0]} is missing: named Debian kernels are fetched with apt; on another "
            'system give the path of a bzImage, e.g. kernel = "/boot/vmlinuz-..."'
        ) from None
    except subprocess.TimeoutExpired:
        raise UserError(
            f"{where}: {' '.join(argv[:2])} took over {APT_TIMEOUT_S:g}s; check the network"
        ) from None


def _host_apt_options() -> list[str]:
    # as root, apt would try to drop to _apt, who cannot write our cache
    return ["-o", "APT::Sandbox::User=root"] if os.geteuid() == 0 else []


class Apt:
    """apt-cache and apt-get download, on this machine's lists or on jitterlab's backports state."""

    def __init__(self, where: str, state: Path | None = None) -> None:
        self.where = where
        self.state = state  # None: this machine's apt configuration
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

    def cache(self, args: list[str]) -> str:
        done = _run_apt(["apt-cache", *self.options, *args], self.where)
        return done.stdout if done.returncode == 0 else ""

    def update_backports(self) -> None:
        """Read the backports suite of this Debian release into our own state (~1 MB)."""
        assert self.state is not None
        codename = _os_release().get("VERSION_CODENAME")
        if not codename:
            raise UserError(
                f"{self.where}: this system names no Debian release (VERSION_CODENAME in /etc/os-release)"
            )
        for sub in ("lists/partial", "cache/archives/partial"):
            (self.state / sub).mkdir(parents=True, exist_ok=True)
        (self.state / "sources.list").write_text(
            f"deb [signed-by={KEYRING}] {BACKPORTS_MIRROR} {codename}-backports main\n"
        )
        done = _run_apt(["apt-get", *self.options, "-qq", "update"], self.where)
        if done.returncode != 0:
            raise UserError(
                f"{self.where}: reading Debian backports ({codename}-backports) failed: "
                f"{last_line(done.stderr or done.stdout)}; check the network"
            )

    def download(self, packages: list[Package], into: Path) -> None:
        done = _run_apt(["apt-get", *self.options, "-qq", "download", *map(str, packages)], self.where, into)
        if done.returncode != 0:
            raise UserError(
                f"{self.where}: apt-get download {' '.join(map(str, packages))} failed: "
                f"{last_line(done.stderr or done.stdout)}; run apt-get update (as root) and check the "
                "network"
            )


def _os_release() -> dict[str, str]:
    try:
        text = Path("/etc/os-release").read_text()
    except OSError:
        return {}
    return {k: v.strip('"') for k, _, v in (line.partition("=") for line in text.splitlines()) if k}


def last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


def find_packages(spec: KernelSpec, where: str, cache: Path) -> tuple[Resolved, Apt]:
    """Resolve `spec` on this machine's apt lists, else (a version) on Debian backports.

    The answer is remembered for a day, or until apt's lists change: apt-cache takes about a
    second per question on a small machine, and a boot asks three."""
    memo = _Memo(cache / "kernels" / "resolved.json")
    key = f"{spec.metapackage} {spec.version or 'candidate'}"  # the same word differs per machine
    known = memo.get(key)
    if known is not None:
        apt = Apt(where, cache / "apt-backports") if known.backports else Apt(where)
        return known, apt
    found, apt = _find_packages(spec, where, cache)
    memo.put(key, found)
    return found, apt


class _Memo:
    MAX_AGE_S = 86400.0

    def __init__(self, path: Path) -> None:
        self.path = path

    @staticmethod
    def _stamp() -> list[int]:
        stamps = []
        for path in ("/var/lib/apt/lists", "/var/cache/apt/pkgcache.bin", "/etc/apt/sources.list.d"):
            with contextlib.suppress(OSError):
                stamps.append(os.stat(path).st_mtime_ns)
        return stamps

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str) -> Resolved | None:
        entry = self._load().get(key)
        try:
            if entry["stamp"] != self._stamp() or time.time() - entry["time"] > self.MAX_AGE_S:
                return None
            image = Package(*entry["image"])
            headers = tuple(Package(*h) for h in entry["headers"])
            return Resolved(image, headers, bool(entry["backports"]))
        except (TypeError, KeyError, ValueError):
            return None

    def put(self, key: str, found: Resolved) -> None:
        data = self._load()
        data[key] = {
            "stamp": self._stamp(),
            "time": time.time(),
            "image": [found.image.name, found.image.version],
            "headers": [[h.name, h.version] for h in found.headers],
            "backports": found.backports,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.part")
        partial.write_text(json.dumps(data, indent=1))
        os.replace(partial, self.path)


def _find_packages(spec: KernelSpec, where: str, cache: Path) -> tuple[Resolved, Apt]:
    host = Apt(where)
    found = resolve(spec, host.cache, where)
    if found is not None:
        return found, host
    if spec.version is None:
        raise UserError(
            f"{where}: apt knows no {spec.metapackage}; run apt-get update (as root), or check that "
            "this is Debian with its main archive in the apt sources"
        )
    backports = Apt(where, cache / "apt-backports")
    backports.update_backports()
    found = resolve(spec, backports.cache, where, backports=True)
    if found is None:
        _, known = parse_policy(host.cache(["policy", spec.metapackage]))
        _, known_bpo = parse_policy(backports.cache(["policy", spec.metapackage]))
        offered = ", ".join(dict.fromkeys(v.split("-")[0] for v in known + known_bpo)) or "none"
        raise UserError(
            f"{where}: no {spec.metapackage} {spec.version}.x in apt's lists or Debian backports; "
            f"versions offered: {offered}"
        )
    return found, backports
