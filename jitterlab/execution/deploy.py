"""Put the programs on a target and build them, once per content version.

What travels is what the plug-ins declared (programs.DIRS: a directory of jitterlab/programs, the
files of it that ship, whether make builds it), so a plug-in with programs of its own declares
them and nothing here changes. The sources travel as one copy of a staged tree (one tar stream
over SSH, not a round trip per file). The built directories are built on the target with its make
and cc, or, when the target is cross-built (`cc = "aarch64-linux-gnu-gcc"` in its [[target]]),
here as static programs sent ready to run (make -k, with the target's pkg-config: a program whose
library the target's architecture lacks here makes only its own cells unavailable). The directory
is named by a hash of the sources (and of the cross compiler), so an unchanged tree is neither
rebuilt nor re-sent. A complete native build is also kept on this machine (build_cache.py) and sent,
not rebuilt, to a target of the same build identity that has none (a guest or board whose file
system is fresh at every boot).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from jitterlab import programs
from jitterlab.execution import build_cache
from jitterlab.model.arch import of_triplet
from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.programs import DIRS, ProgramDir, check_cc
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.capabilities import CrossBuilt, command_timeout_s, has
from jitterlab.targets.processes import owner_tag

PROGRAMS_DIR = programs.SOURCES
# the marker's content: "native" or "cross <cc>" (tests read it), then "partial <first error>" when
# some programs did not build, or "reused <key> built on <target>" for a tree from the build cache
_MARK = 'printf "%s\\n" "$1" > "$0"'


def _dirs() -> list[ProgramDir]:
    return [DIRS[name] for name in sorted(DIRS)]


def _built_dirs() -> list[str]:
    return [d.name for d in _dirs() if d.built]


def _sources() -> list[Path]:
    """The files that travel: those of every declared directory its patterns name."""
    return sorted({p for d in _dirs() for pattern in d.ships for p in (PROGRAMS_DIR / d.name).glob(pattern)
                   if p.is_file() and "__pycache__" not in p.parts})


def programs_hash(cc: str | None = None) -> str:
    """Content hash of the program sources, and of the cross compiler when there is one."""
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(PROGRAMS_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    if cc:
        digest.update(b"cross-cc\0" + cc.encode())
    return digest.hexdigest()[:12]


@dataclass(frozen=True)
class Deployment:
    """The programs on a target: their directory, the C programs that built, and for those that
    did not, the build's last words (a missing library's header, usually)."""

    bindir: str
    built: frozenset[str]
    build_error: str = ""
    # cross-built here: the Debian architecture of the target ("arm64"; "" when the cc does not
    # tell), whose libraries this machine needs; None when built on the target
    cross_arch: str | None = None
    # how the programs came to be: "native", "cross <cc>", or "native; reused <key> built on
    # <target>" (a tree of the build cache, not made there); "" when its marker does not say
    build: str = ""


# lists the executables of the directories it is given, one name per line
_EXECUTABLES = r"""
for d; do for f in "$d"/*; do [ -f "$f" ] && [ -x "$f" ] && echo "${f##*/}"; done; done; exit 0
"""
# puts a finished build ($1) in its place ($2) with one rename; of two builds racing for the place,
# the first stays and the second is removed ("mv -T" where mv has it; else an mv that may move $1
# into an existing $2, whence it is removed too)
_INSTALL = r"""
mv -T -- "$1" "$2" 2>/dev/null && exit 0
[ -e "$2" ] || mv -- "$1" "$2" 2>/dev/null
rm -rf -- "$1" "$2/${1##*/}"
[ -e "$2/.built" ]
"""


def deploy(target: Target, timeout_s: float = 300.0) -> Deployment:
    """Copy the programs to `target` and build what can be built there (or here, for a cross
    compiler). A program whose build fails is left out, not fatal: the cells that need it are
    unavailable, naming the package; nothing built at all is fatal (a broken compiler).

    Every build happens in a directory of its own (`programs-<hash>.build-<owner>`) that is renamed
    into place when done, so two jitterlabs deploying at once never see each other's half-built
    tree. A complete build goes to `programs-<hash>`, used as it is from then on; an incomplete one
    (a library the target lacks) to `programs-<hash>.partial`, and the next campaign copies that and
    tries the missing programs again (after the user installed what they need)."""
    cross = has(target, CrossBuilt)
    cc = cross.cross_cc if cross is not None else None
    arch = cross_arch(cc) if cc else None
    timeout_s = command_timeout_s(target, timeout_s)
    try:
        done = _deploy(target, cc, timeout_s)
    except CommandTimeout as exc:
        raise TargetLost(f"target {target.name!r}: putting the programs there timed out ({exc}); "
                         "if the board is only slow, raise alive_timeout in its [[target]]") from None
    return dataclasses.replace(done, cross_arch=arch)


def _deploy(target: Target, cc: str | None, timeout_s: float) -> Deployment:
    bindir = f"{target.workdir}/programs-{programs_hash(cc)}"
    marker = target.run(["cat", "--", f"{bindir}/.built"], timeout_s=timeout_s)
    if marker.ok:
        return Deployment(bindir, _built(target, bindir), build=_how(marker.stdout))
    partial = f"{bindir}.partial"
    before = _partial(target, partial)
    work = f"{bindir}.build-{owner_tag()}"
    # what an interrupted build of this process left
    target.run(["rm", "-rf", "--", work], timeout_s=timeout_s)
    entry = None if cc else build_cache.entry_for(target, programs_hash(), timeout_s)
    if entry is not None:
        reused = _reuse(target, entry, work, bindir, timeout_s)
        if reused is not None:
            return reused
    with _removed_on_error(target, work):
        if before is not None and not cc:
            # make tries only what did not build
            target.run(["cp", "-a", "--", partial, work], timeout_s=timeout_s)
            error = _make(target, work, timeout_s)
        else:  # a cross build is redone here whole: cheap, and the host's libraries may have changed
            error = _stage(target, work, cc, timeout_s)
            if not cc:
                error = _make(target, work, timeout_s)
        mark = f"cross {cc}" if cc else "native"
        target.run(["sh", "-c", _MARK, f"{work}/.built", mark + (f"\npartial {error}" if error else "")],
                   timeout_s=timeout_s)
        built = _built(target, work)
        if error and before is not None and built <= before.built:
            # nothing more than last time: that one serves
            target.run(["rm", "-rf", "--", work], timeout_s=timeout_s)
            return before
        if error and before is not None:
            # more than last time: ours (swept when we are gone)
            return Deployment(work, built, error, build=mark)
        _put_in_place(target, work, partial if error else bindir, timeout_s)
    where = partial if error else bindir
    if entry is not None and not error:
        build_cache.keep(entry, target, bindir, timeout_s)
    # of two builds racing, the other's may be the one in place: its marker tells how it came to be
    marker = target.run(["cat", "--", f"{where}/.built"], timeout_s=timeout_s)
    return Deployment(where, _built(target, where), error, build=_how(marker.stdout) or mark)



@contextlib.contextmanager
def _removed_on_error(target: Target, work: str) -> Iterator[None]:
    """A build directory removed from the target when what is done in it fails (Ctrl-C too)."""
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            target.run(["rm", "-rf", "--", work])
        raise


def _put_in_place(target: Target, work: str, place: str, timeout_s: float) -> None:
    """The finished build `work` renamed to `place` (_INSTALL); RunFailed when it cannot be."""
    done = target.run(["sh", "-c", _INSTALL, "sh", work, place], timeout_s=timeout_s)
    if not done.ok:
        raise RunFailed(f"target {target.name!r}: could not put the built programs in place "
                        f"({_last(done.stderr)}); check {target.workdir}")

def _reuse(target: Target, entry: build_cache.Entry, work: str, bindir: str,
           timeout_s: float) -> Deployment | None:
    """The cached build of `entry` sent to the target and put in place as `bindir`; None when there
    is none (or it did not arrive whole), and the target builds as before."""
    with build_cache.cached_tree(entry) as cached:
        if cached is None:
            return None
        tree, origin = cached
        expected = frozenset(p.name for name in _built_dirs() if (tree / name).is_dir()
                             for p in (tree / name).iterdir() if p.is_file() and os.access(p, os.X_OK))
        how = f"native; reused {entry.key} built on {origin}"
        with _removed_on_error(target, work):
            target.put(tree, work)
            target.run(["sh", "-c", _MARK, f"{work}/.built", how.replace("; ", "\n")], timeout_s=timeout_s)
            if _built(target, work) != expected or not expected:
                target.run(["rm", "-rf", "--", work], timeout_s=timeout_s)
                return None
            _put_in_place(target, work, bindir, timeout_s)
    marker = target.run(["cat", "--", f"{bindir}/.built"], timeout_s=timeout_s)
    return Deployment(bindir, _built(target, bindir), build=_how(marker.stdout))


def _how(marker: str) -> str:
    """How a build came to be, from its marker: its lines but the partial one, joined."""
    return "; ".join(line for line in marker.splitlines() if line and not line.startswith("partial "))


def _partial(target: Target, partial: str) -> Deployment | None:
    """An incomplete build of the same sources, with the error that kept the rest from building."""
    marker = target.run(["cat", f"{partial}/.built"])
    if not marker.ok:
        return None
    error = next((line.removeprefix("partial ") for line in marker.stdout.splitlines()
                  if line.startswith("partial ")), "")
    return Deployment(partial, _built(target, partial), error, build=_how(marker.stdout))


def _stage(target: Target, work: str, cc: str | None, timeout_s: float) -> str:
    """Copy the sources to `work` on the target (cross-built here first when there is a cc); the
    first error of a cross build some programs of which did not build, else ""."""
    error = ""
    with tempfile.TemporaryDirectory(prefix="jitterlab-programs-") as tmp:
        staging = Path(tmp) / "programs"
        for path in _sources():
            dest = staging / path.relative_to(PROGRAMS_DIR)
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, dest)
        if cc:
            for name in _built_dirs():
                error = _cross_build(target.name, staging / name, cc, timeout_s) or error
        target.put(staging, work)
    return error


def _make(target: Target, work: str, timeout_s: float) -> str:
    """Build on the target; "" when everything built, else the first error (a missing header)."""
    # -k: every program that can be built is; a failed one (a library the target lacks) is
    # retried by the next campaign, after the user installed what it needs
    failed = [done for done in (target.run(["make", "-k", "-s", "-C", f"{work}/{name}"], timeout_s=timeout_s)
                                for name in _built_dirs()) if not done.ok]
    if not failed:
        return ""
    error = _first_error(failed[0].stderr, failed[0].stdout)
    if not _built(target, work):
        raise UserError(
            f"target {target.name!r}: building the C programs failed: {error}"
            f" (make exited {failed[0].rc}); check that gcc and make work there (apt install gcc make), "
            'or build here: cc = "<cross compiler>" in its [[target]]'
        )
    return error


def _built(target: Target, bindir: str) -> frozenset[str]:
    dirs = [f"{bindir}/{name}" for name in _built_dirs()]
    return frozenset(target.run(["sh", "-c", _EXECUTABLES, "sh", *dirs]).stdout.split())


def _triplet(cc: str) -> str | None:
    """"aarch64-linux-gnu" of "aarch64-linux-gnu-gcc-12 -O2"; None for a compiler named otherwise."""
    m = re.fullmatch(r"(.+)-(?:gcc|cc|clang)(?:-[\d.]+)?", Path(cc.split()[0]).name) if cc.split() else None
    return m.group(1) if m else None


def cross_arch(cc: str) -> str:
    """The Debian architecture whose libraries a cross build with `cc` links ("" when unknown)."""
    arch = of_triplet(_triplet(cc))
    return arch.name if arch is not None else ""


def _pkg_config(cc: str) -> tuple[list[str], dict[str, str]]:
    """make's arguments and environment so that pkg-config answers for the target, not this machine:
    a --sysroot in cc is searched, else the triplet's pkg-config, else Debian's multiarch dirs."""
    triplet = _triplet(cc)
    sysroot = next((w.removeprefix("--sysroot=") for w in cc.split() if w.startswith("--sysroot=")), None)
    if triplet is None and sysroot is None:
        return [], {}
    env = {"PKG_CONFIG_PATH": ""}  # the host's own additions say nothing of the target
    if sysroot is None and triplet and shutil.which(f"{triplet}-pkg-config"):
        return [f"PKG_CONFIG={triplet}-pkg-config"], env
    root = sysroot or ""
    dirs = ([f"{root}/usr/lib/{triplet}/pkgconfig"] if triplet else []) + [
        f"{root}/usr/lib/pkgconfig", f"{root}/usr/share/pkgconfig"]
    env["PKG_CONFIG_LIBDIR"] = ":".join(dirs)
    if sysroot:
        env["PKG_CONFIG_SYSROOT_DIR"] = sysroot
    return ["PKG_CONFIG=pkg-config"], env


def _cross_build(name: str, cdir: Path, cc: str, timeout_s: float) -> str:
    """Build static programs here with the target's cross compiler; "" when all built, else the
    first error (make -k: what can be built is, and only the cells of the rest are unavailable)."""
    # make runs its recipes with /bin/sh: the compiler reaches it as words that cannot be a command
    compiler = check_cc(cc, f"target {name!r}: cc").split()[0]
    if shutil.which(compiler) is None:
        triplet = _triplet(cc)
        package = f"apt install gcc-{triplet}" if triplet else "e.g. apt install gcc-aarch64-linux-gnu"
        raise UserError(
            f"target {name!r}: cc = {cc!r}: {compiler} is not installed on this machine; install the "
            f"cross compiler ({package}) or remove cc to build on the target"
        )
    make_args, env = _pkg_config(cc)
    try:
        built = subprocess.run(
            ["make", "-k", "-s", "-C", str(cdir), f"CC={cc}", "LDFLAGS=-static", *make_args],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **env},
        )
    except FileNotFoundError:
        raise UserError(f"target {name!r}: cross-compiling needs make here (apt install make)") from None
    except subprocess.TimeoutExpired:
        raise UserError(f"target {name!r}: cross-compiling the C programs with cc = {cc!r} took longer "
                        f"than {timeout_s:g} s; check the compiler here") from None
    for leftover in cdir.glob("*.o"):
        leftover.unlink()
    if built.returncode == 0:
        return ""
    error = f"{_first_error(built.stderr, built.stdout)} (cross-built here with {cc})"
    if not any(p.is_file() and os.access(p, os.X_OK) for p in cdir.iterdir()):
        arch = cross_arch(cc)
        raise UserError(
            f"target {name!r}: cross-compiling the C programs failed: {error}; static programs need the "
            f"target's libc here (apt install libc6-dev-{arch or '<arch>'}-cross), or a --sysroot in cc"
        )
    return error


def _last(*texts: str) -> str:
    for text in texts:
        lines = text.strip().splitlines()
        if lines:
            return lines[-1]
    return "(no output)"


def _first_error(*texts: str) -> str:
    """The first missing library (the linker's `cannot find -lgpiod`), else the compiler's first
    error line (a missing header), else the last line."""
    for text in texts:
        for line in text.splitlines():
            if "cannot find -l" in line:
                return line.strip()
    for text in texts:
        for line in text.splitlines():
            if ": error:" in line or ": fatal error:" in line:
                return line.strip()
    return _last(*texts)
