"""Native builds kept on this machine, so a target that builds its programs itself and whose file
system is fresh at every boot (a farm board flashed or netbooted per job, a LAVA job's system) gets
them without running make. A CrossBuilt target (a qemu guest: its profile's cc, here) is not served.

A complete native build (deploy.py) is fetched once into <cache>/builds/<key>.tar, keyed by the
programs' hash and the target's build identity: what decides whether a binary built there runs and
means the same on another target (machine, the compiler's triplet and version, the C library, the
distribution and its version, and the version of every library the programs link). A target with
the same identity and no build of its own is sent that tree instead. The identity is read with one
constant command, only when the target has no build of these sources yet; a target where part of
it cannot be read (no pkg-config, no libgpiod) is built as before, and nothing of it is kept.

An entry is a tar of the tree followed, last, by `origin.json`: the identity it was built for, the
target that built it and the sha256 of every file. A truncated or altered entry fails that check, is
removed and built again. JITTERLAB_BUILD_CACHE=off turns all of this off; a directory as its value
keeps the builds there instead of <cache>/builds.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tarfile
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab.cache import locked, user_cache
from jitterlab.targets.base import Target, extract_all
from jitterlab.targets.processes import owner_tag

ENV = "JITTERLAB_BUILD_CACHE"
_OFF = ("off", "0", "no", "false")
FORMAT = 1
# what the identity must hold; os_version_id may be empty (a rolling release has none)
FIELDS = ("machine", "cc_machine", "cc_version", "libc", "os_id", "os_version_id", "libgpiod")

# A constant: prints key=value for every field it could read (the first line of what the command
# said); a field missing from the output means a command is missing or failed there.
IDENTITY_SCRIPT = r"""
nl='
'
out() { [ -n "$2" ] || [ "$1" = os_version_id ] && printf '%s=%s\n' "$1" "${2%%"$nl"*}"; }
o=$(uname -m 2>/dev/null) && out machine "$o"
o=$(cc -dumpmachine 2>/dev/null) && out cc_machine "$o"
{ o=$(cc -dumpfullversion 2>/dev/null) || o=$(cc --version 2>/dev/null); } && out cc_version "$o"
if o=$(getconf GNU_LIBC_VERSION 2>/dev/null); then out libc "$o"
else
  o=$(ldd --version 2>&1)
  case $o in *musl*) out libc "musl $(printf '%s\n' "$o" | sed -n 's/^Version //p')" ;; esac
fi
if [ -r /etc/os-release ]; then
  o=$(. /etc/os-release && printf '%s' "${ID-}") && out os_id "$o"
  o=$(. /etc/os-release && printf '%s' "${VERSION_ID-}") && out os_version_id "$o"
fi
o=$(pkg-config --modversion libgpiod 2>/dev/null) && out libgpiod "$o"
exit 0
"""


@dataclass(frozen=True)
class Entry:
    """Where the build of these sources for this identity is kept here."""

    path: Path  # <dir>/<key>.tar
    key: str
    programs_hash: str
    identity: Mapping[str, str]

    @property
    def lock(self) -> Path:
        return self.path.with_name(self.path.name + ".lock")


def cache_dir() -> Path | None:
    """Where builds are kept; None when JITTERLAB_BUILD_CACHE turns the cache off."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() in _OFF:
        return None
    return Path(value) if value else user_cache() / "builds"


