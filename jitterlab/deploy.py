"""Put the programs on a target and build them, once per content version.

The sources travel as one copy of a staged tree (one tar stream over SSH, not a round trip per
file). They are built on the target with its make and cc, or, when the target has a cross
compiler configured (`cc = "aarch64-linux-gnu-gcc"` in its [[target]]), built here as static
programs and sent ready to run. The directory is named by a hash of the sources (and of the
cross compiler), so an unchanged tree is neither rebuilt nor re-sent.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jitterlab.errors import UserError
from jitterlab.targets.base import Target

PROGRAMS_DIR = Path(__file__).parent / "programs"
_SOURCE_SUFFIXES = {".c", ".h", ".sh", ".py", ".js"}
# the marker's content: "native" or "cross <cc>" (tests read it)
_MARK = 'printf "%s\\n" "$1" > "$0"'


def _sources() -> list[Path]:
    return sorted(
        p
        for p in PROGRAMS_DIR.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.name != "__init__.py"
        and (p.suffix in _SOURCE_SUFFIXES or p.name in ("Makefile", "Kbuild"))
    )


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


# lists the executables of a directory, one name per line
_EXECUTABLES = 'for f in "$0"/*; do [ -f "$f" ] && [ -x "$f" ] && echo "${f##*/}"; done; exit 0'


def deploy(target: Target, timeout_s: float = 300.0) -> Deployment:
    """Copy the programs to `target` and build what can be built there (or here, for a cross
    compiler). A program whose build fails is left out, not fatal: the cells that need it are
    unavailable, naming the package; nothing built at all is fatal (a broken compiler)."""
    cc: str | None = getattr(target, "cross_cc", None)
    bindir = f"{target.workdir}/programs-{programs_hash(cc)}"
    marker = f"{bindir}/.built"
    if target.run(["test", "-e", marker]).ok:
        return Deployment(bindir, _built(target, bindir))
    if not target.run(["test", "-e", f"{bindir}/.copied"]).ok:
        with tempfile.TemporaryDirectory(prefix="jitterlab-programs-") as tmp:
            staging = Path(tmp) / "programs"
            for path in _sources():
                dest = staging / path.relative_to(PROGRAMS_DIR)
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
            if cc:
                _cross_build(target.name, staging / "c", cc, timeout_s)
            target.run(["rm", "-rf", bindir])  # what an interrupted earlier copy left
            target.put(staging, bindir)
        target.run(["touch", f"{bindir}/.copied"])
    error = ""
    if not cc:
        # -k: every program that can be built is; a failed one (a library the target lacks) is
        # retried by the next campaign, after the user installed what it needs
        built = target.run(["make", "-k", "-s", "-C", f"{bindir}/c"], timeout_s=timeout_s)
        error = "" if built.ok else _first_error(built.stderr, built.stdout)
        if not built.ok and not _built(target, bindir):
            raise UserError(
                f"target {target.name!r}: building the C programs failed: {error}"
                f" (make exited {built.rc}); check that gcc and make work there (apt install gcc make), "
                'or build here: cc = "<cross compiler>" in its [[target]]'
            )
        if not built.ok:
            return Deployment(bindir, _built(target, bindir), error)
    target.run(["sh", "-c", _MARK, marker, f"cross {cc}" if cc else "native"])
    return Deployment(bindir, _built(target, bindir))


def _built(target: Target, bindir: str) -> frozenset[str]:
    return frozenset(target.run(["sh", "-c", _EXECUTABLES, f"{bindir}/c"]).stdout.split())


def _cross_build(name: str, cdir: Path, cc: str, timeout_s: float) -> None:
    """Build static programs here with the target's cross compiler."""
    compiler = shlex.split(cc)[0]
    if shutil.which(compiler) is None:
        raise UserError(
            f"target {name!r}: cc = {cc!r}: {compiler} is not installed on this machine; install the "
            "cross compiler (e.g. apt install gcc-aarch64-linux-gnu) or remove cc to build on the target"
        )
    try:
        built = subprocess.run(
            ["make", "-s", "-C", str(cdir), f"CC={cc}", "LDFLAGS=-static"],
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError:
        raise UserError(f"target {name!r}: cross-compiling needs make here (apt install make)") from None
    if built.returncode != 0:
        raise UserError(
            f"target {name!r}: cross-compiling the C programs with cc = {cc!r} failed: "
            f"{_last(built.stderr, built.stdout)}; static programs need the target's libc for "
            "static linking here too (e.g. apt install libc6-dev-arm64-cross)"
        )
    for leftover in cdir.glob("*.o"):
        leftover.unlink()


def _last(*texts: str) -> str:
    for text in texts:
        lines = text.strip().splitlines()
        if lines:
            return lines[-1]
    return "(no output)"


def _first_error(*texts: str) -> str:
    """The compiler's first error line (the missing header, usually), else the last line."""
    for text in texts:
        for line in text.splitlines():
            if ": error:" in line or ": fatal error:" in line:
                return line.strip()
    return _last(*texts)
