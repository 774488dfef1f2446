"""Which Debian packages make a kernel, by apt's own rules (no installing; fetching is kernels.py's).

A kernel named "standard" or "rt" is the machine profile's metapackage of that flavour
(linux-image-amd64, linux-image-rt-arm64, ...) at the newest version outside backports, as apt's
candidate is; a version like "6.12" is the newest 6.12.x, backports included. Everything is read
on jitterlab's own apt state for the machine's architecture (apt_state.py), one reading of the
archive for every package of the set.

A kernel is a set: the image the metapackage depends on, its headers of the same version, what
the headers depend on to build modules (the -common tree, linux-kbuild), and for a machine of
another architecture than this one, this machine's linux-kbuild of the same upstream version (its
programs run here). Each dependency is resolved as apt does: the newest version that satisfies
its relation (=, >=, <=, <<, >>), so a kbuild rebuilt as -3 serves headers that ask for >= -2.
A set is complete when every package of it is in the lists; when the newest version has no
complete set (a suite mid-sync, a package removed), the next one that has is taken and the reason
is kept with the kernel (`Resolved.note`): asked for, got, why.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from debian.debian_support import Version, version_compare

from jitterlab.model.arch import host_arch
from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.apt_state import Apt, Package, locked, os_release
from jitterlab.targets.qemu.options import KernelSpec

MAX_SETS = 8  # per metapackage version: Debian's kernels have one or two kbuilds to choose from
_OPS: dict[str, Callable[[int], bool]] = {
    "=": lambda c: c == 0, ">=": lambda c: c >= 0, "<=": lambda c: c <= 0,
    ">>": lambda c: c > 0, "<<": lambda c: c < 0, ">": lambda c: c >= 0, "<": lambda c: c <= 0,
}  # fmt: skip  ("<" and ">" are dpkg's old spellings of <= and >=)


def satisfies(version: str, relation: tuple[str, str] | None) -> bool:
    """Whether `version` meets a Depends relation like (">=", "6.1.192-2"); None: any version."""
    if relation is None:
        return True
    op, wanted = relation
    return _OPS[op](version_compare(version, wanted))  # dpkg's ordering


def upstream(version: str) -> str:
    """6.1.192-3 -> 6.1.192 (the kernel's own version, without Debian's revision or epoch)."""
    return Version(version).upstream_version or version


@dataclass(frozen=True)
class Resolved:
    """The packages of one kernel: the image, then its headers and what they need."""

    image: Package
    headers: tuple[Package, ...]
    host_kbuild: Package | None = None  # this machine's linux-kbuild, for a kernel of another arch
    asked: str = ""  # what the campaign asked for: "linux-image-arm64 (candidate)"
    note: str = ""  # why this is not the newest version asked for, when it is not

    @property
    def release(self) -> str:
        """`uname -r` of the kernel: linux-image-6.1.0-56-rt-amd64 -> 6.1.0-56-rt-amd64."""
        return self.image.name.removeprefix("linux-image-").removesuffix("-unsigned")

    @property
    def key(self) -> str:
        return re.sub(r"[^A-Za-z0-9.+_-]", "_", f"{self.image.name}_{self.image.version}")

    @property
    def backports(self) -> bool:
        return "~bpo" in self.image.version

    @property
    def packages(self) -> tuple[Package, ...]:
        """Everything fetched for this kernel."""
        return (self.image, *self.headers, *((self.host_kbuild,) if self.host_kbuild else ()))

    @property
    def description(self) -> str:
        """For messages and records: "linux-image-6.1.0-56-arm64 6.1.192-2"."""
        return f"{self.image.name} {self.image.version}"


class _Incomplete(Exception):
    """One package of a set is not in the lists; the message says which."""


class Lists:
    """What the state's lists hold, asked of apt-cache in batches and remembered."""

    def __init__(self, apt: Apt) -> None:
        self.apt = apt
        self._known: dict[str, list[tuple[str, str, list]]] = {}

    def ask(self, names: list[str]) -> None:
        new = [n for n in dict.fromkeys(names) if n not in self._known]
        if not new:
            return
        for name in new:
            self._known[name] = []
        for stanza in self.apt.show(new):
            entry = (stanza["Version"], stanza.get("Architecture", ""), stanza.relations["depends"])
            known = self._known.setdefault(stanza["Package"], [])
            if entry not in known:
                known.append(entry)

    def versions(self, name: str, arch: str | None = None) -> list[tuple[str, list]]:
        """(version, Depends relations) of `name` for `arch` (None: the state's own, or "all"),
        newest first."""
        # apt-cache names a package of a foreign architecture with it: linux-kbuild-6.1:amd64
        asked = f"{name}:{arch}" if arch and arch != self.apt.arch else name
        self.ask([asked])
        archs = (arch,) if arch else (self.apt.arch, "all")
        found = {v: deps for v, a, deps in self._known.get(name, []) if a in archs}
        return sorted(found.items(), key=lambda item: Version(item[0]), reverse=True)

    def every(self, name: str, relation: tuple[str, str] | None) -> list[Package]:
        """Each `name` that satisfies `relation`, newest (apt's pick) first; _Incomplete if none."""
        found = [Package(name, v) for v, _ in self.versions(name) if satisfies(v, relation)]
        if not found:
            rel = f" ({relation[0]} {relation[1]})" if relation else ""
            held = ", ".join(v for v, _ in self.versions(name)) or "none"
            raise _Incomplete(f"no {name}{rel} (the lists hold: {held})")
        return found

    def best(self, name: str, relation: tuple[str, str] | None) -> Package:
        """The newest `name` that satisfies `relation`, as apt would pick it."""
        return self.every(name, relation)[0]