def parse_identity(text: str) -> dict[str, str] | None:
    """The identity the script printed; None when a field is missing (it cannot be read there)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key in FIELDS and key not in found:
            found[key] = value.strip()
    if set(found) != set(FIELDS) or any(not found[k] for k in FIELDS if k != "os_version_id"):
        return None
    return found


def entry_for(target: Target, programs_hash: str, timeout_s: float) -> Entry | None:
    """The cache entry the target's build would have; None when the cache is off or the target's
    identity cannot be read fully (it is then built as it always was)."""
    root = cache_dir()
    if root is None:
        return None
    done = target.run(["sh", "-c", IDENTITY_SCRIPT], timeout_s=timeout_s)
    identity = parse_identity(done.stdout) if done.ok else None
    if identity is None:
        return None
    text = "".join(f"{k}={identity[k]}\n" for k in FIELDS)
    key = f"{programs_hash}-{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    return Entry(root / f"{key}.tar", key, programs_hash, identity)


def _digests(tree: Path) -> dict[str, str]:
    return {str(p.relative_to(tree)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(tree.rglob("*")) if p.is_file() and not p.is_symlink()}


def _origin(entry: Entry, tmp: Path) -> dict | None:
    """The entry unpacked into tmp/tree when it is whole and was built for this identity, with what
    its origin.json says; None otherwise (no entry, truncated, altered, another identity)."""
    try:
        with tarfile.open(entry.path) as tar:
            names = tar.getnames()
            if not names or names[-1] != "origin.json":  # written last: a truncated tar lacks it
                return None
            extract_all(tar, tmp)
        origin = json.loads((tmp / "origin.json").read_text())
    except (OSError, tarfile.TarError, ValueError, UnicodeDecodeError):
        return None
    if not isinstance(origin, dict) or origin.get("format") != FORMAT:
        return None
    tree = tmp / "tree"
    if (origin.get("programs_hash") != entry.programs_hash or origin.get("identity") != dict(entry.identity)
            or not tree.is_dir() or _digests(tree) != origin.get("sha256")):
        return None
    return origin


@contextlib.contextmanager
def cached_tree(entry: Entry) -> Iterator[tuple[Path, str] | None]:
    """The cached tree of `entry` (a directory here, gone afterwards) and the target that built it;
    None when there is none. A damaged entry is removed, to be replaced by the next build."""
    with tempfile.TemporaryDirectory(prefix="jitterlab-build-") as tmp:
        with locked(entry.lock):
            origin = _origin(entry, Path(tmp)) if entry.path.exists() else None
            if origin is None:
                with contextlib.suppress(FileNotFoundError):
                    entry.path.unlink()
        yield (Path(tmp) / "tree", str(origin.get("target", "?"))) if origin is not None else None


def keep(entry: Entry, target: Target, bindir: str, timeout_s: float) -> bool:
    """Fetch the complete build in `bindir` on the target into the cache (one tar stream), unless a
    good entry is there already; False when it could not be kept (the build is not affected)."""
    try:
        with locked(entry.lock), tempfile.TemporaryDirectory(prefix="jitterlab-build-",
                                                             dir=_made(entry.path.parent)) as tmp:
            return _keep(entry, target, bindir, timeout_s, Path(tmp))
    except OSError:  # this machine's disk (full, read-only): the build on the target is unaffected
        return False


def _keep(entry: Entry, target: Target, bindir: str, timeout_s: float, tmp: Path) -> bool:
    if entry.path.exists() and _origin(entry, tmp / "check") is not None:
        return True  # a racing jitterlab kept it first
    remote = f"{bindir}.cache-{owner_tag()}.tar"
    try:
        if not target.run(["tar", "-cf", remote, "-C", bindir, "."], timeout_s=timeout_s).ok:
            return False
        target.get(remote, tmp / "fetched.tar")
    finally:
        target.run(["rm", "-f", "--", remote], timeout_s=timeout_s)
    tree = tmp / "tree"
    try:
        with tarfile.open(tmp / "fetched.tar") as tar:
            extract_all(tar, tree)
    except tarfile.TarError:
        return False
    origin = {"format": FORMAT, "programs_hash": entry.programs_hash, "identity": dict(entry.identity),
              "target": target.name, "sha256": _digests(tree)}
    (tmp / "origin.json").write_text(json.dumps(origin, sort_keys=True, indent=1))
    part = tmp / "entry.tar"
    with tarfile.open(part, "w") as tar:
        tar.add(tree, "tree")
        tar.add(tmp / "origin.json", "origin.json")  # last: a truncated entry lacks it
    with open(part, "rb") as f:
        os.fsync(f.fileno())
    os.replace(part, entry.path)
    return True


def _made(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    return path
