"""Which Debian packages make a kernel, as apt sees them (no installing; fetching is apt_state.py's).

A kernel named "standard" or "rt" is the candidate of the machine profile's metapackage of that
flavour (linux-image-amd64 or linux-image-rt-amd64 for pc); a version like "6.12" is the newest
6.12.x of it. For a machine of this computer's architecture, apt is asked on this machine's lists,
then, for a version they lack, on Debian's backports suite read into a state of jitterlab's own in
the cache. For a machine of another architecture (an arm64 board on this x86 machine), on a state
of jitterlab's own for that architecture (<cache>/apt-arm64, release, updates, security and
backports). This machine's apt configuration is never changed. A kernel is its image package, its
headers and what the headers need to build modules (the -common tree and kbuild).
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.apt_state import Apt, Package, os_release
from jitterlab.targets.qemu.machines.profile import host_arch
from jitterlab.targets.qemu.options import KernelSpec


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


def find_packages(spec: KernelSpec, where: str, cache: Path, arch: str | None = None) -> tuple[Resolved, Apt]:
    """Resolve `spec` for a machine of Debian architecture `arch` (None: this machine's).

    The answer is remembered for a day, or until the apt lists it came from change: apt-cache
    takes about a second per question on a small machine, and a boot asks three."""
    arch = arch or host_arch()
    foreign = Apt(where, cache / f"apt-{arch}", arch) if arch != host_arch() else None
    if foreign is not None:
        foreign.refresh()
    memo = _Memo(cache / "kernels" / "resolved.json")
    # the same word names other packages per machine, and the same package per architecture
    key = f"{arch} {spec.metapackage} {spec.version or 'candidate'}"
    stamp = (foreign or Apt(where)).stamp()
    known = memo.get(key, stamp)
    if known is not None:
        if foreign is not None:
            return known, foreign
        return known, Apt(where, cache / "apt-backports") if known.backports else Apt(where)
    if foreign is not None:
        found, apt = _find_foreign(spec, foreign, where), foreign
    else:
        found, apt = _find_packages(spec, where, cache)
    memo.put(key, stamp, found)
    return found, apt


def find_host_package(package: Package, where: str, cache: Path, why: str) -> Apt:
    """The apt (this machine's lists, else its backports state) that has `package` of this
    machine's architecture; `why` it is needed, for the message when none has it."""
    host = Apt(where)
    if host.cache(["show", str(package)]):
        return host
    if "~bpo" in package.version:
        backports = Apt(where, cache / "apt-backports")
        backports.refresh()
        if backports.cache(["show", str(package)]):
            return backports
    raise UserError(
        f"{where}: this machine's apt lists have no {package.name} {package.version} for {host_arch()}, "
        f"which {why}; run apt-get update (as root) and retry"
    )


class _Memo:
    MAX_AGE_S = 86400.0

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def get(self, key: str, stamp: list[int]) -> Resolved | None:
        entry = self._load().get(key)
        try:
            if entry["stamp"] != stamp or time.time() - entry["time"] > self.MAX_AGE_S:
                return None
            image = Package(*entry["image"])
            headers = tuple(Package(*h) for h in entry["headers"])
            return Resolved(image, headers, bool(entry["backports"]))
        except (TypeError, KeyError, ValueError):
            return None

    def put(self, key: str, stamp: list[int], found: Resolved) -> None:
        data = self._load()
        data[key] = {
            "stamp": stamp,
            "time": time.time(),
            "image": [found.image.name, found.image.version],
            "headers": [[h.name, h.version] for h in found.headers],
            "backports": found.backports,
        }
        self.path.parent.mkdir(parents=True, exist_ok=True)
        partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.part")
        partial.write_text(json.dumps(data, indent=1))
        os.replace(partial, self.path)


def kernel_metapackages(apt: AptCache) -> list[str]:
    """The kernel flavours apt offers: linux-image-armmp, linux-image-rt-armmp, ... (no versions)."""
    names = apt(["pkgnames", "linux-image-"]).split()
    return sorted(n for n in set(names) if re.fullmatch(r"linux-image-[a-z][a-z0-9-]*", n)
                  and not re.search(r"\d\.\d|-(dbg|template|unsigned)$", n))


def _find_foreign(spec: KernelSpec, apt: Apt, where: str) -> Resolved:
    assert spec.metapackage is not None and apt.arch is not None
    found = resolve(spec, apt.cache, where)
    if found is not None:
        return Resolved(found.image, found.headers, backports="~bpo" in found.image.version)
    _, versions = parse_policy(apt.cache(["policy", spec.metapackage]))
    if not versions:
        offered = ", ".join(kernel_metapackages(apt.cache)) or "none"
        raise UserError(
            f'{where} = "{spec.text}": Debian has no {spec.metapackage} for {apt.arch}; its {apt.arch} '
            f"kernels are {offered}; name a kernel that Debian has"
        )
    codename = os_release().get("VERSION_CODENAME", "")
    raise UserError(
        f"{where}: no {spec.metapackage} {spec.version}.x in Debian {codename} or its backports for "
        f"{apt.arch}; versions offered: {', '.join(dict.fromkeys(v.split('-')[0] for v in versions))}"
    )


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
    backports.refresh()
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