def _first(relations: list, prefix: str) -> list[tuple[str, tuple[str, str] | None]]:
    """(name, relation) of each Depends clause whose first alternative starts with `prefix`."""
    out = []
    for clause in relations:
        first = clause[0]
        if first["name"].startswith(prefix):
            out.append((first["name"], first["version"]))
    return out


def candidates(spec: KernelSpec, lists: Lists) -> list[tuple[str, list]]:
    """Versions of the metapackage the spec may take, in the order apt would prefer them: for a
    flavour, the release's versions (backports are never apt's candidate); for "6.12", every
    6.12.x, backports included."""
    assert spec.metapackage is not None
    versions = lists.versions(spec.metapackage)
    if spec.version is None:
        return [(v, d) for v, d in versions if "~bpo" not in v]
    return [(v, d) for v, d in versions if upstream(v).startswith(spec.version + ".")]


def kernel_sets(meta_depends: list, lists: Lists, host: str | None) -> list[Resolved]:
    """The complete sets of the kernel a metapackage version depends on, apt's choice first: each
    dependency at the newest version that meets its relation, then the older ones that meet it too
    (a kbuild the pool or this machine's architecture lacks has a predecessor that serves).
    _Incomplete, naming the first thing missing, when there is none. `host`: this machine's
    architecture when it is not the kernel's."""
    images = _first(meta_depends, "linux-image-")
    if not images:
        raise _Incomplete("it depends on no linux-image package")
    lists.ask([images[0][0]])
    image = lists.best(*images[0])
    flavour = image.name.removeprefix("linux-image-").removesuffix("-unsigned")
    headers_name = f"linux-headers-{flavour}"
    lists.ask([headers_name])
    headers = lists.best(headers_name, ("=", image.version))
    [header_deps] = [d for v, d in lists.versions(headers_name) if v == headers.version]
    needs = _first(header_deps, "linux-headers-") + _first(header_deps, "linux-kbuild-")
    lists.ask([name for name, _ in needs])
    choices = [lists.every(name, relation) for name, relation in needs]
    sets: list[Resolved] = []
    why = ""
    for chosen in itertools.islice(itertools.product(*choices), MAX_SETS):
        packages = (headers, *chosen)
        kbuild = next((p for p in chosen if p.name.startswith("linux-kbuild-")), None)
        host_kbuild = None
        if host is not None and kbuild is not None:
            try:
                host_kbuild = _host_kbuild(kbuild, dict(needs)[kbuild.name], lists, host)
            except _Incomplete as e:
                why = why or str(e)
                continue
        sets.append(Resolved(image, packages, host_kbuild))
    if not sets:
        raise _Incomplete(why)
    return sets


def _host_kbuild(kbuild: Package, relation: tuple[str, str] | None, lists: Lists, host: str) -> Package:
    """This machine's linux-kbuild for a kernel of another architecture: the same version as the
    kernel's, else the newest of its upstream version that meets the headers' relation (its
    programs must be those of that kernel version)."""
    versions = [v for v, _ in lists.versions(kbuild.name, host)]
    if kbuild.version in versions:
        return Package(kbuild.name, kbuild.version, host)
    same = [v for v in versions if upstream(v) == upstream(kbuild.version) and satisfies(v, relation)]
    if not same:
        held = ", ".join(versions) or "none"
        raise _Incomplete(f"no {kbuild.name} {upstream(kbuild.version)} for {host} (this machine), which "
                          f"builds the kernel's modules here (the lists hold: {held})")
    return Package(kbuild.name, same[0], host)


def resolve(spec: KernelSpec, apt: Apt, where: str) -> list[Resolved]:
    """The complete kernel sets `spec` may take, the one apt would pick first; UserError when
    there is none, naming what each version lacks."""
    assert spec.metapackage is not None
    lists = Lists(apt)
    versions = candidates(spec, lists)
    if not versions:
        raise _no_such_kernel(spec, lists, where)
    asked = f"{spec.metapackage} {spec.version + '.x' if spec.version else '(candidate)'}"
    host = apt.host if apt.host != apt.arch else None
    complete: list[Resolved] = []
    lacking: list[str] = []
    for version, depends in versions:
        try:
            found = kernel_sets(depends, lists, host)
        except _Incomplete as why:
            lacking.append(f"{version}: {why}")
            continue
        note = ""
        if not complete and lacking:
            note = (f"{spec.metapackage} {versions[0][0]} has no complete set of packages "
                    f"({'; '.join(lacking)}); took {version}")
        complete += [replace(one, asked=asked, note=note) for one in found]
    if not complete:
        raise UserError(f"{where}: no version of {spec.metapackage} has all its packages in Debian's "
                        f"lists ({'; '.join(lacking)}); retry when the mirror has synced, or name "
                        "another kernel")
    return complete


def _no_such_kernel(spec: KernelSpec, lists: Lists, where: str) -> UserError:
    assert spec.metapackage is not None
    arch = lists.apt.arch
    every = lists.versions(spec.metapackage)
    if not every:
        offered = ", ".join(kernel_metapackages(lists.apt)) or "none"
        return UserError(
            f'{where} = "{spec.text}": Debian has no {spec.metapackage} for {arch}; its {arch} '
            f"kernels are {offered}; name a kernel that Debian has"
        )
    codename = os_release().get("VERSION_CODENAME", "")
    offered = ", ".join(dict.fromkeys(upstream(v) for v, _ in every))
    if spec.version is None:
        return UserError(f"{where}: {spec.metapackage} is only in Debian {codename}'s backports "
                         f"({offered}); name its version, e.g. \"{'.'.join(offered.split('.')[:2])}\"")
    return UserError(
        f"{where}: no {spec.metapackage} {spec.version}.x in Debian {codename} or its backports for "
        f"{arch}; versions offered: {offered}"
    )


def kernel_metapackages(apt: Apt) -> list[str]:
    """The kernel flavours apt offers: linux-image-armmp, linux-image-rt-armmp, ... (no versions)."""
    names = apt.pkgnames("linux-image-")
    return sorted(n for n in set(names) if re.fullmatch(r"linux-image-[a-z][a-z0-9-]*", n)
                  and not re.search(r"\d\.\d|-(dbg|template|unsigned)$", n))


# --- remembered ----------------------------------------------------------------------------------


def find_kernels(spec: KernelSpec, where: str, cache: Path, arch: str | None = None, *,
                 reread: bool = False) -> tuple[list[Resolved], Apt]:
    """The complete sets of the kernel `spec` names for a machine of Debian architecture `arch`
    (None: this machine's), the first the one to take, and the apt state they come from;
    `reread`: Debian's lists are read again first (the pool lacked what they name).

    Remembered for a day, or until the lists are read again: apt-cache takes about a second per
    question on a small machine."""
    host = host_arch()
    arch = arch or host
    apt = Apt(where, cache / f"apt-{arch}", arch, host)
    apt.refresh(force=reread)
    memo = _Memo(cache / "kernels" / "resolved.json")
    key = f"{arch} {spec.metapackage} {spec.version or 'candidate'}"
    stamp = apt.stamp()
    known = None if reread else memo.get(key, stamp)
    if known is None:
        known = resolve(spec, apt, where)
        memo.put(key, stamp, known)
    return known, apt


class _Memo:
    MAX_AGE_S = 86400.0
    VERSION = 2
    _threads = threading.Lock()  # one writer per process; the file lock keeps processes apart

    def __init__(self, path: Path) -> None:
        self.path = path

    def _load(self) -> dict:
        try:
            data = json.loads(self.path.read_text())
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) and data.get("version") == self.VERSION else {}

    def get(self, key: str, stamp: list[int]) -> list[Resolved] | None:
        entry = self._load().get(key)
        try:
            if entry["stamp"] != stamp or time.time() - entry["time"] > self.MAX_AGE_S:
                return None
            return [_from_json(s) for s in entry["sets"]] or None
        except (TypeError, KeyError, ValueError):
            return None

    def put(self, key: str, stamp: list[int], sets: list[Resolved]) -> None:
        with self._threads, locked(self.path.with_name(self.path.name + ".lock")):
            data = self._load() or {"version": self.VERSION}
            data[key] = {"stamp": stamp, "time": time.time(), "sets": [_to_json(s) for s in sets]}
            partial = self.path.with_name(f"{self.path.name}.{os.getpid()}.part")
            partial.write_text(json.dumps(data, indent=1))
            os.replace(partial, self.path)


def _to_json(found: Resolved) -> dict:
    def pkg(p: Package | None) -> list | None:
        return None if p is None else [p.name, p.version, p.arch]

    return {"image": pkg(found.image), "headers": [pkg(h) for h in found.headers],
            "host_kbuild": pkg(found.host_kbuild), "asked": found.asked, "note": found.note}


def _from_json(data: dict) -> Resolved:
    def pkg(p: list | None) -> Package | None:
        return None if p is None else Package(*p)

    image = pkg(data["image"])
    assert image is not None
    headers = tuple(Package(*h) for h in data["headers"])
    return Resolved(image, headers, pkg(data["host_kbuild"]), str(data["asked"]), str(data["note"]))

